"""The trace generator: deterministic, every scenario present, bad records as announced."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl

from distill_assets.contracts.traces import RAW
from distill_assets.defs.ingest import ingest_partition
from distill_assets.defs.traces.sft_extraction import Extraction, ExtractOptions
from distill_assets.samples.traces import generate_day

DAY = "2026-11-19"


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_same_inputs_write_byte_identical_files(tmp_path: Path) -> None:
    generate_day(tmp_path / "a", DAY, 2, 7)
    generate_day(tmp_path / "b", DAY, 2, 7)
    generate_day(tmp_path / "c", DAY, 2, 8)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")
    assert digest(tmp_path / "a") != digest(tmp_path / "c")


def test_scale_one_has_every_scenario_and_its_bad_records(tmp_path: Path) -> None:
    day = generate_day(tmp_path, DAY, 1, 0)
    names = sorted(p.name for p in day.files)
    assert names[0] == "archive.jsonl.gz" and names[-1] == "rollouts-worker-2.jsonl"
    paths = sorted(str(p) for p in day.files)
    ingested = ingest_partition(RAW, paths, raw_root=str(tmp_path))
    assert ingested.stats.records == day.records
    assert ingested.quarantine_by_reason == day.bad_records
    assert sum(day.bad_records.values()) / day.records > 0.05
    with Extraction(ingested.bronze.path, ExtractOptions()) as extraction:
        extraction.write_runs(tmp_path / "runs.parquet")
        summary = extraction.summary()
    runs = pl.read_parquet(tmp_path / "runs.parquet")
    assert runs.height == 9
    assert dict(runs.group_by("ended_by").len().iter_rows()) == {
        "final": 6,
        "llm_parse_error": 1,
        "max_iters": 1,
        "incomplete": 1,
    }
    assert summary.runs_by_skip_reason == {
        "tests_failed": 1,
        "llm_parse_error": 1,
        "no_tests": 2,
        "incomplete": 1,
    }
    for reason in ("duplicate", "recovery_step", "missing_args", "unknown_tool", "final_action"):
        assert summary.dropped_by_reason[reason] >= 1, reason
    assert summary.samples > 0


def test_scale_grows_the_day_in_folders(tmp_path: Path) -> None:
    day = generate_day(tmp_path, DAY, 33, 0, plain=True)
    folders = sorted({p.parent.name for p in day.files})
    assert folders == ["g0000", "g0001"]
    assert all(p.name.endswith(".jsonl") for p in day.files)
    assert day.bad_records["torn_last_line"] == 2
    assert day.bad_records["invalid_json"] == 33
