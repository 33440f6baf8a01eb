import pytest

from distill_assets.lib.llm import ChatClient, ChatEndpoint, LlmError, chat_client
from tests.fixtures.llm_server import chat_server, reply


def test_complete_sends_the_openai_request_and_returns_the_content() -> None:
    with chat_server(lambda body: reply("hello")) as server:
        client = ChatClient(ChatEndpoint(server.base_url, "tiny", api_key="k-123"))
        text = client.complete([{"role": "user", "content": "hi"}], temperature=0.3, max_tokens=150)
    assert text == "hello"
    [request] = server.requests
    assert request["_path"] == "/v1/chat/completions"
    assert request["_authorization"] == "Bearer k-123"
    assert request["model"] == "tiny"
    assert request["temperature"] == 0.3
    assert request["max_tokens"] == 150
    assert request["messages"] == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ((500, {"error": "boom"}), "http_500"),
        ((429, {"error": "slow down"}), "http_429"),
        ((200, "not json"), "bad_response"),
        ((200, {"choices": []}), "bad_response"),
        (reply("   "), "empty_response"),
    ],
)
def test_failures_raise_llm_error_with_a_reason(answer, reason) -> None:
    with chat_server(lambda body: answer) as server:
        client = ChatClient(ChatEndpoint(server.base_url, "tiny"))
        with pytest.raises(LlmError) as caught:
            client.complete([{"role": "user", "content": "x"}], temperature=0, max_tokens=5)
    assert caught.value.reason == reason


def test_refused_connection_and_timeout_are_reasons_too() -> None:
    with chat_server(lambda body: reply("x")) as server:
        url = server.base_url
    client = ChatClient(ChatEndpoint(url, "tiny", timeout_seconds=2))
    with pytest.raises(LlmError) as caught:
        client.complete([{"role": "user", "content": "x"}], temperature=0, max_tokens=5)
    assert caught.value.reason == "connection"

    def slow(body):
        import time

        time.sleep(1.0)
        return reply("late")

    with chat_server(slow) as server:
        client = ChatClient(ChatEndpoint(server.base_url, "tiny", timeout_seconds=0.2))
        with pytest.raises(LlmError) as caught:
            client.complete([{"role": "user", "content": "x"}], temperature=0, max_tokens=5)
    assert caught.value.reason == "timeout"


def test_complete_many_keeps_input_order_and_returns_errors_in_place() -> None:
    def answer(body):
        text = body["messages"][0]["content"]
        return (500, {"error": "no"}) if text == "bad" else reply(text.upper())

    with chat_server(answer) as server:
        client = ChatClient(ChatEndpoint(server.base_url, "tiny", concurrency=3))
        results = client.complete_many(
            [[{"role": "user", "content": t}] for t in ["a", "bad", "c", "d"]],
            temperature=0,
            max_tokens=5,
        )
    assert [r if isinstance(r, str) else r.reason for r in results] == ["A", "http_500", "C", "D"]


def test_chat_client_is_off_without_a_base_url_and_needs_a_model() -> None:
    assert chat_client("", "") is None
    with pytest.raises(ValueError, match="DISTILL_LLM_MODEL"):
        chat_client("http://127.0.0.1:1/v1", "")
    assert chat_client("http://127.0.0.1:1/v1", "m").name == "llm:m"
