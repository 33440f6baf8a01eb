"""A client for any OpenAI-compatible chat-completions endpoint (optional, off by default).

distill runs offline by default; an operator may point the extractors (escalations, revision
principles) at an LLM by setting `DISTILL_LLM_BASE_URL` (e.g. `http://127.0.0.1:8000/v1` for a
local vLLM or llama.cpp server, or `https://api.openai.com/v1`), `DISTILL_LLM_MODEL` and, if the
endpoint needs one, `DISTILL_LLM_API_KEY`. The client speaks the plain HTTP protocol (`POST
<base>/chat/completions`) with the standard library, so it needs no SDK. Every failure — refused
connection, timeout, HTTP error, a body without a message — raises `LlmError` with a short
machine-readable `reason`, which callers count when they fall back to the offline extractor.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

Message = dict[str, str]

DEFAULT_TIMEOUT_SECONDS = 30.0
DEFAULT_CONCURRENCY = 4


class LlmError(Exception):
    """A chat completion that did not produce a message; `reason` is a short code."""

    def __init__(self, reason: str, detail: str = "") -> None:
        """Record the reason code (e.g. `timeout`, `http_500`) and a human-readable detail."""
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class ChatEndpoint:
    """Where and how to call the chat model."""

    base_url: str
    model: str
    api_key: str = ""
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    concurrency: int = DEFAULT_CONCURRENCY

    @property
    def url(self) -> str:
        """Return the chat-completions URL."""
        return self.base_url.rstrip("/") + "/chat/completions"


class ChatClient:
    """Calls one chat-completions endpoint; `complete_many` runs requests concurrently."""

    def __init__(self, endpoint: ChatEndpoint) -> None:
        """Use `endpoint` for every request."""
        self.endpoint = endpoint

    @property
    def name(self) -> str:
        """Return `llm:<model>`, the name extraction metadata records."""
        return f"llm:{self.endpoint.model}"

    def complete(self, messages: Sequence[Message], *, temperature: float, max_tokens: int) -> str:
        """Return the assistant message's content for one conversation, or raise `LlmError`."""
        body = json.dumps(
            {
                "model": self.endpoint.model,
                "messages": list(messages),
                "temperature": temperature,
                "max_tokens": max_tokens,
            }
        ).encode("utf-8")
        headers = {"Content-Type": "application/json"}
        if self.endpoint.api_key:
            headers["Authorization"] = f"Bearer {self.endpoint.api_key}"
        request = urllib.request.Request(self.endpoint.url, data=body, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.endpoint.timeout_seconds) as reply:
                payload = reply.read()
        except urllib.error.HTTPError as error:
            raise LlmError(f"http_{error.code}", str(error.reason)) from error
        except TimeoutError as error:
            raise LlmError("timeout", str(error)) from error
        except urllib.error.URLError as error:
            if isinstance(error.reason, TimeoutError):
                raise LlmError("timeout", str(error.reason)) from error
            raise LlmError("connection", str(error.reason)) from error
        except OSError as error:
            raise LlmError("connection", str(error)) from error
        return _message_content(payload)

    def complete_many(
        self, conversations: Sequence[Sequence[Message]], *, temperature: float, max_tokens: int
    ) -> list[str | LlmError]:
        """Complete every conversation (bounded concurrency); results in input order."""

        def one(messages: Sequence[Message]) -> str | LlmError:
            try:
                return self.complete(messages, temperature=temperature, max_tokens=max_tokens)
            except LlmError as error:
                return error

        if not conversations:
            return []
        workers = max(1, min(self.endpoint.concurrency, len(conversations)))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="distill-llm") as pool:
            return list(pool.map(one, conversations))


def chat_client(base_url: str, model: str, api_key: str = "") -> ChatClient | None:
    """Return a client when an endpoint is configured (`base_url` set), else None (offline)."""
    if not base_url:
        return None
    if not model:
        raise ValueError("DISTILL_LLM_BASE_URL is set but DISTILL_LLM_MODEL is not")
    return ChatClient(ChatEndpoint(base_url=base_url, model=model, api_key=api_key))


def _message_content(payload: bytes) -> str:
    try:
        content = json.loads(payload)["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError) as error:
        raise LlmError("bad_response", f"no choices[0].message.content: {error}") from error
    if not isinstance(content, str) or not content.strip():
        raise LlmError("empty_response", "the message content is empty")
    return content
