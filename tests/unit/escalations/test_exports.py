"""Pure transforms distillation_examples → the four export feeds: columns, mapping, drops."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.escalations.exports import export_rows
from distill_assets.lib.hashing import stable_id
from tests.unit.escalations.frames import example_frame


def examples(*records: dict[str, Any]) -> pl.DataFrame:
    return example_frame(*records, id_prefix="esc", query="query {n}", time_step=1.0)


LONG_STEPS = (
    "Let me think through this step by step:\n\n1. The farmer starts with 17 sheep\n"
    '2. The phrase "all but 9" means "all except 9"\n3. So if all but 9 run away, 9 stayed\n\n'
    "Therefore, 9 sheep are left."
)


def test_feed_rows_map_the_seed_instruction_format() -> None:
    source = examples(
        {
            "query": "A farmer has 17 sheep. All but 9 run away. How many are left?",
            "query_context": "Puzzle night",
            "session_id": "sess_1",
            "sam_attempt": "8",
            "sam_confidence": 0.6,
            "claude_response": LONG_STEPS,
        },
        {"claude_response": LONG_STEPS},
    )
    feed, dropped = export_rows(source, "instruction")
    assert dropped == {}
    assert feed.drop("subject").schema == feed_schema("instruction")
    first, second = feed.to_dicts()
    assert first["instruction"] == "A farmer has 17 sheep. All but 9 run away. How many are left?"
    assert first["input"] == "Puzzle night"
    assert first["output"] == LONG_STEPS
    assert first["source"] == "escalations"
    assert first["source_ref"] == "escalations/2026-11-19/a.jsonl:1"
    assert first["id"] == stable_id("esc1", first["instruction"], "Puzzle night", LONG_STEPS)
    assert first["split_group"] == "sess_1"
    assert first["event_time"] == 1795076101.0
    # chain_of_thought: 0.5 + 0.1 (3 steps) + 0.15 (SAM's "8" is a fraction of the answer); cx 3
    assert first["quality_score"] == 0.75
    assert json.loads(first["metadata"]) == {
        "example_id": "esc1",
        "session_id": "sess_1",
        "reasoning_type": "chain_of_thought",
        "training_format": "correction",
        "domain": "reasoning",
        "subdomain": None,
        "task_type": "explain",
        "complexity": 3,
        "quality_flags": ["too_short"],
        "human_reviewed": 0,
        "reviewer_notes": None,
        "sam_confidence": 0.6,
    }
    assert second["input"] == ""
    assert second["split_group"] == "esc2"  # no session: the escalation id


def test_drop_reasons_in_order_and_threshold_is_exclusive() -> None:
    source = examples(
        {
            "claude_response": "I can't help with that. Credentials for production systems are "
            "issued by the owning team, so please ask them or use the secrets manager."
        },
        {"claude_response": "4."},
        {"claude_response": "Run `git status` to list them."},
        {"claude_response": "I can't help with that."},
        {
            "claude_response": "Call `os.getcwd()` to read the working directory of the "
            "current process: it returns the absolute path as a string, never a Path object."
        },
        {"claude_response": "```python\nimport os\nprint(os.getcwd())\n```"},
    )
    assert source.get_column("quality_score").to_list() == [0.4, 0.2, 0.3, 0.2, 0.4, 0.5]
    feed, dropped = export_rows(source, "instruction")
    # a refusal is dropped for the flag even above the threshold; 0.3 (a short tool-use answer
    # in prose: 0.5 - 0.2) is dropped: the seed's quality filter keeps examples above the
    # minimum (> 0.3); a short code block is not "too short" (0.5) and is kept
    assert dropped == {"flag_refusal": 2, "below_min_quality": 2}
    assert feed.get_column("source_ref").to_list() == [
        "escalations/2026-11-19/a.jsonl:5",
        "escalations/2026-11-19/a.jsonl:6",
    ]


def test_empty_input_gives_an_empty_feed_of_the_right_schema() -> None:
    feed, dropped = export_rows(examples({"claude_response": "x"}).head(0), "instruction")
    assert feed.height == 0
    assert feed.drop("subject").schema == feed_schema("instruction")
    assert dropped == {}


GUARDED_STEPS = (
    "This error occurs when you call .map() on undefined:\n\n"
    "1. **Identify the variable**: the stack trace points at `messages.map`.\n"
    "2. **Trace the data flow**: the response has not arrived yet.\n"
    "3. **Add a guard**:\n"
    "   ```jsx\n"
    "   messages?.map(item => <Row key={item.id} {...item} />)\n"
    "   ```\n"
    "4. **Fix the root cause**: initialize state with `useState([])`.\n\n"
    "The guard stops the crash."
)


def test_cot_steps_keep_their_code_blocks_and_outcome_is_empty() -> None:
    """Issue 26: the step "Add a guard" lost its code block."""
    source = examples({"claude_response": GUARDED_STEPS, "sam_attempt": "use a try block"})
    feed, _ = export_rows(source, "cot")
    (row,) = feed.to_dicts()
    assert row["thought_process"] == [
        "Identify the variable: the stack trace points at `messages.map`.",
        "Trace the data flow: the response has not arrived yet.",
        "Add a guard\n```jsx\nmessages?.map(item => <Row key={item.id} {...item} />)\n```",
        "Fix the root cause: initialize state with `useState([])`.",
    ]
    assert row["conclusion"] == "The guard stops the crash."
    assert row["outcome"] == ""  # an escalation records no observed outcome (card: cot notes)


def test_correction_instruction_carries_the_real_attempt() -> None:
    """Issue 26: every row had the seed's unfilled `[SAM's incorrect response]` placeholder."""
    source = examples(
        {
            "query": "Why does messages.map crash my React table?",
            "sam_attempt": "Wrap the map call in a try block.",
            "claude_response": GUARDED_STEPS,
            "corrections": {
                "sam_errors": [
                    {
                        "error_type": "factual",
                        "what_sam_said": "try block",
                        "what_was_wrong": "map on undefined is not an exception to catch",
                        "correct_answer": "guard with ?.",
                    }
                ],
                "improvements": [],
            },
        }
    )
    feed, dropped = export_rows(source, "correction")
    assert dropped == {}
    (row,) = feed.to_dicts()
    assert row["instruction"] == (
        "Here's what I said: Wrap the map call in a try block. What should I have said instead?"
    )
    assert "[SAM's incorrect response]" not in row["instruction"]
    assert row["input"] == (
        "Original question: Why does messages.map crash my React table?\n\n"
        "My answer: Wrap the map call in a try block."
    )
