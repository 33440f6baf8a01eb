"""Telemetry asset checks: raw records reconcile; the feed's schema; the triage pass rate."""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.ingest import reconcile_check
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings
from distill_assets.defs.telemetry.triage import pass_rates
from distill_assets.lib.lake import partition_path
from distill_assets.rules import telemetry_triage

SOURCE = "telemetry"
FEED_SCHEMA_CHECK = "matches_sft_feed_schema"
PASS_RATE_CHECK = "pass_rate_within_budget"

telemetry_raw_reconciles = reconcile_check(SOURCE, "events")


@dg.asset_check(
    partitions_def=daily_partitions(),
    asset=dg.AssetKey([SOURCE, "dialogues"]),
    name=FEED_SCHEMA_CHECK,
    blocking=True,
    description=(
        "telemetry/dialogues has exactly the columns and types of the sft feed schema, plus the "
        "removal subject."
    ),
)
def telemetry_dialogues_schema(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Compare the written partition's Parquet schema with `feed_schema("sft")`."""
    path = partition_path(settings.resolved().lake_root, SOURCE, "dialogues", context.partition_key)
    actual = pl.scan_parquet(str(path)).collect_schema()
    expected = pl.Schema({**feed_schema("sft"), SUBJECT_COLUMN: pl.String()})
    return dg.AssetCheckResult(
        passed=actual == expected,
        metadata={"columns": ", ".join(f"{n}: {t}" for n, t in actual.items())},
    )


@dg.asset_check(
    partitions_def=daily_partitions(),
    asset=dg.AssetKey([SOURCE, "triage"]),
    name=PASS_RATE_CHECK,
    description=(
        "Warn when more than 40% of candidate events pass triage: the triage filters "
        "need tightening (docs/sources/telemetry.md#triage)."
    ),
)
def telemetry_triage_pass_rate(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Compare the partition's triage pass rate with `rules.telemetry_triage.PASS_RATE_ALERT`."""
    path = partition_path(settings.resolved().lake_root, SOURCE, "triage", context.partition_key)
    rates = pass_rates(pl.scan_parquet(str(path)).select("action_type", "decision"))
    return dg.AssetCheckResult(
        passed=rates["all"] <= telemetry_triage.PASS_RATE_ALERT,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "pass_rate": rates["all"],
            "threshold": telemetry_triage.PASS_RATE_ALERT,
            **{f"pass_rate/{kind}": rate for kind, rate in rates.items() if kind != "all"},
        },
    )
