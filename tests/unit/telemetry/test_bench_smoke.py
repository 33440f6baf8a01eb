"""Smoke test of the telemetry benchmark at a tiny size: the real assets run (no timing)."""

from __future__ import annotations

from pathlib import Path

from bench import telemetry_pipeline
from distill_assets.samples.telemetry import generate_day


def test_the_benchmark_builds_every_part_one_table(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    day = generate_day(raw, telemetry_pipeline.DAY, 2, 0, consent_all=True)
    laps: dict[str, float] = {}
    counts = telemetry_pipeline._distill(raw, tmp_path / "lake", laps)
    assert counts["events"] + counts["quarantine"] == day.records
    assert counts["accepted_events"] == counts["events"]
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
