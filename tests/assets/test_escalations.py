"""Escalations assets materialized in-process with the real definitions, into a tmp data dir."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from distill_assets.contracts.escalations import RECORD_SCHEMA
from distill_assets.contracts.published import feed_schema
from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from distill_assets.rules import rules_version
from tests.conftest import land, materialize

ALL = 'key:"escalations/*"'
TABLES = (
    "records",
    "quarantine",
    "distillation_examples",
    "instruction_examples",
    "cot_examples",
    "preference_pairs",
    "correction_examples",
)
FEED_CHECKS = {
    "instruction_examples_valid": True,
    "cot_examples_valid": True,
    "preference_pairs_valid": True,
    "correction_examples_valid": True,
}
LANDED_BAD_KINDS = {
    "invalid_json",
    "torn_last_line",
    "not_an_object",
    "missing_query",
    "missing_claude_response",
    "missing_timestamp",
    "invalid_timestamp",
    "invalid_sam_confidence",
    "duplicate_id",
}


def read(settings: Settings, table: str, day: str) -> pl.DataFrame:
    return pl.read_parquet(str(partition_path(settings.lake_root, "escalations", table, day)))


def metadata(result: dg.ExecuteInProcessResult, table: str) -> dict[str, object]:
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key.path == ["escalations", table]:
            return {k: v.value for k, v in materialization.metadata.items()}
    raise KeyError(table)


EXPECTED = {
    "2026-11-19": {
        "counts": (84, 16, 84, 65, 24, 53, 53),
        "dropped": {"below_min_quality": 13, "flag_refusal": 6},
        "text_field": "invalid_sam_reasoning",
    },
    "2026-11-20": {
        "counts": (84, 16, 84, 63, 25, 52, 52),
        "dropped": {"below_min_quality": 18, "flag_refusal": 3},
        "text_field": "invalid_query_context",
    },
}


@pytest.mark.parametrize("day", sorted(EXPECTED))
def test_sample_partition_materializes_with_exact_counts(sample_env: Settings, day: str) -> None:
    result = materialize(ALL, day)
    assert result.success
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks == {
        "raw_reconciles": True,
        "one_example_per_record": True,
        "legacy_reconciles": True,
        **FEED_CHECKS,
    }
    counts = tuple(read(sample_env, t, day).height for t in TABLES)
    assert counts == EXPECTED[day]["counts"]

    quarantine = read(sample_env, "quarantine", day)
    reasons = sorted(quarantine.get_column("reason").to_list())
    expected_reasons = [
        "duplicate_id",
        "invalid_claude_response",
        "invalid_complexity",
        "invalid_domain",
        "invalid_id",
        "invalid_json",
        "invalid_query",
        "invalid_reasoning_type",
        "invalid_sam_confidence",
        EXPECTED[day]["text_field"],
        "invalid_timestamp",
        "missing_claude_response",
        "missing_query",
        "missing_timestamp",
        "not_an_object",
        "torn_last_line",
    ]
    assert reasons == sorted(expected_reasons)

    records = read(sample_env, "records", day)
    assert records.schema == RECORD_SCHEMA
    assert records.get_column("utf8_replaced").sum() == 1
    feed = read(sample_env, "instruction_examples", day)
    assert feed.drop("subject").schema == feed_schema("instruction")
    assert feed.get_column("source_ref").str.starts_with(f"escalations/{day}/").all()

    examples_meta = metadata(result, "distillation_examples")
    assert examples_meta["rows"] == 84
    assert examples_meta["rules_version"] == rules_version("escalations")
    instruction_meta = metadata(result, "instruction_examples")
    assert instruction_meta["rows"] == EXPECTED[day]["counts"][3]
    for reason, count in EXPECTED[day]["dropped"].items():
        assert f"| {reason} | {count} |" in str(instruction_meta["dropped_by_reason"])
    records_meta = metadata(result, "records")
    assert (records_meta["raw_records"], records_meta["blank_lines"]) == (100, 1)


def test_rematerializing_is_byte_identical(sample_env: Settings) -> None:
    day = "2026-11-20"
    materialize(ALL, day)
    first = {
        t: Path(partition_path(sample_env.lake_root, "escalations", t, day).path).read_bytes()
        for t in TABLES
    }
    materialize(ALL, day)
    second = {
        t: Path(partition_path(sample_env.lake_root, "escalations", t, day).path).read_bytes()
        for t in TABLES
    }
    assert first == second


def test_each_bad_record_kind_is_quarantined_with_its_reason(distill_env: Settings) -> None:
    day = "2026-11-17"
    good = {"session_id": "s1", "created_at": 1794900000.0, "query": "q", "claude_response": "r"}

    def rec(**fields: object) -> str:
        return json.dumps({k: v for k, v in {**good, **fields}.items() if v is not ...})

    land(
        distill_env,
        "escalations",
        day,
        "a.jsonl",
        "\n".join(
            [
                rec(),
                "2026-11-17T00:00:01Z WARN escalation_handler: retrying",
                '["q", "r"]',
                rec(query=...),
                rec(claude_response=None),
                rec(created_at=...),
                rec(created_at=1794900000000),
                rec(sam_confidence=87),
                rec(),
                rec(query="q2", timestamp="2026-11-17T10:00:00+01:00", created_at=...),
                '{"session_id": "s1", "query": "cut o',
            ]
        ),
    )
    result = materialize(ALL, day)
    assert [c.passed for c in result.get_asset_check_evaluations()] == [True] * 7
    quarantine = read(distill_env, "quarantine", day)
    assert quarantine.select("line_no", "reason").rows() == [
        (2, "invalid_json"),
        (3, "not_an_object"),
        (4, "missing_query"),
        (5, "missing_claude_response"),
        (6, "missing_timestamp"),
        (7, "invalid_timestamp"),
        (8, "invalid_sam_confidence"),
        (9, "duplicate_id"),
        (11, "torn_last_line"),
    ]
    assert set(quarantine.get_column("reason")) == LANDED_BAD_KINDS
    records = read(distill_env, "records", day)
    assert records.select("line_no", "created_at").rows() == [(1, 1794900000.0), (10, 1794906000.0)]
    examples = read(distill_env, "distillation_examples", day)
    assert examples.get_column("quality_score").to_list() == [0.2, 0.2]
    assert read(distill_env, "instruction_examples", day).height == 0


def test_a_day_without_raw_files_gives_empty_tables(distill_env: Settings) -> None:
    day = "2026-11-18"
    result = materialize(ALL, day)
    assert all(c.passed for c in result.get_asset_check_evaluations())
    assert [read(distill_env, t, day).height for t in TABLES] == [0] * len(TABLES)
    feed = read(distill_env, "instruction_examples", day)
    assert feed.drop("subject").schema == feed_schema("instruction")
