"""The nightly schedule: at 02:00 UTC, ingest yesterday's partition of every source.

Each tick targets the last complete daily partition (the tick of 2026-11-22T02:00Z runs
2026-11-21), unless no source has a raw file for that date: then the tick is skipped with that
reason (shown under Automation → `nightly_ingest`), since ingesting a day without data would only
write empty tables. The release follows automatically (`sensors.release_after_ingest`). It is
RUNNING by default, so a `dagster dev` (or daemon) that is up runs it without anyone switching it
on (turn it off under Automation → `nightly_ingest`).
"""

import dagster as dg
from dagster._core.definitions.partitions.context import partition_loading_context

from distill_assets.defs import jobs
from distill_assets.defs.partitions import daily_partitions, has_raw_files
from distill_assets.defs.resources import DistillSettings

NIGHTLY_HOUR_UTC = 2


@dg.schedule(
    name="nightly_ingest",
    job=jobs.daily_ingest,
    cron_schedule=f"0 {NIGHTLY_HOUR_UTC} * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description=(
        "Ingest yesterday's partition of every source at 02:00 UTC (skipped when no source has "
        "raw files for it); the release_after_ingest sensor publishes the release when it "
        "succeeds. On by default."
    ),
)
def nightly_ingest(
    context: dg.ScheduleEvaluationContext, settings: DistillSettings
) -> dg.RunRequest | dg.SkipReason:
    """Request `daily_ingest` for the last complete day, if it has raw files."""
    with partition_loading_context(effective_dt=context.scheduled_execution_time):
        day = daily_partitions.get_last_partition_key()
    if day is None:
        return dg.SkipReason("no complete daily partition yet")
    raw_root = settings.resolved().raw_root
    if not has_raw_files(raw_root, day):
        return dg.SkipReason(f"no raw files for {day} under {raw_root}: nothing to ingest")
    return dg.RunRequest(run_key=day, partition_key=day)
