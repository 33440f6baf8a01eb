"""The nightly schedule: at 02:00 UTC, ingest yesterday's partition of every source.

Built from the partitioned `daily_ingest` job, so each tick targets the last complete daily
partition (the tick of 2026-11-22T02:00Z runs 2026-11-21). The release follows automatically
(`sensors.release_after_ingest`). It is RUNNING by default, so a `dagster dev` (or daemon) that is
up runs it without anyone switching it on (turn it off under Automation → `nightly_ingest`).
"""

import dagster as dg

from distill_assets.defs import jobs

NIGHTLY_HOUR_UTC = 2

nightly_ingest = dg.build_schedule_from_partitioned_job(
    jobs.daily_ingest,
    name="nightly_ingest",
    description=(
        "Ingest yesterday's partition of every source at 02:00 UTC; the release_after_ingest "
        "sensor publishes the release when it succeeds. On by default."
    ),
    hour_of_day=NIGHTLY_HOUR_UTC,
    minute_of_hour=0,
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
