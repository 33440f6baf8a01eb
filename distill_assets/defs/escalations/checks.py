"""Escalations asset checks: raw reconciliation, one example per record, well-formed feeds."""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.escalations.assets import (
    EXAMPLES,
    LEGACY_MIGRATION,
    LEGACY_QUARANTINE,
    LEGACY_RECORDS,
    LEGACY_SUFFIXES,
    RECORDS,
    SOURCE,
)
from distill_assets.defs.escalations.exports import FORMATS
from distill_assets.defs.escalations.legacy import WHOLE_FILE
from distill_assets.defs.ingest import reconcile_check
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings
from distill_assets.lib.lake import scan_partition
from distill_assets.rules import escalations as rules

EXAMPLES_CHECK = "one_example_per_record"
LEGACY_CHECK = "legacy_reconciles"

records_reconcile = reconcile_check(SOURCE, RECORDS, exclude=LEGACY_SUFFIXES)


def _scan(settings: DistillSettings, table: str, partition: str) -> pl.LazyFrame:
    return scan_partition(settings.resolved().lake_root, SOURCE, table, partition)


@dg.asset_check(
    partitions_def=daily_partitions(),
    asset=dg.AssetKey([SOURCE, EXAMPLES]),
    name=EXAMPLES_CHECK,
    blocking=True,
    additional_deps=[dg.AssetKey([SOURCE, RECORDS]), dg.AssetKey([SOURCE, LEGACY_RECORDS])],
    description=(
        "Every bronze and legacy record yields exactly one example; ids unique; scores in [0, 1]."
    ),
)
def one_example_per_record(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Compare example and record counts and validate ids and scores of one partition."""
    partition = context.partition_key
    records = sum(
        _scan(settings, table, partition).select(pl.len()).collect().item()
        for table in (RECORDS, LEGACY_RECORDS)
    )
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
    partitions_def=daily_partitions(),
    asset=dg.AssetKey([SOURCE, LEGACY_MIGRATION]),
    name=LEGACY_CHECK,
    blocking=True,
    additional_deps=[
        dg.AssetKey([SOURCE, LEGACY_RECORDS]),
        dg.AssetKey([SOURCE, LEGACY_QUARANTINE]),
    ],
    description=(
        "Per legacy table rows_read = migrated + attached + stored + quarantined; migrated and "
        "quarantined totals equal the rows of legacy_records and legacy_quarantine (a corrupt "
        "file's own row aside)."
    ),
)
def legacy_reconciles(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Reconcile one partition's legacy migration table with the rows it produced."""
    partition = context.partition_key
    table = _scan(settings, LEGACY_MIGRATION, partition).collect()
    unbalanced = table.filter(
        pl.col("rows_read")
        != pl.col("migrated") + pl.col("attached") + pl.col("stored") + pl.col("quarantined")
    ).height
    records = _scan(settings, LEGACY_RECORDS, partition).select(pl.len()).collect().item()
    quarantined = (
        _scan(settings, LEGACY_QUARANTINE, partition)
        .filter(pl.col("legacy_table") != WHOLE_FILE)
        .select(pl.len())
        .collect()
        .item()
    )
    migrated = int(table.get_column("migrated").sum())
    quarantined_listed = int(table.get_column("quarantined").sum())
    passed = unbalanced == 0 and migrated == records and quarantined_listed == quarantined
    return dg.AssetCheckResult(
        passed=passed,
        metadata={
            "unbalanced_tables": unbalanced,
            "migrated": migrated,
            "legacy_records": records,
            "quarantined": quarantined_listed,
            "legacy_quarantine": quarantined,
            "problems": sorted({p for ps in table.get_column("problems").to_list() for p in ps}),
        },
    )


def build_feed_check(name: str) -> dg.AssetChecksDefinition:
    """Return the blocking check that one export feed is well-formed."""
    export = FORMATS[name]

    @dg.asset_check(
        partitions_def=daily_partitions(),
        asset=dg.AssetKey([SOURCE, export.table]),
        name=f"{export.table}_valid",
        blocking=True,
        description=(
            f"The {name} feed has exactly the columns of feed_schema('{export.config}') plus "
            "`subject`, unique ids, no null core fields and no row below the minimum score."
        ),
    )
    def feed_valid(
        context: dg.AssetCheckExecutionContext, settings: DistillSettings
    ) -> dg.AssetCheckResult:
        feed = _scan(settings, export.table, context.partition_key)
        schema = feed.collect_schema()
        expected = [*feed_schema(export.config).items(), (SUBJECT_COLUMN, pl.String())]
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
        schema_ok = list(schema.items()) == expected
        passed = (
            schema_ok
            and stats["unique_ids"] == stats["rows"]
            and stats["nulls"] == 0
            and stats["below_min"] == 0
        )
        return dg.AssetCheckResult(passed=passed, metadata={"schema_matches": schema_ok, **stats})

    return feed_valid


feed_checks: list[dg.AssetChecksDefinition] = [build_feed_check(name) for name in FORMATS]
