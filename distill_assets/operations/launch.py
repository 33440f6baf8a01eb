"""In-process runs of the project's jobs with one progress line per partition and step.

Used by `distill run` and `distill backfill`: each run is recorded on the project's instance (so
it shows in the UI), prints what each step materialized (rows) and which checks failed, and, for
an ingest partition, how many raw records went to quarantine and why.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import dagster as dg
import polars as pl

from distill_assets.defs.release.sensors import CLI_TAG
from distill_assets.lib.lake import partition_path
from distill_assets.lib.runlock import PID_TAG
from distill_assets.lib.settings import SOURCES

PREFIX = "[distill]"
# Dagster's console shows only critical lines: failures are printed here, one line each
# (`failure_lines`), and the run log in the UI keeps everything (`--verbose` prints it too)
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
QUARANTINE_TABLE = "quarantine"
ROW_COUNT_KEY = "dagster/row_count"
# reasons named per source in the quarantine line (the rest are counted)
SHOWN_REASONS = 3


def execute(
    definitions: dg.Definitions,
    job: str,
    instance: dg.DagsterInstance,
    *,
    partition: str | None = None,
    assets: Sequence[dg.AssetKey] | None = None,
    verbose: bool = False,
    command: str = "run",
) -> dg.ExecuteInProcessResult:
    """Run `job` (only `assets` of it, if given) in-process and print its progress lines.

    The run is tagged with the `distill` command that launched it, so `release_after_ingest`
    leaves the release to that command.
    """
    result = definitions.resolve_job_def(job).execute_in_process(
        tags={CLI_TAG: command, PID_TAG: str(os.getpid())},
        partition_key=partition,
        instance=instance,
        run_config={} if verbose else QUIET_RUN_CONFIG,
        asset_selection=list(assets) if assets is not None else None,
        raise_on_error=False,
    )
    label = f"{job} {partition}" if partition else job
    for line in step_lines(result) + failure_lines(result):
        print(f"{PREFIX} {label} {line}")
    print(f"{PREFIX} {label}: {outcome(result)}")
    return result


def failure_lines(result: dg.ExecuteInProcessResult) -> list[str]:
    """Return one line per failed step (else the run's failure): where, and the cause's first line.

    The cause is the innermost error (`OSError: [Errno 28] No space left on device: '/…'`
    names the path); its traceback stays in the run's log.
    """
    steps = _failures(result, dg.DagsterEventType.STEP_FAILURE)
    return steps or _failures(result, dg.DagsterEventType.RUN_FAILURE)


def _failures(result: dg.ExecuteInProcessResult, kind: dg.DagsterEventType) -> list[str]:
    lines = []
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None)
        if event.event_type != kind or error is None:
            continue
        while error.cause is not None:
            error = error.cause
        cause = (error.message.strip().splitlines() or [error.cls_name])[0]
        lines.append(f"{event.step_key or 'run'} failed: {cause}")
    return lines


def step_lines(result: dg.ExecuteInProcessResult) -> list[str]:
    """Return one line per materialized asset: its key and the rows written."""
    lines = []
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        rows = materialization.metadata.get(ROW_COUNT_KEY)
        count = f"{rows.value} rows" if rows is not None else "done"
        lines.append(f"{materialization.asset_key.to_user_string()}: {count}")
    return lines


def outcome(result: dg.ExecuteInProcessResult) -> str:
    """Summarize a run: status, materializations, checks, the checks that did not pass and why.

    Failed checks of ERROR severity (which block the release) are listed apart from those of
    WARN severity, which only report.
    """
    checks = result.get_asset_check_evaluations()
    failed = sorted(
        (
            c.severity == dg.AssetCheckSeverity.WARN,
            c.asset_check_key.to_user_string() + (f" ({c.description})" if c.description else ""),
        )
        for c in checks
        if not c.passed
    )
    blocking = [name for warn, name in failed if not warn]
    warnings = [name for warn, name in failed if warn]
    materialized = len(result.get_asset_materialization_events())
    status = "ok" if result.success else "FAILED"
    suffix = f", failed checks: {', '.join(blocking)}" if blocking else ""
    suffix += f", warnings: {', '.join(warnings)}" if warnings else ""
    return f"{status} ({materialized} materializations, {len(checks)} checks{suffix})"


def quarantine_counts(lake_root: str, partition: str) -> dict[str, dict[str, int]]:
    """Return source -> quarantine reason -> records for one ingest partition of the lake."""
    counts: dict[str, dict[str, int]] = {}
    for source in SOURCES:
        path = partition_path(lake_root, source, QUARANTINE_TABLE, partition)
        if not path.exists():
            continue
        reasons = pl.scan_parquet(str(path)).group_by("reason").len().collect()
        counts[source] = {str(r): int(n) for r, n in reasons.sort("reason").iter_rows()}
    return counts


def quarantine_line(lake_root: str, partition: str) -> str:
    """Return the line `quarantine <date>: <source> N (reason n, ...); ...` for a partition.

    Each source names its `SHOWN_REASONS` most frequent reasons (then by name) and how many
    more there are, so the line stays readable; every reason and record is in the source's
    `quarantine` table.
    """
    parts = []
    for source, reasons in quarantine_counts(lake_root, partition).items():
        total = sum(reasons.values())
        ranked = sorted(reasons.items(), key=lambda item: (-item[1], item[0]))
        shown = [f"{reason} {n}" for reason, n in ranked[:SHOWN_REASONS]]
        if len(ranked) > SHOWN_REASONS:
            shown.append(f"+{len(ranked) - SHOWN_REASONS} more reasons")
        parts.append(f"{source} {total}" + (f" ({', '.join(shown)})" if shown else ""))
    return f"quarantine {partition}: " + ("; ".join(parts) if parts else "nothing ingested")
