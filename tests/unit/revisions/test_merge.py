"""Merging principles that say the same thing; confidence that grows with support."""

from __future__ import annotations

import polars as pl
import pytest

from distill_assets.defs.revisions.merge import PRINCIPLES_SCHEMA, confidence, merge_principles
from distill_assets.defs.revisions.principles import TURN_PRINCIPLE_SCHEMA, extract_turn_principles
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.hashing import stable_id
from tests.unit.revisions.loops import laptop_loop, loop, other_topic_loops, pairs_of

KEYBOARDS = loop(
    "turn_002000",
    "Cheapest mechanical keyboards?",
    "The Keychron K2 costs $79 at Amazon and the Redragon K552 costs $35 at Walmart.",
    "| Keyboard | Price | Retailer |\n|---|---|---|\n| Redragon K552 | $35 | Walmart |\n"
    "| Keychron K2 | $79 | Amazon |",
    ("Put the prices in a table",),
    focus="formatting",
    ts=1_795_200_000.0,
)


def turn_principles(validations: list[dict[str, object]]) -> pl.DataFrame:
    frame, _ = extract_turn_principles(pairs_of(validations), None, "revisions")
    return frame


def test_two_turns_with_the_same_lesson_merge_with_support_and_confidence() -> None:
    merged = merge_principles(turn_principles(KEYBOARDS + laptop_loop()), load_embedder())
    assert merged.schema == PRINCIPLES_SCHEMA
    [row] = merged.to_dicts()
    laptop_id = stable_id("principle", "revisions", "turn:turn_001234")
    assert row["id"] == laptop_id
    assert (row["support"], row["confidence"]) == (2, 0.85)
    assert row["source_turns"] == ["turn_001234", "turn_002000"]
    assert row["member_ids"] == [laptop_id, stable_id("principle", "revisions", "turn:turn_002000")]
    # the text is the earliest turn's
    assert row["title"] == "Price Comparison Table Format"
    assert "Laptop, Price, and Retailer" in row["principle"]
    assert row["created_at"] == 1_795_076_045.0
    assert row["file"] == f"price-comparison-table-format-{laptop_id}.md"


def test_merge_is_the_same_whatever_the_order_of_partitions() -> None:
    frame = turn_principles(laptop_loop() + KEYBOARDS + other_topic_loops())
    forward = merge_principles(frame, load_embedder())
    halves = [frame.slice(frame.height // 2), frame.slice(0, frame.height // 2)]
    backward = merge_principles(pl.concat(halves).reverse(), load_embedder())
    assert forward.equals(backward)
    # 28 turns; the factual ones (3), the writing ones (2) and the price ones (2) merge
    assert (frame.height, forward.height) == (28, 24)
    assert forward["support"].sum() == 28


def principle(turn: str, category: str, trigger: str, event_time: float) -> dict[str, object]:
    return {
        "id": stable_id("principle", "revisions", f"turn:{turn}"),
        "source": "revisions",
        "source_ref": f"turn:{turn}",
        "pair_id": turn,
        "turn_id": turn,
        "event_time": event_time,
        "category": category,
        "trigger_pattern": trigger,
        "title": f"{trigger} {category}",
        "principle": "p",
        "why": "w",
        "original_issue": "o",
        "successful_fix": "f",
        "extractor": "llm:tiny",
    }


def test_near_identical_triggers_merge_by_the_embedder_but_other_categories_do_not() -> None:
    rows = [
        principle("a", "formatting", "price comparison queries", 3.0),
        principle("b", "formatting", "price comparison queries.", 1.0),
        principle("c", "tone", "price comparison queries", 2.0),
        principle("d", "formatting", "comparison queries", 4.0),
    ]
    merged = merge_principles(pl.DataFrame(rows, schema=TURN_PRINCIPLE_SCHEMA), load_embedder())
    assert merged.select("trigger_pattern", "category", "support", "source_turns").rows() == [
        ("price comparison queries.", "formatting", 2, ["b", "a"]),
        ("price comparison queries", "tone", 1, ["c"]),
        ("comparison queries", "formatting", 1, ["d"]),
    ]


@pytest.mark.parametrize(
    ("support", "expected"), [(1, 0.8), (2, 0.85), (3, 0.9), (4, 0.95), (5, 0.95), (50, 0.95)]
)
def test_confidence_starts_at_the_seeds_value_and_is_capped(support: int, expected: float) -> None:
    value = pl.select(confidence(pl.lit(support, dtype=pl.UInt32))).item()
    assert value == expected


def test_no_principles_merge_to_an_empty_table() -> None:
    empty = pl.DataFrame(schema=TURN_PRINCIPLE_SCHEMA)
    assert merge_principles(empty, load_embedder()).schema == PRINCIPLES_SCHEMA
    assert merge_principles(empty, load_embedder()).height == 0
