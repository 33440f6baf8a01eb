"""Sensors: the release follows every successful ingest; newly landed raw folders get ingested.

Both are RUNNING by default, like the nightly schedule, so a running daemon needs no manual step:

- `release_after_ingest` launches `publish_release` when a `daily_ingest` run succeeds (run key
  per ingest run). Runs of a backfill are skipped (a backfill of 30 days would otherwise publish 30
  times); the next nightly ingest, or a manual `publish_release`, releases them.
- `raw_landing` lists `<raw root>/<source>/<YYYY-MM-DD>/` every minute and requests `daily_ingest`
  for each date whose raw files changed (new date, new file, file grew) since it last looked.
  Its cursor is JSON `{"<source>/<date>": fingerprint}` (`landing.py`); the run key is
  `raw:<date>:<fingerprint of all sources' folders of that date>`, so re-evaluating never
  requests the same landing twice. Dates that are not yet a complete partition (today, or a
  future date) are left out of the cursor and picked up once their partition exists; on its first
  evaluation the sensor requests every date already landed (ingest is idempotent). The nightly
  schedule may ingest the same date again afterwards, which replaces it with identical data.
"""

import json

import dagster as dg

from distill_assets.defs import jobs
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.release.landing import date_fingerprint, date_of, landed
from distill_assets.defs.resources import DistillSettings

BACKFILL_TAG = "dagster/backfill"
RAW_LANDING_INTERVAL_SECONDS = 60


@dg.run_status_sensor(
    name="release_after_ingest",
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[jobs.daily_ingest],
    request_job=jobs.publish_release,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Publish a new release after every successful (non-backfill) daily_ingest run.",
)
def release_after_ingest(context: dg.RunStatusSensorContext) -> dg.RunRequest | dg.SkipReason:
    """Request `publish_release` for a successful `daily_ingest` run."""
    run = context.dagster_run
    if BACKFILL_TAG in run.tags:
        return dg.SkipReason(f"run {run.run_id} belongs to backfill {run.tags[BACKFILL_TAG]}")
    return dg.RunRequest(
        run_key=f"release-after:{run.run_id}",
        tags={"distill/after_ingest_run": run.run_id},
    )


@dg.sensor(
    name="raw_landing",
    job=jobs.daily_ingest,
    minimum_interval_seconds=RAW_LANDING_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Ingest a date again (or for the first time) when its raw folders change.",
)
def raw_landing(context: dg.SensorEvaluationContext, settings: DistillSettings) -> dg.SensorResult:
    """Request `daily_ingest` for each complete date whose raw files changed since last seen."""
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    current = {
        key: fingerprint
        for key, fingerprint in landed(settings.resolved().raw_root).items()
        if daily_partitions.has_partition_key(date_of(key))
    }
    changed = sorted({date_of(k) for k, v in current.items() if seen.get(k) != v})
    return dg.SensorResult(
        run_requests=[
            dg.RunRequest(
                partition_key=day,
                run_key=f"raw:{day}:{date_fingerprint(current, day)}",
                tags={"distill/trigger": "raw_landing"},
            )
            for day in changed
        ],
        cursor=json.dumps(current, sort_keys=True),
    )
