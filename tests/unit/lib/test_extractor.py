import json

import polars as pl
import pytest

from distill_assets.lib.extractor import (
    LlmExtractor,
    extract_with_fallback,
    parse_json_object,
)
from distill_assets.lib.llm import ChatClient, ChatEndpoint
from tests.fixtures.llm_server import chat_server, reply

SCHEMA = pl.Schema({"label": pl.String, "score": pl.Float64, "tags": pl.List(pl.String)})


class UpperExtractor:
    """An offline extractor for the tests: label = upper-cased text."""

    name = "offline"
    schema = SCHEMA

    def extract(self, inputs: pl.DataFrame, key: str) -> pl.DataFrame:
        return inputs.select(
            key,
            pl.col("text").str.to_uppercase().alias("label"),
            pl.lit(0.5).alias("score"),
            pl.lit([], dtype=pl.List(pl.String)).alias("tags"),
        )


def llm_extractor(url: str) -> LlmExtractor:
    return LlmExtractor(
        ChatClient(ChatEndpoint(url, "tiny", concurrency=2)),
        SCHEMA,
        prompt=lambda row: [{"role": "user", "content": row["text"]}],
        parse=lambda text, row: parse_json_object(text),
        temperature=0.3,
        max_tokens=150,
    )


INPUTS = pl.DataFrame({"id": ["r1", "r2", "r3", "r4", "r5"], "text": ["a", "b", "c", "d", "e"]})


def test_offline_only_when_no_llm_is_configured() -> None:
    result = extract_with_fallback(INPUTS, "id", UpperExtractor())
    assert result.frame["label"].to_list() == ["A", "B", "C", "D", "E"]
    assert result.rows_by_extractor == {"offline": 5}
    assert result.fallbacks == {}


def test_llm_rows_and_every_kind_of_failure_falls_back_in_input_order() -> None:
    def answer(body):
        text = body["messages"][0]["content"]
        good = {"label": f"llm-{text}", "score": 0.9, "tags": ["x"]}
        return {
            "a": reply("Sure! ```json\n" + json.dumps(good) + "\n```"),
            "b": (503, {"error": "overloaded"}),
            "c": reply("I cannot answer in JSON."),
            "d": reply(json.dumps({"label": "llm-d", "score": "high", "tags": []})),
            "e": reply(json.dumps(good)),
        }[text]

    with chat_server(answer) as server:
        llm = llm_extractor(server.base_url)
        result = extract_with_fallback(INPUTS, "id", UpperExtractor(), llm)
    assert result.frame["id"].to_list() == ["r1", "r2", "r3", "r4", "r5"]
    assert result.frame["label"].to_list() == ["llm-a", "B", "C", "D", "llm-e"]
    assert result.frame["score"].to_list() == [0.9, 0.5, 0.5, 0.5, 0.9]
    assert result.rows_by_extractor == {"llm:tiny": 2, "offline": 3}
    assert result.fallbacks == {"http_503": 1, "schema_mismatch": 1, "unparseable_response": 1}
    assert result.fallback_rows == 3
    assert result.frame.schema == pl.Schema({"id": pl.String, **SCHEMA})


def test_an_unreachable_endpoint_never_fails_the_extraction() -> None:
    with chat_server(lambda body: reply("{}")) as server:
        url = server.base_url
    result = extract_with_fallback(INPUTS, "id", UpperExtractor(), llm_extractor(url))
    assert result.frame["label"].to_list() == ["A", "B", "C", "D", "E"]
    assert result.fallbacks == {"connection": 5}


@pytest.mark.parametrize(
    ("text", "expected"),
    [('{"a": 1}', {"a": 1}), ('noise {"a": {"b": 2}} tail', {"a": {"b": 2}})],
)
def test_parse_json_object(text, expected) -> None:
    assert parse_json_object(text) == expected


@pytest.mark.parametrize("text", ["no json", "[1, 2]", "{broken"])
def test_parse_json_object_rejects(text) -> None:
    with pytest.raises(ValueError):
        parse_json_object(text)
