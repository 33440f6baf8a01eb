"""One writer per data dir at a time, whatever launches it, and a Dagster instance set up once.

The lock is a `flock` on `<data dir>/.distill.lock`. The kernel releases it when its process
ends, however it ends (`kill -9` included), so a lock file left behind is stale by construction
and the next run simply takes it over; the file's content (UTC start time, pid, run id) is only
there to name the holder in the message of a run that finds the lock taken. A second writer
does not wait: it stops with that message (one line).

Who takes it, and how:
- `distill run` / `distill backfill`, for their whole command, and every Dagster run that is not
  one partition (the release, global assets): exclusively;
- a Dagster run of one partition (`dagster/partition` tag: a day's ingest from the schedule, a
  sensor, the UI or a daemon backfill): shared, plus an exclusive lock on that partition,
  `<data dir>/.distill-partitions/<partition>.lock`. Partitions ingest in parallel runs (the
  scale-out design), never two runs of one partition, and never while a release or a `distill`
  command writes.

Dagster runs take it in the lake IO manager (`defs.resources.LakeIOManager`), in the run's own
process, whoever launched the run. The lock is re-entrant within a process, so the runs a
`distill` command executes in-process run under the command's lock. With a step-per-process
executor (`multiprocess`, `k8s`) each step process takes it; a step finding an exclusive lock
held by another step of the same run proceeds.

Two processes creating the SQLite storage of a fresh `DAGSTER_HOME` at the same moment can leave
it with two migration heads; the instance is therefore opened (and its storage created) under a
second lock, `<DAGSTER_HOME>/.distill-instance.lock`, held only for that.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg

from distill_assets.lib.cleanup import process_alive

LOCK_FILE = ".distill.lock"
PARTITION_LOCKS = ".distill-partitions"
RUN_FIELD = "run "
SHARED_HOLDERS = "runs of single partitions"
INSTANCE_LOCK_FILE = ".distill-instance.lock"
PID_TAG = "distill/cli_pid"
UNFINISHED = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]

# data dir lock files this process holds -> how many nested `run_lock` blocks hold each
_HELD: dict[Path, int] = {}


class LockHeld(RuntimeError):
    """Another process holds the run lock (the message names it, on one line)."""


def _holder_run(holder: str) -> str | None:
    """Return the run id a lock file's content names, if any."""
    fields = [f.strip() for f in holder.split(",")]
    runs = [f.removeprefix(RUN_FIELD) for f in fields if f.startswith(RUN_FIELD)]
    return runs[0] if runs else None


@contextmanager
def _flock(path: Path, exclusive: bool, run_id: str | None) -> Iterator[None]:
    """Hold a `flock` on `path` for the block; raise `LockHeld` naming the holder if taken.

    Only an exclusive holder writes its line into the file (shared holders are many: a file
    found held and empty is held by them). An exclusive lock held by another step of run
    `run_id` counts as held (module docstring).
    """
    with path.open("a+", encoding="utf-8") as handle:
        mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or SHARED_HOLDERS
            if exclusive and run_id is not None and _holder_run(holder) == run_id:
                yield
                return
            raise LockHeld(f"another run holds the lock {path} ({holder})") from None
        if not exclusive:
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
            return
        started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        run = f", {RUN_FIELD}{run_id}" if run_id else ""
        handle.seek(0)
        handle.truncate()
        handle.write(f"since {started}, pid {os.getpid()}{run}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextmanager
def run_lock(
    data_dir: str, run_id: str | None = None, partition: str | None = None
) -> Iterator[Path]:
    """Hold the run lock of `data_dir` for the block; raise `LockHeld` if another writer has it.

    Exclusive, or with `partition` shared plus that partition's lock; re-entrant within a
    process. `run_id` names the Dagster run taking it (module docstring).
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
    with ExitStack() as held:
        held.enter_context(_flock(path, exclusive=partition is None, run_id=run_id))
        if partition is not None:
            partitions = path.parent / PARTITION_LOCKS
            partitions.mkdir(exist_ok=True)
            held.enter_context(_flock(partitions / f"{partition}.lock", True, run_id))
        _HELD[path] = 1
        try:
            yield path
        finally:
            del _HELD[path]


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
