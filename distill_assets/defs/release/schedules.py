"""The nightly schedule: at 02:00 UTC, ingest yesterday's partition of every source.

Each tick targets the last ingest date (`partitions.last_partition_date`: the tick of
2026-11-22T02:00Z runs 2026-11-21), unless no source has a raw file for that date: then the tick
is skipped with that reason (shown under Automation → `nightly_ingest`), since ingesting a day
without data would only write empty tables. A date the loaded definitions excluded (it had no raw
file when they loaded, `defs.partitions`) is skipped with a reason saying to reload the code
location. The release follows automatically (`sensors.release_after_ingest`). It is
RUNNING by default, so a `dagster dev` (or daemon) that is up runs it without anyone switching it
on (turn it off under Automation → `nightly_ingest`).
"""

import dagster as dg

from distill_assets.defs import jobs
from distill_assets.defs.partitions import daily_partitions, has_raw_files, last_partition_date
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
    """Request `daily_ingest` for the last ingest date, if it has raw files."""
    resolved = settings.resolved()
    tick = context.scheduled_execution_time
    day = last_partition_date(resolved, tick.date() if tick else None).isoformat()
    if not has_raw_files(resolved.raw_root, day):
        return dg.SkipReason(f"no raw files for {day} under {resolved.raw_root}: nothing to ingest")
    if not daily_partitions().has_partition_key(day):
        return dg.SkipReason(
            f"{day} had no raw files when the definitions loaded: reload the code location"
        )
    return dg.RunRequest(run_key=day, partition_key=day)
