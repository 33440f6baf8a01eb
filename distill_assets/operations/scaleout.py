"""Running ingest partitions on Dagster's executors from Python (tests, `bench/`, scripts).

`ingest_job` is the `daily_ingest` job with a chosen executor, importable by name so that
`dagster.execute_job` can rebuild it in every step process; `execute_ingest` runs one partition
of it as a run of a persistent instance. With the `multiprocess` executor the partition's steps
run in parallel processes (at most `max_concurrent`); with `in_process` one after another.
"""

from __future__ import annotations

import dagster as dg

from distill_assets.defs.jobs import INGEST_JOB
from distill_assets.lib.executors import distill_executor
from distill_assets.lib.startup import resolve_settings
from distill_assets.operations.launch import QUIET_RUN_CONFIG


def ingest_job(executor: str = "", max_concurrent: int = 0) -> dg.JobDefinition:
    """Return `daily_ingest` with the executor `distill_executor(executor, max_concurrent)`."""
    from distill_assets.definitions import defs

    job = defs().resolve_job_def(INGEST_JOB)
    settings = resolve_settings()
    return job.with_executor_def(distill_executor(settings, executor, max_concurrent or None))


def execute_ingest(
    partition: str, instance: dg.DagsterInstance, executor: str, max_concurrent: int
) -> dg.JobExecutionResult:
    """Run `daily_ingest` for `partition` on `executor` and return its (closed) result."""
    job = dg.build_reconstructable_job(
        __name__,
        ingest_job.__name__,
        reconstructable_kwargs={"executor": executor, "max_concurrent": max_concurrent},
    )
    with dg.execute_job(
        job, instance, run_config=QUIET_RUN_CONFIG, tags={"dagster/partition": partition}
    ) as result:
        return result
