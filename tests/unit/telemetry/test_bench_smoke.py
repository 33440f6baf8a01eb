"""Smoke test of the telemetry benchmark at a tiny size: the real assets run (no timing)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from bench import telemetry_pipeline
from distill_assets.samples.telemetry import generate_day


def test_the_benchmark_builds_every_part_one_table(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    day = generate_day(raw, telemetry_pipeline.DAY, 2, 0, consent_all=True)
    laps: dict[str, float] = {}
    counts = telemetry_pipeline._distill(raw, tmp_path / "lake", laps)
    assert counts["events"] + counts["quarantine"] == day.records
    # every event is consented to; the players a deletion request of the day removes are left out
    bronze = pl.read_parquet(
        tmp_path / "lake" / "telemetry" / "events" / f"{telemetry_pipeline.DAY}.parquet"
    )
    deleted = bronze.filter(pl.col("event_type") == "deletion_request").get_column("player_key")
    assert deleted.len() > 0
    kept = bronze.filter(~pl.col("player_key").is_in(deleted.implode()))
    assert counts["accepted_events"] == kept.height < counts["events"]
    assert counts["triage"] > 0
    assert counts["dialogues"] > 0
    assert counts["player_quality"] > 0
    assert sorted(laps) == sorted(
        [
            "events + quarantine",
            *telemetry_pipeline.DAILY_TABLES[2:],
            *telemetry_pipeline.GLOBAL_TABLES,
        ]
    )
    assert sorted(p.name for p in (tmp_path / "lake" / "telemetry").iterdir()) == sorted(
        [
            *telemetry_pipeline.DAILY_TABLES,
            *(f"{table}.parquet" for table in telemetry_pipeline.GLOBAL_TABLES),
        ]
    )
