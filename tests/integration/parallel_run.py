"""Ingest partitions in parallel processes on Dagster's executors, then publish (a child process).

`python -m tests.integration.parallel_run PARTITION...` with `DISTILL_*` and `DAGSTER_HOME` set:
each day's parallel phase (`operations.scaleout.Phase`: every step that reads no earlier day) runs
for all days at once - the first partition on the `multiprocess` executor (its steps in parallel
processes, at most 2), the others as separate runs two at a time, each in its own process with the
`in_process` executor, as the instance's run queue launches them in production
(`max_concurrent_runs`); then each day's ordered phase (the steps that read earlier days), oldest
day first, as Dagster's backfills order them from the declared dependencies; then
`publish_release` runs. Exits non-zero if any run failed.
"""

from __future__ import annotations

import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import dagster as dg

from distill_assets.defs.jobs import RELEASE_JOB
from distill_assets.operations.launch import QUIET_RUN_CONFIG
from distill_assets.operations.scaleout import Phase, execute_ingest

PROCESSES = 2


def run_partition(partition: str, executor: str, phase: Phase = Phase.PARALLEL) -> bool:
    """Run one phase of one partition's ingest as a run of the `DAGSTER_HOME` instance."""
    with dg.DagsterInstance.get() as instance:
        return execute_ingest(partition, instance, executor, PROCESSES, phase).success


def main(partitions: list[str]) -> int:
    """Ingest `partitions` in parallel, then publish the release in-process."""
    executors = ["multiprocess"] + ["in_process"] * (len(partitions) - 1)
    with dg.DagsterInstance.get():  # create the storage once, before the processes share it
        pass
    with ProcessPoolExecutor(PROCESSES, mp_context=get_context("spawn")) as pool:
        results = list(pool.map(run_partition, partitions, executors))
    results += [run_partition(day, "in_process", Phase.ORDERED) for day in sorted(partitions)]
    print(results)
    if not all(results):
        return 1
    from distill_assets.definitions import defs

    with dg.DagsterInstance.get() as instance:
        release = (
            defs()
            .resolve_job_def(RELEASE_JOB)
            .execute_in_process(instance=instance, run_config=QUIET_RUN_CONFIG)
        )
    return 0 if release.success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
