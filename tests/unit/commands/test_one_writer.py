"""One writer per data dir, whatever launches it: the run lock is taken where the writing happens.

Another process holds the data dir's lock the way a Dagster release run does (the lake IO manager
takes it with the run's id); each launcher then stops with one line and writes nothing: a Dagster
run (the UI, a schedule, a sensor, a daemon backfill and `dagster asset materialize` all execute
the job in a run process like this one), `distill backfill` and `distill run`. Runs of distinct
partitions share the lock (partitions ingest in parallel), never two runs of one partition.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagster as dg
import pytest

from distill_assets.cli import main
from distill_assets.lib.runlock import LOCK_FILE, PARTITION_LOCKS, LockHeld, run_lock
from distill_assets.lib.settings import Settings
from tests.conftest import land


@contextmanager
def holding(data_dir: str, partition: str | None) -> Iterator[subprocess.Popen]:
    """A process holding the data dir's lock as Dagster run `r-other` (of `partition`) would."""
    code = (
        "import time\n"
        "from distill_assets.lib.runlock import run_lock\n"
        f"with run_lock({data_dir!r}, run_id='r-other', partition={partition!r}):\n"
        "    print('locked', flush=True)\n"
        "    time.sleep(120)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture
def other_writer(distill_env: Settings) -> Iterator[subprocess.Popen]:
    """A process holding the data dir's lock alone, as a release run `r-other` would."""
    with holding(distill_env.data_dir, None) as holder:
        yield holder


def _holder_line(distill_env: Settings, holder: subprocess.Popen) -> str:
    path = Path(distill_env.data_dir).resolve() / LOCK_FILE
    since = path.read_text().split(",")[0]
    return f"another run holds the lock {path} ({since}, pid {holder.pid}, run r-other)"


def test_a_dagster_run_is_refused_while_another_process_writes(
    distill_env: Settings, other_writer: subprocess.Popen
) -> None:
    from distill_assets.definitions import defs

    land(distill_env, "revisions", "2026-11-19", "a.jsonl", "{}\n")
    result = (
        defs()
        .resolve_job_def("daily_ingest")
        .execute_in_process(partition_key="2026-11-19", raise_on_error=False)
    )
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type == dg.DagsterEventType.RUN_FAILURE]
    error = failure.event_specific_data.error.cause
    assert error.cls_name == "LockHeld"
    assert error.message.strip() == (
        f"distill_assets.lib.runlock.LockHeld: {_holder_line(distill_env, other_writer)}"
    )
    assert result.get_asset_materialization_events() == []
    assert not Path(distill_env.lake_root).exists()


def test_a_step_of_the_holding_run_proceeds(
    distill_env: Settings, other_writer: subprocess.Popen
) -> None:
    """With a step-per-process executor, each step process of the holding run takes the lock."""
    with run_lock(distill_env.data_dir, run_id="r-other") as path:
        assert path.read_text().endswith(f"pid {other_writer.pid}, run r-other\n")


@pytest.mark.parametrize(
    "argv",
    [
        ["backfill", "--from", "2026-11-19", "--to", "2026-11-19", "--in-process"],
        ["run", "--samples", "none"],
    ],
)
def test_distill_commands_are_refused_while_another_process_writes(
    distill_env: Settings,
    other_writer: subprocess.Popen,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    land(distill_env, "revisions", "2026-11-19", "a.jsonl", "{}\n")
    assert main(argv) == 3
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"[distill] {_holder_line(distill_env, other_writer)}: not starting"
    assert not Path(distill_env.lake_root).exists()


def test_runs_of_distinct_partitions_share_the_lock_but_not_a_partition(
    distill_env: Settings,
) -> None:
    """A day's ingest runs beside another day's; not beside the same day's, nor a release."""
    data_dir = distill_env.data_dir
    with holding(data_dir, "2026-11-19") as holder:
        with run_lock(data_dir, run_id="r-mine", partition="2026-11-20"):
            pass
        partition_lock = Path(data_dir).resolve() / PARTITION_LOCKS / "2026-11-19.lock"
        since = partition_lock.read_text().split(",")[0]
        with (
            pytest.raises(LockHeld) as same_day,
            run_lock(data_dir, run_id="r-mine", partition="2026-11-19"),
        ):
            pass
        assert str(same_day.value) == (
            f"another run holds the lock {partition_lock} ({since}, pid {holder.pid}, run r-other)"
        )
        with (
            pytest.raises(
                LockHeld, match=rf"the lock .*/{LOCK_FILE} \(runs of single partitions\)$"
            ),
            run_lock(data_dir, run_id="r-mine"),
        ):
            pass
    with run_lock(data_dir, run_id="r-mine"):
        pass
