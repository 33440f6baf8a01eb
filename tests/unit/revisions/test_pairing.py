"""Turns → DPO pairs and unpaired turns, on tiny inline validation tables with known answers."""

from __future__ import annotations

import json

import polars as pl
import pytest

from distill_assets.contracts.published import feed_schema
from distill_assets.contracts.revisions import VALIDATIONS_SCHEMA
from distill_assets.defs.revisions.pairing import UNPAIRED_SCHEMA, pair_turns
from distill_assets.lib.hashing import stable_id
from distill_assets.rules.revisions import UNPAIRED_REASONS


def v(
    turn: str,
    iteration: int,
    decision: str,
    response: str,
    query: str | None = "q",
    *,
    hints: tuple[str, ...] = (),
    focus: str | None = None,
) -> dict[str, object]:
    ref = f"revisions/2026-11-19/a.jsonl:{turn}.{iteration}"
    return {
        "id": ref,
        "source": "revisions",
        "source_ref": ref,
        "source_file": "revisions/2026-11-19/a.jsonl",
        "line_no": iteration,
        "utf8_replaced": False,
        "turn_id": turn,
        "ts": 1000.0 * len(turn) + iteration,
        "iteration": iteration,
        "decision": decision,
        "query": query,
        "response": response,
        "revision_hints": list(hints),
        "revision_focus": focus,
        "extra": "{}",
    }


def frame(rows: list[dict[str, object]]) -> pl.LazyFrame:
    return pl.DataFrame(rows, schema=VALIDATIONS_SCHEMA).lazy()


TURNS = [
    # the original revisions example, rows out of order on purpose
    v("laptops", 2, "APPROVE", "| Laptop | Price |", query=None),
    v(
        "laptops",
        1,
        "REVISE",
        "The MSI Thin costs $749.99.",
        "find the cheapest gaming laptops",
        hints=("Use table format for price comparisons",),
        focus="formatting",
    ),
    # three iterations, hints from both REVISEs in order, focus distinct in order
    v(
        "gdpr",
        1,
        "REVISE",
        "72 hours.",
        "gdpr breach?",
        hints=("Cite sources", "Name articles"),
        focus="citations",
    ),
    v(
        "gdpr",
        2,
        "REVISE",
        "72 hours (GDPR).",
        "",
        hints=("Number the references",),
        focus="citations",
    ),
    v("gdpr", 3, "APPROVE", "72 hours [1]\n[1] GDPR Art. 33", None),
    v("gdpr", 4, "REVISE", "stray after approval", None, hints=("ignored",), focus="tone"),
    v("approved", 1, "APPROVE", "Canberra."),
    v("approve_then_revise", 1, "APPROVE", "Canberra."),
    v("approve_then_revise", 2, "REVISE", "Canberra is the capital.", hints=("more",)),
    v("failed", 1, "REVISE", "$142", hints=("no live data",)),
    v("failed", 2, "FAIL", "$140"),
    v("fail_first", 1, "FAIL", "I can't help with that."),
    v("pending", 1, "REVISE", "Use a VPN.", hints=("Ask which VPN",)),
    v("gap", 1, "REVISE", "300 bones", hints=("adults have 206",)),
    v("gap", 3, "APPROVE", "206 bones"),
    v("late", 2, "APPROVE", "status update"),
    v("no_query", 1, "REVISE", "It depends.", None, hints=("Answer directly",)),
    v("no_query", 2, "APPROVE", "Yes.", None),
    v("no_hints", 1, "REVISE", "Django and Flask."),
    v("no_hints", 2, "APPROVE", "Django, Flask, FastAPI."),
    v("unchanged", 1, "REVISE", "Tokyo uses JST.", hints=("Mention DST",)),
    v("unchanged", 2, "APPROVE", "tokyo  uses JST. "),
]


@pytest.fixture(scope="module")
def paired() -> tuple[pl.DataFrame, pl.DataFrame]:
    return pair_turns(frame(TURNS))


def test_pairs_are_exact(paired: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    pairs, _ = paired
    assert pairs.select("source_ref", "prompt", "chosen", "rejected").rows() == [
        ("turn:gdpr", "gdpr breach?", "72 hours [1]\n[1] GDPR Art. 33", "72 hours."),
        (
            "turn:laptops",
            "find the cheapest gaming laptops",
            "| Laptop | Price |",
            "The MSI Thin costs $749.99.",
        ),
    ]
    assert pairs.schema == feed_schema("dpo")
    assert pairs["source"].to_list() == ["revisions", "revisions"]
    assert pairs["event_time"].to_list() == [4003.0, 7002.0]


def test_pair_metadata(paired: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    pairs, _ = paired
    gdpr = json.loads(pairs.row(0, named=True)["metadata"])
    assert gdpr == {
        "turn_id": "gdpr",
        # the id of the principle extracted from this turn (revisions/turn_principles)
        "principle_id": stable_id("principle", "revisions", "turn:gdpr"),
        "revision_count": 2,
        "revision_hints": ["Cite sources", "Name articles", "Number the references"],
        "revision_focus": ["citations"],
        "iterations": 3,
        "original_ref": "revisions/2026-11-19/a.jsonl:gdpr.1",
        "approved_ref": "revisions/2026-11-19/a.jsonl:gdpr.3",
        # 7 words over 3 hints / 8; 2 revisions; |ln(29 / 9)| / ln 4 = 0.844
        "score_components": {
            "hint_specificity": 0.2917,
            "revision_economy": 0.75,
            "length_balance": 0.156,
        },
    }
    assert pairs.row(0, named=True)["quality_score"] == 0.3885


def test_ids_and_split_groups_are_stable_hashes(paired: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    pairs, _ = paired
    row = pairs.row(1, named=True)
    assert row["id"] == stable_id(
        "revisions", "turn:laptops", row["prompt"], row["chosen"], row["rejected"]
    )
    assert row["split_group"] == "query:" + stable_id("find the cheapest gaming laptops")


def test_same_query_shares_a_split_group() -> None:
    rows = [
        v("a", 1, "REVISE", "prose", "Find the cheapest  gaming laptops", hints=("table",)),
        v("a", 2, "APPROVE", "table"),
        v("b", 1, "REVISE", "other prose", "find the cheapest gaming laptops ", hints=("table",)),
        v("b", 2, "APPROVE", "other table"),
    ]
    pairs, _ = pair_turns(frame(rows))
    assert pairs.height == 2
    assert pairs["split_group"].n_unique() == 1
    assert pairs["id"].n_unique() == 2


def test_unpaired_reasons_are_exact(paired: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    _, unpaired = paired
    assert unpaired.select("turn_id", "reason", "detail").rows() == [
        ("approve_then_revise", "approved_without_revision", "1:APPROVE 2:REVISE"),
        ("approved", "approved_without_revision", "1:APPROVE"),
        ("fail_first", "failed", "1:FAIL"),
        ("failed", "failed", "1:REVISE 2:FAIL"),
        ("gap", "incomplete_turn", "1:REVISE 3:APPROVE"),
        ("late", "incomplete_turn", "2:APPROVE"),
        ("no_hints", "empty_revision_hints", "1:REVISE 2:APPROVE"),
        ("no_query", "missing_query", "1:REVISE 2:APPROVE"),
        ("pending", "revise_without_approve", "1:REVISE"),
        ("unchanged", "unchanged_response", "1:REVISE 2:APPROVE"),
    ]
    assert unpaired.schema == UNPAIRED_SCHEMA
    assert set(unpaired["reason"]) == set(UNPAIRED_REASONS)
    row = unpaired.filter(pl.col("turn_id") == "failed").row(0, named=True)
    assert row["source_ref"] == "turn:failed"
    assert row["first_ref"] == "revisions/2026-11-19/a.jsonl:failed.1"
    assert (row["validations"], row["revision_count"]) == (2, 1)
    assert row["id"] == stable_id("revisions", "turn:failed", row["first_ref"])


def test_every_turn_is_paired_or_unpaired_once(paired: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    pairs, unpaired = paired
    turns = {str(r["turn_id"]) for r in TURNS}
    refs = [r.removeprefix("turn:") for r in pairs["source_ref"]] + unpaired["turn_id"].to_list()
    assert sorted(refs) == sorted(turns)


def test_input_order_does_not_change_the_output(paired: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    pairs, unpaired = pair_turns(frame(list(reversed(TURNS))))
    assert pairs.equals(paired[0])
    assert unpaired.equals(paired[1])


def test_empty_partition() -> None:
    pairs, unpaired = pair_turns(frame([]))
    assert pairs.height == 0 and pairs.schema == feed_schema("dpo")
    assert unpaired.height == 0 and unpaired.schema == UNPAIRED_SCHEMA
