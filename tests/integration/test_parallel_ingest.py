"""Partitions ingested in parallel processes give a byte-identical release to the serial run.

Four generated days: once serially in one process (`distill run`, `execute_in_process`), once in
parallel (`parallel_run`: one day on the multiprocess executor, the others two runs at a time).
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import dagster as dg
import pytest

from tests.integration.helpers import BIN, clean_env, run_ok

pytestmark = pytest.mark.integration

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04")


def tree_digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_parallel_ingest_publishes_the_serial_release(tmp_path: Path) -> None:
    raw = tmp_path / "raw"
    run_ok(
        [str(BIN / "distill"), "sample", "--out", str(raw), "--days", "4", "--start", DAYS[0]],
        clean_env(tmp_path / "gen"),
    )
    serial_env = clean_env(tmp_path / "serial")
    parallel_env = clean_env(tmp_path / "parallel")
    for env in (serial_env, parallel_env):
        shutil.copytree(raw, Path(env["DISTILL_DATA_DIR"]) / "raw")

    serial_out = run_ok([str(BIN / "distill"), "run", "--samples", "none"], serial_env)
    assert "publish_release: ok" in serial_out
    run_ok([sys.executable, "-m", "tests.integration.parallel_run", *DAYS], parallel_env)

    with dg.DagsterInstance.from_config(parallel_env["DAGSTER_HOME"]) as instance:
        runs = instance.get_runs()
        ingest = sorted(
            (r.tags["dagster/partition"], r.status) for r in runs if r.job_name == "daily_ingest"
        )
        # each day twice: its parallel phase and its ordered phase
        assert ingest == [(day, dg.DagsterRunStatus.SUCCESS) for day in DAYS for _ in range(2)]
        step_pids = {
            record.event_log_entry.dagster_event.pid
            for r in runs
            if r.tags.get("dagster/partition") == DAYS[0]
            for record in instance.get_records_for_run(
                r.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS, limit=1000
            ).records
        }
        assert len(step_pids) > 1  # the multiprocess run's steps ran in several processes

    serial_hub = Path(serial_env["DISTILL_DATA_DIR"]) / "hub" / "distill"
    parallel_hub = Path(parallel_env["DISTILL_DATA_DIR"]) / "hub" / "distill"
    assert tree_digest(parallel_hub) == tree_digest(serial_hub)
    assert len(list((serial_hub / "latest" / "data").rglob("*.parquet"))) >= 3
