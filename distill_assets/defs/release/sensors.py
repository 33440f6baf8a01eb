"""Sensors: the release follows a batch of ingests; newly landed raw folders get ingested.

`raw_landing` starts STOPPED: on a first `make ui` the raw folders already hold every sample date,
and its first evaluation would re-ingest all of them. Turn it on in the UI (Automation →
`raw_landing` → toggle "Running") once the history is ingested (`make run`), or with
`dagster sensor start raw_landing` (DAGSTER_HOME=data/.dagster). `release_after_ingest` is
RUNNING, like the nightly schedule, so the nightly ingest is released without a manual step; it
only reacts to ingest runs, so on its own it never starts work.

- `release_after_ingest` launches `publish_release` once per batch of `daily_ingest` runs: a
  successful run releases only when no other `daily_ingest` run is queued or running and none
  succeeded after it (that one releases instead), so five dates landed together publish once.
  Runs of a backfill are skipped (a backfill of 30 days would otherwise publish 30 times), and so
  are runs of `distill run` / `distill backfill` (tag `CLI_TAG`), which publish themselves.
- `raw_landing` lists `<raw root>/<source>/<YYYY-MM-DD>/` every minute and requests `daily_ingest`
  for each date whose raw files changed (new date, new file, file grew) since it last looked.
  Its cursor is JSON `{"<source>/<date>": fingerprint}` (`landing.py`); the run key is
  `raw:<date>:<fingerprint of all sources' folders of that date>`, so re-evaluating never
  requests the same landing twice. Dates that are not yet a complete partition (today, or a
  future date) are left out of the cursor and picked up once their partition exists; on its first
  evaluation the sensor requests every date already landed (ingest is idempotent). The nightly
  schedule may ingest the same date again afterwards, which replaces it with identical data.
- `stale_after_rules_edit` shows in the UI what `distill stale` lists: every few minutes it
  computes the stale asset partitions (`lib.stale.find_stale`) and, when that list changed,
  records one observation per stale asset partition (metadata `stale`: why, `rules_recorded`,
  `rules_current`), visible on the asset's page and its partition. Its cursor is a digest of the
  list, so an unchanged list records nothing again. RUNNING by default: it never starts a run.
"""

import hashlib
import json

import dagster as dg
from dagster._core.storage.dagster_run import IN_PROGRESS_RUN_STATUSES

from distill_assets.defs import jobs
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.release.landing import date_fingerprint, date_of, landed
from distill_assets.defs.resources import DistillSettings
from distill_assets.lib.stale import find_stale

BACKFILL_TAG = "dagster/backfill"
CLI_TAG = "distill/launched_by"
RAW_LANDING_INTERVAL_SECONDS = 60
STALENESS_INTERVAL_SECONDS = 300


@dg.run_status_sensor(
    name="release_after_ingest",
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[jobs.daily_ingest],
    request_job=jobs.publish_release,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Publish one release after each batch of successful daily_ingest runs (the nightly "
        "schedule's, raw_landing's). Backfill runs and `distill run`/`backfill` runs, which "
        "publish themselves, are skipped."
    ),
)
def release_after_ingest(context: dg.RunStatusSensorContext) -> dg.RunRequest | dg.SkipReason:
    """Request `publish_release` for the last successful `daily_ingest` run of a batch."""
    run = context.dagster_run
    if BACKFILL_TAG in run.tags:
        return dg.SkipReason(f"run {run.run_id} belongs to backfill {run.tags[BACKFILL_TAG]}")
    if CLI_TAG in run.tags:
        return dg.SkipReason(f"run {run.run_id} was launched by `distill {run.tags[CLI_TAG]}`")
    later = _later_ingest_runs(context.instance, run.run_id)
    if later:
        return dg.SkipReason(f"{len(later)} later daily_ingest run(s) will release: {later[0]}")
    return dg.RunRequest(
        run_key=f"release-after:{run.run_id}",
        tags={"distill/after_ingest_run": run.run_id},
    )


def _later_ingest_runs(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """Return ids of other `daily_ingest` runs in flight, or successful and finished later."""
    in_flight = instance.get_run_records(
        dg.RunsFilter(job_name=jobs.INGEST_JOB, statuses=list(IN_PROGRESS_RUN_STATUSES))
    )
    own = instance.get_run_record_by_id(run_id)
    finished = (own.end_time if own else None) or 0.0
    succeeded = instance.get_run_records(
        dg.RunsFilter(job_name=jobs.INGEST_JOB, statuses=[dg.DagsterRunStatus.SUCCESS])
    )
    later = [r for r in succeeded if (r.end_time or 0.0) > finished]
    return sorted(
        r.dagster_run.run_id
        for r in [*in_flight, *later]
        if r.dagster_run.run_id != run_id and not {BACKFILL_TAG, CLI_TAG} & set(r.dagster_run.tags)
    )


@dg.sensor(
    name="raw_landing",
    job=jobs.daily_ingest,
    minimum_interval_seconds=RAW_LANDING_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description=(
        "Ingest a date again (or for the first time) when its raw folders change. Starts "
        "stopped (its first evaluation requests every date already landed): turn it on in "
        "Automation after `make run`."
    ),
)
def raw_landing(context: dg.SensorEvaluationContext, settings: DistillSettings) -> dg.SensorResult:
    """Request `daily_ingest` for each complete date whose raw files changed since last seen."""
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    current = {
        key: fingerprint
        for key, fingerprint in landed(settings.resolved().raw_root).items()
        if daily_partitions().has_partition_key(date_of(key))
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


@dg.sensor(
    name="stale_after_rules_edit",
    minimum_interval_seconds=STALENESS_INTERVAL_SECONDS,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description=(
        "Mark asset partitions built under rules that changed since (what `make stale` lists) "
        "with an observation on the asset and partition; `make backfill-stale` rebuilds them."
    ),
)
def stale_after_rules_edit(context: dg.SensorEvaluationContext) -> dg.SensorResult:
    """Record one observation per stale asset partition when the stale list changed."""
    entries = find_stale(context.instance, context.repository_def.asset_graph)
    lines = [entry.describe() for entry in entries]
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    if digest == context.cursor:
        return dg.SensorResult(skip_reason=f"{len(entries)} stale asset partition(s), unchanged")
    observations = [
        dg.AssetObservation(
            asset_key=entry.key,
            partition=entry.partition,
            metadata={
                "stale": dg.MetadataValue.text(entry.describe()),
                "rules_recorded": dg.MetadataValue.text(entry.recorded or ""),
                "rules_current": dg.MetadataValue.text(entry.current or ""),
            },
        )
        for entry in entries
    ]
    return dg.SensorResult(asset_events=observations, cursor=digest)
