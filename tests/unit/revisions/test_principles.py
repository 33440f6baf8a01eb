"""Principle extraction: inputs, the offline rule set, the LLM extractor and fallback.

See docs/sources/revisions.md#principles.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from distill_assets.defs.revisions.principles import (
    CUT_MARKER,
    OfflinePrincipleExtractor,
    extract_turn_principles,
    extraction_inputs,
)
from distill_assets.lib.hashing import stable_id
from distill_assets.lib.llm import ChatClient, ChatEndpoint
from tests.fixtures.llm_server import chat_server, reply
from tests.unit.revisions.loops import laptop_loop, loop, pairs_of

LAPTOP_ID = stable_id("principle", "revisions", "turn:turn_001234")


def offline(validations: list[dict[str, object]]) -> list[dict[str, object]]:
    frame, _ = extract_turn_principles(pairs_of(validations), None, "revisions")
    return frame.to_dicts()


def test_inputs_truncate_query_and_responses_as_the_seed_says() -> None:
    original = "a" * 500 + "b" * 500
    validations = loop(
        "t", "q" * 600, original, "c" * 800, ("Cut", "Trim it."), focus="conciseness"
    )
    row = extraction_inputs(pairs_of(validations)).row(0, named=True)
    assert row["query"] == "q" * 500
    # 800 chars: 60% head (480) + 40% tail (320), the cut marked
    assert row["original"] == "a" * 480 + CUT_MARKER + "b" * 320
    assert row["revised"] == "c" * 800
    assert row["hints"] == "Cut; Trim it."
    assert row["focus"] == "conciseness"
    assert (row["original_chars"], row["revised_chars"]) == (1000, 800)
    assert row["principle_id"] == stable_id("principle", "revisions", "turn:t")


def test_seed_laptop_example_offline() -> None:
    [row] = offline(laptop_loop())
    assert row == {
        "id": LAPTOP_ID,
        "source": "revisions",
        "source_ref": "turn:turn_001234",
        "pair_id": row["pair_id"],
        "turn_id": "turn_001234",
        "event_time": 1_795_076_045.0,
        "category": "formatting",
        "trigger_pattern": "price comparison queries",
        "title": "Price Comparison Table Format",
        "principle": (
            "When answering price comparison queries, present the options as a markdown table "
            "with columns for Laptop, Price, and Retailer rather than prose paragraphs."
        ),
        "why": (
            "Users can scan tables faster than reading sentences. Side-by-side comparison is "
            "more intuitive for decision-making."
        ),
        "original_issue": "Response listed the items in paragraph form.",
        "successful_fix": (
            "Converted to table format with clear headers (Laptop, Price, and Retailer)."
        ),
        "extractor": "offline",
    }


BULLETS = "Steps:\n- Install the package\n- Add the repository\n- Start the service\n"
RULE_CASES = [
    # (query, original, revised, hints, focus) → (category, trigger_pattern, title)
    (
        (
            "how do I install docker",
            "Install it, add the repo, start it.",
            BULLETS,
            ("Number the steps",),
            None,
        ),
        ("structure", "how-to questions", "How-To List Structure"),
    ),
    (
        (
            "summarize the meeting notes",
            "x " * 300,
            "Decisions: ship Friday.",
            ("Make it shorter",),
            None,
        ),
        ("conciseness", "summary requests", "Summary Concise Answer"),
    ),
    (
        (
            "my order never arrived",
            "Wait.",
            "Sorry! We will resend it today.",
            ("Be warmer",),
            "empathy",
        ),
        ("tone", "customer support replies", "Customer Support Tone"),
    ),
    (
        ("explain quantum entanglement simply", "Nonlocal.", "Two coins...", ("Go deeper",), None),
        ("general", "explain quantum entanglement queries", "Explain Quantum Entanglement General"),
    ),
    (
        (
            "explain recursion to a child",
            "It recurses.",
            "A doll inside a doll.",
            ("Clarify the idea",),
            None,
        ),
        ("clarity", "explain recursion child queries", "Explain Recursion Child Clarity"),
    ),
    (
        ("what is the capital of australia", "Sydney.", "Canberra.", ("That is incorrect",), None),
        ("accuracy", "factual questions", "Factual Accuracy Check"),
    ),
]


@pytest.mark.parametrize(("turn", "expected"), RULE_CASES)
def test_category_trigger_and_title_rules(
    turn: tuple[str, str, str, tuple[str, ...], str | None], expected: tuple[str, str, str]
) -> None:
    query, original, revised, hints, focus = turn
    [row] = offline(loop("t", query, original, revised, hints, focus=focus))
    assert (row["category"], row["trigger_pattern"], row["title"]) == expected


def test_hint_actions_keep_acronyms_and_lower_case_the_rest() -> None:
    hints = ("Open with an apology.", "Offer a concrete next step")
    [row] = offline(loop("t", "my refund is late", "No.", "Sorry, today.", hints, focus="tone"))
    assert row["principle"] == (
        "When answering customer support replies, open with an apology; offer a concrete next step."
    )
    [row] = offline(
        loop("t", "why is the sky blue", "Magic.", "Rayleigh.", ("UDP needs a mention",))
    )
    assert row["successful_fix"] == "Applied the hints: UDP needs a mention."


def test_offline_extractor_is_deterministic_and_keeps_input_order() -> None:
    validations = laptop_loop("b") + loop(
        "a", "how far is the moon", "1 km", "384,400 km", ("Wrong",)
    )
    inputs = extraction_inputs(pairs_of(validations))
    first = OfflinePrincipleExtractor().extract(inputs, "principle_id")
    again = OfflinePrincipleExtractor().extract(inputs.reverse(), "principle_id").reverse()
    assert first.equals(again)
    assert first["principle_id"].to_list() == inputs["principle_id"].to_list()


LLM_ANSWER = {
    "category": "formatting",
    "trigger_pattern": "Price comparison queries",
    "title": "Price Comparison Table Format",
    "principle": "When comparing products by price, use a table with Product, Price and Retailer.",
    "why": "Tables are  faster to scan.",
    "original_issue": "Prices were listed in prose.",
    "successful_fix": "Converted to a table.",
}


def client(url: str) -> ChatClient:
    return ChatClient(ChatEndpoint(url, "tiny", concurrency=2))


def test_llm_extractor_sends_the_seed_inputs_and_uses_the_answer() -> None:
    with chat_server(lambda body: reply("```json\n" + json.dumps(LLM_ANSWER) + "\n```")) as server:
        frame, extraction = extract_turn_principles(
            pairs_of(laptop_loop()), client(server.base_url), "revisions"
        )
    [row] = frame.to_dicts()
    assert row["id"] == LAPTOP_ID
    assert row["extractor"] == "llm:tiny"
    assert row["trigger_pattern"] == "price comparison queries"
    assert row["why"] == "Tables are faster to scan."
    assert row["principle"] == LLM_ANSWER["principle"]
    assert extraction.rows_by_extractor == {"llm:tiny": 1, "offline": 0}
    assert extraction.fallbacks == {}
    [request] = server.requests
    assert (request["temperature"], request["max_tokens"], request["model"]) == (0.3, 150, "tiny")
    user = request["messages"][1]["content"]
    assert "Query: find the cheapest gaming laptops" in user
    assert "Revision hints: Use table format for price comparisons" in user
    assert "Revision focus: formatting" in user
    assert "The MSI Thin costs $749.99" in user and "| Lenovo IdeaPad Gaming 3 |" in user


def test_llm_failures_fall_back_to_offline_and_are_counted() -> None:
    turns = {
        "http": (
            "find cheap flights",
            "Flights cost $99.",
            "| Flight | Price |\n|---|---|\n| A | $99 |",
        ),
        "prose": ("how far is the moon", "1 km", "384,400 km"),
        "category": ("what is the capital of australia", "Sydney.", "Canberra."),
        "good": (
            "find the cheapest gaming laptops",
            "MSI $749.",
            "| Laptop | Price |\n|---|---|\n| MSI | $749 |",
        ),
    }
    validations = [v for turn, (q, o, r) in turns.items() for v in loop(turn, q, o, r, ("Fix it",))]

    def answer(body: dict[str, object]) -> tuple[int, dict[str, object] | str]:
        user = body["messages"][1]["content"]  # type: ignore[index]
        if "cheap flights" in user:
            return 500, "boom"
        if "moon" in user:
            return reply("I think the answer should be a table.")
        if "australia" in user:
            return reply(json.dumps({**LLM_ANSWER, "category": "vibes"}))
        return reply(json.dumps(LLM_ANSWER))

    with chat_server(answer) as server:
        frame, extraction = extract_turn_principles(
            pairs_of(validations), client(server.base_url), "revisions"
        )
    by_turn = {r["turn_id"]: r for r in frame.to_dicts()}
    assert {t: r["extractor"] for t, r in by_turn.items()} == {
        "category": "offline",
        "good": "llm:tiny",
        "http": "offline",
        "prose": "offline",
    }
    assert extraction.rows_by_extractor == {"llm:tiny": 1, "offline": 3}
    assert extraction.fallbacks == {"http_500": 1, "unparseable_response": 2}
    assert by_turn["http"]["category"] == "formatting"
    assert by_turn["prose"]["trigger_pattern"] == "factual questions"


def test_unreachable_llm_never_fails_the_extraction() -> None:
    frame, extraction = extract_turn_principles(
        pairs_of(laptop_loop()), client("http://127.0.0.1:9/v1"), "revisions"
    )
    assert frame["extractor"].to_list() == ["offline"]
    assert extraction.fallbacks == {"connection": 1}
    assert frame.schema == pl.Schema(frame.schema)
