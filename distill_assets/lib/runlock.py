"""One writer per data dir at a time, whatever launches it, and a Dagster instance set up once.

The lock is an exclusive `flock` on `<data dir>/.distill.lock`. The kernel releases it when its
process ends, however it ends (`kill -9` included), so a lock file left behind is stale by
construction and the next run simply takes it over; the file's content (UTC start time, pid, run
id) is only there to name the holder in the message of a run that finds the lock taken. A second
writer does not wait: it stops with that message (one line).

Two places take it: `distill run` / `distill backfill` for their whole command, and the lake IO
manager (`defs.resources.LakeIOManager`) in the process of every Dagster run that writes the lake,
whoever launched it (the UI, a schedule, a sensor, a daemon backfill, `dagster asset
materialize`). The lock is re-entrant within a process, so the runs a `distill` command executes
in-process run under the command's lock. With a step-per-process executor (`multiprocess`, `k8s`)
each step process takes it; a step finding it held by another step of the same run proceeds.

Two processes creating the SQLite storage of a fresh `DAGSTER_HOME` at the same moment can leave
it with two migration heads; the instance is therefore opened (and its storage created) under a
second lock, `<DAGSTER_HOME>/.distill-instance.lock`, held only for that.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import dagster as dg

from distill_assets.lib.cleanup import process_alive

LOCK_FILE = ".distill.lock"
RUN_FIELD = "run "
INSTANCE_LOCK_FILE = ".distill-instance.lock"
PID_TAG = "distill/cli_pid"
UNFINISHED = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


class LockHeld(RuntimeError):
    """Another process holds the run lock (the message names it, on one line)."""


def _try_lock(handle: TextIO) -> bool:
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


# lock files this process holds -> how many nested `run_lock` blocks hold each
_HELD: dict[Path, int] = {}


def _holder_run(holder: str) -> str | None:
    """Return the run id a lock file's content names, if any."""
    fields = [f.strip() for f in holder.split(",")]
    runs = [f.removeprefix(RUN_FIELD) for f in fields if f.startswith(RUN_FIELD)]
    return runs[0] if runs else None


@contextmanager
def run_lock(data_dir: str, run_id: str | None = None) -> Iterator[Path]:
    """Hold the run lock of `data_dir` for the block; raise `LockHeld` if another writer has it.

    Re-entrant within a process. `run_id` names the Dagster run taking it: a step process of a
    run whose other step holds the lock proceeds (module docstring).
    """
    folder = Path(data_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = (folder / LOCK_FILE).resolve()
    if path in _HELD:
        _HELD[path] += 1
        try:
            yield path
        finally:
            _HELD[path] -= 1
        return
    with path.open("a+", encoding="utf-8") as handle:
        if not _try_lock(handle):
            handle.seek(0)
            holder = handle.read().strip() or "pid unknown"
            if run_id is not None and _holder_run(holder) == run_id:
                yield path
                return
            raise LockHeld(f"another run holds the lock {path} ({holder})")
        handle.seek(0)
        handle.truncate()
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        run = f", {RUN_FIELD}{run_id}" if run_id else ""
        handle.write(f"since {started}, pid {os.getpid()}{run}\n")
        handle.flush()
        _HELD[path] = 1
        try:
            yield path
        finally:
            del _HELD[path]
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)


def open_instance(home: Path) -> dg.DagsterInstance:
    """Open the Dagster instance in `home`, its storage created under a lock.

    Two first runs on a fresh home would otherwise both create the run storage's schema (seen:
    "alembic_version has more than one head"); the lock serialises that one-time step.
    """
    home.mkdir(parents=True, exist_ok=True)
    with (home / INSTANCE_LOCK_FILE).open("a+", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            instance = dg.DagsterInstance.from_config(str(home))
            instance.get_run_records(limit=1)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    return instance


def fail_orphaned_runs(instance: dg.DagsterInstance) -> list[str]:
    """Mark runs of earlier `distill run` processes that died mid-run as failed; return their ids.

    Only runs tagged with the pid of a `distill run` (`PID_TAG`) whose process is gone are
    touched (the caller holds the run lock, so no other `distill run` of this data dir is live);
    runs launched by the Dagster daemon are left to its run monitoring (`dagster.yaml`).
    """
    failed = []
    for record in instance.get_run_records(dg.RunsFilter(statuses=UNFINISHED)):
        run = record.dagster_run
        pid = run.tags.get(PID_TAG)
        if pid is None or int(pid) == os.getpid() or process_alive(int(pid)):
            continue
        instance.report_run_failed(run, message=f"the distill run process (pid {pid}) ended")
        failed.append(run.run_id)
    return failed
