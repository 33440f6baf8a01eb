"""Smoke test of the telemetry benchmark's code path at a tiny size (no timing asserted)."""

from __future__ import annotations

from pathlib import Path

from bench import telemetry_pipeline
from distill_assets.samples.telemetry import generate_day


def test_the_benchmark_builds_every_part_one_table(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    day = generate_day(raw, telemetry_pipeline.DAY, 2, 0)
    laps: dict[str, float] = {}
    counts = telemetry_pipeline._distill(raw, tmp_path / "lake", laps)
    assert counts["bronze"] + counts["quarantine"] == day.records
    assert counts["accepted_events"] == counts["bronze"]
    assert counts["triage"] > 0
    assert counts["dialogues"] > 0
    assert counts["player_quality"] > 0
    assert list(laps) == [
        "bronze + quarantine",
        "validation",
        "accepted_events",
        "triage",
        "dialogues",
        "deletions + consent + exclusions",
        "player_quality + payouts",
    ]
    assert sorted(p.name for p in (tmp_path / "lake" / "telemetry").iterdir()) == [
        "accepted_events",
        "dialogues",
        "events",
        "quarantine",
        "triage",
        "validation",
    ]
