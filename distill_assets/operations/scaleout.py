"""Running ingest partitions on Dagster's executors from Python (tests, `bench/`, scripts).

`ingest_job` is the `daily_ingest` job with a chosen executor, importable by name so that
`dagster.execute_job` can rebuild it in every step process; `execute_ingest` runs one partition
of it as a run of a persistent instance. With the `multiprocess` executor the partition's steps
run in parallel processes (at most `max_concurrent`); with `in_process` one after another.

Days ingest in parallel, but a few steps read earlier days (telemetry's player state up to the
day, a feed table's novelty index): the assets whose dependencies map a day to earlier days'
partitions, and everything downstream of them (`ordered_assets`). Dagster's own backfills run
those in date order from the declared dependencies; a script running days side by side runs
each day's `Phase.PARALLEL` steps first, all days at once, then each day's `Phase.ORDERED`
steps day after day, oldest first (`tests/integration/parallel_run.py`).
"""

from __future__ import annotations

from enum import Enum

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


class Phase(Enum):
    """Which steps of a day's ingest a run executes (see the module docstring)."""

    ALL = "all"
    PARALLEL = "parallel"
    ORDERED = "ordered"


def reads_earlier_days(dep: dg.AssetDep) -> bool:
    """Whether a dependency maps a day to partitions of days before it."""
    mapping = dep.partition_mapping
    return isinstance(mapping, dg.TimeWindowPartitionMapping) and mapping.start_offset < 0


def ordered_assets(job: dg.JobDefinition) -> set[dg.AssetKey]:
    """Return the job's assets that read earlier days, and their downstream assets in the job."""
    graph = job.asset_layer.asset_graph
    selected = job.asset_layer.selected_asset_keys
    found = {
        key
        for key in selected
        if any(reads_earlier_days(dep) for dep in graph.get(key).to_asset_spec().deps)
    }
    frontier = list(found)
    while frontier:
        for child in graph.get(frontier.pop()).child_keys:
            if child in selected and child not in found:
                found.add(child)
                frontier.append(child)
    return found


def phase_selection(job: dg.JobDefinition, phase: Phase) -> list[dg.AssetKey] | None:
    """Return the asset keys of `phase` (None: the whole job)."""
    if phase is Phase.ALL:
        return None
    ordered = ordered_assets(job)
    if phase is Phase.ORDERED:
        return sorted(ordered)
    return sorted(set(job.asset_layer.selected_asset_keys) - ordered)


def execute_ingest(
    partition: str,
    instance: dg.DagsterInstance,
    executor: str,
    max_concurrent: int,
    phase: Phase = Phase.ALL,
) -> dg.JobExecutionResult:
    """Run `daily_ingest` (or one `phase` of it) for `partition` on `executor`; return it."""
    job = dg.build_reconstructable_job(
        __name__,
        ingest_job.__name__,
        reconstructable_kwargs={"executor": executor, "max_concurrent": max_concurrent},
    )
    selection = phase_selection(ingest_job(executor, max_concurrent), phase)
    with dg.execute_job(
        job,
        instance,
        run_config=QUIET_RUN_CONFIG,
        tags={"dagster/partition": partition},
        asset_selection=selection,
    ) as result:
        return result
