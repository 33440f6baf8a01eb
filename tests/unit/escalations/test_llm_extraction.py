"""The optional LLM extractor against a local fixture server: used when it answers well, offline
extraction (counted) for every row where the call fails or the answer does not fit."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from distill_assets.defs.escalations.llm_extraction import extract_with_llm
from distill_assets.lib.llm import chat_client
from tests.fixtures.llm_server import chat_server, reply
from tests.unit.escalations.frames import example_frame

ANSWER = {
    "reasoning_steps": [
        {"step_num": 1, "action": "recall", "content": "All but 9 means 9 stay", "reasoning": "x"},
        {"step_num": 2, "action": "conclude", "content": "9 are left", "reasoning": "y"},
    ],
    "corrections": {
        "sam_errors": [
            {
                "error_type": "factual",
                "what_sam_said": "8",
                "what_was_wrong": "subtracted",
                "correct_answer": "9",
            }
        ],
        "improvements": ["Read the question literally"],
    },
    "principles": [{"principle": "Read literally", "context": "puzzles", "importance": 0.8}],
}


def examples() -> pl.DataFrame:
    return example_frame(
        *(
            {
                "query": f"{kind}: A farmer has 17 sheep. All but 9 run away. How many are left?",
                "sam_attempt": "8",
                "claude_response": "Nine sheep are left, because all but nine ran away from the "
                "farm.",
            }
            for kind in ("good", "broken", "garbled")
        )
    )


def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any] | str]:
    user = json.loads(body["messages"][-1]["content"])
    if user["query"].startswith("good"):
        return reply("```json\n" + json.dumps(ANSWER) + "\n```")
    if user["query"].startswith("broken"):
        return 500, "upstream down"
    return reply("I think the answer is 9.")


def test_llm_fields_win_where_the_model_answers_and_offline_elsewhere() -> None:
    offline = examples()
    with chat_server(answer) as server:
        client = chat_client(server.base_url, "fixture-model")
        merged, extraction = extract_with_llm(offline, client)
    assert extraction is not None
    assert extraction.rows_by_extractor == {"llm:fixture-model": 1, "offline": 2}
    assert extraction.fallbacks == {"http_500": 1, "unparseable_response": 1}
    good, broken, garbled = merged.to_dicts()
    assert [s["action"] for s in good["reasoning_steps"]] == ["recall", "conclude"]
    assert good["principles"] == ANSWER["principles"]
    assert good["corrections"]["sam_errors"][0]["error_type"] == "factual"
    # 0.5 + 0.1 (2 steps) + 0.15 (SAM error) + 0.1 (principle) - 0.1 (direct) - 0.2 (short)
    assert good["quality_score"] == 0.55
    assert good["training_format"] == "correction"
    for row, before in zip((broken, garbled), offline.to_dicts()[1:], strict=True):
        assert row["reasoning_steps"] == before["reasoning_steps"]
        assert row["quality_score"] == before["quality_score"]


def test_no_endpoint_means_offline_only() -> None:
    offline = examples()
    merged, extraction = extract_with_llm(offline, None)
    assert extraction is None
    assert merged.equals(offline)


def test_the_model_judges_answer_ness_and_the_flags_follow() -> None:
    offline = example_frame(
        {"query": "ack: how do I rotate the key?", "claude_response": "ok thanks"},
        {
            "query": "wish: how do I rotate the key?",
            "claude_response": "Rotate it with `vault write -f transit/keys/app/rotate`; old "
            "versions keep decrypting until you raise min_decryption_version.",
        },
    )
    assert offline.get_column("answer_rejection").to_list() == ["acknowledgement", None]

    def judge(body: dict[str, Any]) -> tuple[int, dict[str, Any] | str]:
        user = json.loads(body["messages"][-1]["content"])
        verdict = None if user["query"].startswith("ack") else "user_wish"
        return reply(json.dumps({**ANSWER, "corrections": None, "not_an_answer": verdict}))

    with chat_server(judge) as server:
        merged, _ = extract_with_llm(offline, chat_client(server.base_url, "fixture-model"))
    assert merged.get_column("answer_rejection").to_list() == [None, "user_wish"]
    assert ["not_an_answer" in f for f in merged.get_column("quality_flags")] == [False, True]
