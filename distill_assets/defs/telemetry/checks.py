"""Telemetry asset checks: raw records reconcile with bronze + quarantine; the feed's schema."""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.ingest import reconcile_check
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings
from distill_assets.lib.lake import partition_path

SOURCE = "telemetry"
FEED_SCHEMA_CHECK = "matches_sft_feed_schema"

telemetry_raw_reconciles = reconcile_check(SOURCE, "events")


@dg.asset_check(
    partitions_def=daily_partitions,
    asset=dg.AssetKey([SOURCE, "dialogues"]),
    name=FEED_SCHEMA_CHECK,
    blocking=True,
    description="telemetry/dialogues has exactly the columns and types of the sft feed schema.",
)
def telemetry_dialogues_schema(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Compare the written partition's Parquet schema with `feed_schema("sft")`."""
    path = partition_path(settings.resolved().lake_root, SOURCE, "dialogues", context.partition_key)
    actual = pl.scan_parquet(str(path)).collect_schema()
    expected = feed_schema("sft")
    return dg.AssetCheckResult(
        passed=actual == expected,
        metadata={"columns": ", ".join(f"{n}: {t}" for n, t in actual.items())},
    )
