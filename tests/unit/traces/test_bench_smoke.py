"""Smoke test of the trace ingest benchmark's code path at a tiny size (no timing asserted)."""

from __future__ import annotations

from pathlib import Path

from bench import traces_ingest
from distill_assets.samples.traces import generate_day


def test_every_bench_step_runs_on_a_tiny_dataset(tmp_path: Path) -> None:
    root, work = tmp_path / "raw", tmp_path / "work"
    work.mkdir()
    day = generate_day(root, traces_ingest.DAY, 2, traces_ingest.SEED, plain=True)
    produced = {name: traces_ingest._step(name, root, work) for name in traces_ingest.STEPS}
    assert produced["bronze"]["rows"] == day.records
    assert produced["copy"]["rows"] == produced["copy_json"]["rows"] > 0
    assert produced["sft_steps"]["samples"] == produced["sft_tool_steps"]["samples"] > 0
    assert produced["runs"]["rows"] == 18
    timings = {
        name: {**out, "wall_s": 1.0, "peak_rss_mib": 100.0} for name, out in produced.items()
    }
    rows = traces_ingest._rows(2.0, timings)
    assert rows[-1].startswith("| 2 MB | bronze + sft_steps | 2.00 | 1 |")
