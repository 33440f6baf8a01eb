"""Escalations asset checks: raw reconciliation, one example per record, a well-formed feed."""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.escalations.assets import EXAMPLES, INSTRUCTION, RECORDS, SOURCE
from distill_assets.defs.escalations.instruction import FEED_CONFIG
from distill_assets.defs.ingest import reconcile_check
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings
from distill_assets.lib.lake import scan_partition
from distill_assets.rules import escalations as rules

EXAMPLES_CHECK = "one_example_per_record"
FEED_CHECK = "instruction_feed_valid"

records_reconcile = reconcile_check(SOURCE, RECORDS)


def _scan(settings: DistillSettings, table: str, partition: str) -> pl.LazyFrame:
    return scan_partition(settings.resolved().lake_root, SOURCE, table, partition)


@dg.asset_check(
    partitions_def=daily_partitions,
    asset=dg.AssetKey([SOURCE, EXAMPLES]),
    name=EXAMPLES_CHECK,
    blocking=True,
    additional_deps=[dg.AssetKey([SOURCE, RECORDS])],
    description="Every bronze record yields exactly one example; ids unique; scores in [0, 1].",
)
def one_example_per_record(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Compare example and record counts and validate ids and scores of one partition."""
    partition = context.partition_key
    records = _scan(settings, RECORDS, partition).select(pl.len()).collect().item()
    stats = (
        _scan(settings, EXAMPLES, partition)
        .select(
            pl.len().alias("rows"),
            pl.col("id").n_unique().alias("unique_ids"),
            (~pl.col("quality_score").is_between(0.0, 1.0)).sum().alias("scores_out_of_range"),
        )
        .collect()
        .row(0, named=True)
    )
    passed = (
        stats["rows"] == records
        and stats["unique_ids"] == stats["rows"]
        and stats["scores_out_of_range"] == 0
    )
    return dg.AssetCheckResult(passed=passed, metadata={"records": records, **stats})


@dg.asset_check(
    partitions_def=daily_partitions,
    asset=dg.AssetKey([SOURCE, INSTRUCTION]),
    name=FEED_CHECK,
    blocking=True,
    description=(
        "The instruction feed has exactly the columns of feed_schema('instruction'), unique ids, "
        "no null core fields and no row below the minimum quality score."
    ),
)
def instruction_feed_valid(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Validate the schema and contents of one partition of the instruction feed."""
    feed = _scan(settings, INSTRUCTION, context.partition_key)
    schema = feed.collect_schema()
    expected = feed_schema(FEED_CONFIG)
    stats = (
        feed.select(
            pl.len().alias("rows"),
            pl.col("id").n_unique().alias("unique_ids"),
            pl.sum_horizontal(pl.all().is_null().sum()).alias("nulls"),
            (pl.col("quality_score") < rules.INSTRUCTION_MIN_QUALITY).sum().alias("below_min"),
        )
        .collect()
        .row(0, named=True)
    )
    schema_ok = list(schema.items()) == list(expected.items())
    passed = (
        schema_ok
        and stats["unique_ids"] == stats["rows"]
        and stats["nulls"] == 0
        and stats["below_min"] == 0
    )
    return dg.AssetCheckResult(
        passed=passed,
        metadata={"schema_matches": schema_ok, **stats},
    )
