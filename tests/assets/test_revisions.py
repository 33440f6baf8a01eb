"""Revisions assets materialized in-process on the committed samples (and on landed edge cases)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from distill_assets.contracts.published import feed_schema
from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from distill_assets.rules import rules_version
from tests.conftest import land, materialize, samples_materialized

DAY1, DAY2 = "2026-11-19", "2026-11-20"
SELECTION = 'key:"revisions/*"'
TABLES = ("validations", "quarantine", "revision_pairs", "unpaired_turns")


def table(settings: Settings, name: str, day: str) -> pl.DataFrame:
    return pl.read_parquet(str(partition_path(settings.lake_root, "revisions", name, day)))


def row_counts(settings: Settings, day: str) -> dict[str, int]:
    return {name: table(settings, name, day).height for name in TABLES}


def checks(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


@pytest.fixture(scope="module")
def samples_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Settings, dg.ExecuteInProcessResult, dg.ExecuteInProcessResult]]:
    """Both sample days materialized once for the tests that only read them (like `sample_env`)."""
    yield from samples_materialized(tmp_path_factory.mktemp("revisions"), SELECTION, (DAY1, DAY2))


def test_sample_partitions_materialize_with_exact_counts(samples_run) -> None:
    sample_env, first, second = samples_run
    expected_checks = {
        "raw_reconciles": True,
        "every_turn_accounted": True,
        "dpo_feed_valid": True,
        "one_principle_per_pair": True,
        "memory_in_sync": True,
    }
    assert checks(first) == expected_checks
    assert checks(second) == expected_checks
    # 36 raw records = 27 + 9 and 32 = 21 + 11; turns: 5 + 9 and 6 + 5
    assert row_counts(sample_env, DAY1) == {
        "validations": 27,
        "quarantine": 9,
        "revision_pairs": 5,
        "unpaired_turns": 9,
    }
    assert row_counts(sample_env, DAY2) == {
        "validations": 21,
        "quarantine": 11,
        "revision_pairs": 6,
        "unpaired_turns": 5,
    }
    meta = {
        str(m.asset_key.path[-1]): m.metadata
        for m in first.asset_materializations_for_node("revision_pairs")
    }
    assert meta["revision_pairs"]["pairs"].value == 5
    assert meta["revision_pairs"]["turns"].value == 14
    assert meta["revision_pairs"]["rules_version"].value == rules_version("revisions")
    assert "| paired | 5 |" in meta["revision_pairs"]["turn_outcomes"].value
    assert "| failed | 2 |" in meta["unpaired_turns"]["by_reason"].value
    assert feed_schema("dpo") == table(sample_env, "revision_pairs", DAY1).schema


def test_quarantine_reasons_are_exact(samples_run) -> None:
    sample_env, _, _ = samples_run
    rows = [
        (Path(f).name, n, r)
        for day in (DAY1, DAY2)
        for f, n, r in table(sample_env, "quarantine", day)
        .select("source_file", "line_no", "reason")
        .iter_rows()
    ]
    assert rows == [
        ("gateway-a.jsonl", 3, "invalid_json"),
        ("gateway-a.jsonl", 10, "missing_turn_id"),
        ("gateway-a.jsonl", 19, "invalid_iteration"),
        ("gateway-b.jsonl", 4, "not_an_object"),
        ("gateway-b.jsonl", 7, "missing_response"),
        ("gateway-b.jsonl", 11, "invalid_decision"),
        ("gateway-b.jsonl", 14, "duplicate_validation"),
        ("gateway-b.jsonl", 15, "invalid_ts"),
        ("gateway-b.jsonl", 17, "torn_last_line"),
        ("gateway-a.jsonl", 1, "missing_ts"),
        ("gateway-a.jsonl", 7, "missing_decision"),
        ("gateway-a.jsonl", 9, "invalid_response"),
        ("gateway-a.jsonl", 11, "invalid_revision_hints"),
        ("gateway-a.jsonl", 15, "invalid_iteration"),
        ("gateway-a.jsonl", 17, "torn_last_line"),
        ("gateway-b.jsonl", 2, "not_an_object"),
        ("gateway-b.jsonl", 5, "missing_iteration"),
        ("gateway-b.jsonl", 8, "invalid_turn_id"),
        ("gateway-b.jsonl", 11, "invalid_query"),
        ("gateway-b.jsonl", 14, "invalid_revision_focus"),
    ]
    quarantine = table(sample_env, "quarantine", DAY1)
    duplicate = quarantine.filter(pl.col("reason") == "duplicate_validation").row(0, named=True)
    assert duplicate["detail"] == (
        "repeats revisions/2026-11-19/gateway-b.jsonl:13 (first occurrence kept)"
    )
    assert duplicate["source"] == "revisions"
    assert '"turn_id": "turn_001246"' in duplicate["raw_line"]


def test_known_pairs_are_exact(samples_run) -> None:
    sample_env, _, _ = samples_run
    pairs = pl.concat([table(sample_env, "revision_pairs", d) for d in (DAY1, DAY2)])
    assert pairs["source_ref"].to_list() == [
        "turn:turn_001234",
        "turn:turn_001235",
        "turn:turn_001236",
        "turn:turn_001237",
        "turn:turn_001246",
        "turn:turn_001250",
        "turn:turn_001251",
        "turn:turn_001252",
        "turn:turn_001256",
        "turn:turn_001257",
        "turn:turn_001258",
    ]
    by_ref = {r["source_ref"]: r for r in pairs.iter_rows(named=True)}
    laptops = by_ref["turn:turn_001234"]
    assert laptops["prompt"] == "find the cheapest gaming laptops"
    assert laptops["rejected"] == (
        "The MSI Thin costs $749.99 at Amazon. The ASUS TUF Dash F15 costs $799.99 at Best Buy. "
        "The Lenovo IdeaPad Gaming 3 costs $649.99 at Amazon."
    )
    assert laptops["chosen"] == (
        "| Laptop | Price | Retailer |\n|--------|-------|----------|\n"
        "| Lenovo IdeaPad Gaming 3 | $649.99 | Amazon |\n| MSI Thin | $749.99 | Amazon |\n"
        "| ASUS TUF Dash F15 | $799.99 | Best Buy |"
    )
    assert laptops["event_time"] == 1795076071.87
    # the same query (other case, other spacing) a day later lands in the same split group
    assert by_ref["turn:turn_001256"]["split_group"] == laptops["split_group"]
    gdpr = by_ref["turn:turn_001236"]
    assert gdpr["rejected"] == (
        "Companies must report a personal data breach to the regulator within 72 hours and "
        "inform affected people when the risk to them is high."
    )
    assert json.loads(gdpr["metadata"])["revision_hints"] == [
        "Cite sources for the 72-hour deadline",
        "Name the specific GDPR articles (33 and 34)",
        "Number the references",
    ]
    tone = json.loads(by_ref["turn:turn_001237"]["metadata"])
    assert tone["revision_hints"] == ["Open with an apology and offer a concrete next step"]
    assert tone["revision_focus"] == ["tone"]
    tweet = json.loads(by_ref["turn:turn_001252"]["metadata"])
    assert (tweet["revision_count"], tweet["iterations"]) == (3, 4)
    assert tweet["revision_focus"] == ["tone", "completeness"]
    # a REVISE logged after the APPROVE is outside the loop
    assert by_ref["turn:turn_001257"]["chosen"].startswith("About 8 minutes and 20 seconds: the")
    # an ISO timestamp with a +01:00 offset is read as the instant it names
    assert by_ref["turn:turn_001258"]["event_time"] == 1795186815.0


def test_unpaired_reasons_are_exact(samples_run) -> None:
    sample_env, _, _ = samples_run
    first = table(sample_env, "unpaired_turns", DAY1).select("turn_id", "reason", "detail")
    assert first.rows() == [
        ("turn_001238", "approved_without_revision", "1:APPROVE"),
        ("turn_001239", "failed", "1:REVISE 2:REVISE 3:FAIL"),
        ("turn_001240", "empty_revision_hints", "1:REVISE 2:APPROVE"),
        ("turn_001241", "unchanged_response", "1:REVISE 2:APPROVE"),
        ("turn_001242", "revise_without_approve", "1:REVISE"),
        ("turn_001243", "missing_query", "1:REVISE 2:APPROVE"),
        ("turn_001244", "failed", "1:FAIL"),
        ("turn_001245", "incomplete_turn", "1:REVISE 3:APPROVE"),
        ("turn_001247", "approved_without_revision", "1:APPROVE 2:REVISE"),
    ]
    second = table(sample_env, "unpaired_turns", DAY2).select("turn_id", "reason", "detail")
    assert second.rows() == [
        ("1259", "approved_without_revision", "1:APPROVE"),
        ("turn_001242", "incomplete_turn", "2:APPROVE"),
        ("turn_001253", "approved_without_revision", "1:APPROVE"),
        ("turn_001254", "failed", "1:REVISE 2:FAIL"),
        ("turn_001255", "revise_without_approve", "1:REVISE"),
    ]


def test_rematerializing_is_byte_identical(sample_env: Settings) -> None:
    materialize(SELECTION, DAY1)
    paths = [partition_path(sample_env.lake_root, "revisions", t, DAY1) for t in TABLES]
    before = [p.read_bytes() for p in paths]
    materialize(SELECTION, DAY1)
    assert [p.read_bytes() for p in paths] == before


def test_empty_and_all_bad_partitions(distill_env: Settings) -> None:
    land(distill_env, "revisions", DAY1, "noise.jsonl", 'not json\n[1]\n{"turn_id": "t"')
    result = materialize(SELECTION, DAY1)
    assert all(checks(result).values())
    assert row_counts(distill_env, DAY1) == {
        "validations": 0,
        "quarantine": 3,
        "revision_pairs": 0,
        "unpaired_turns": 0,
    }
    assert table(distill_env, "revision_pairs", DAY1).schema == feed_schema("dpo")
    result = materialize(SELECTION, DAY2)
    assert all(checks(result).values())
    assert set(row_counts(distill_env, DAY2).values()) == {0}
