"""Revisions asset checks: raw reconciliation, every turn accounted for, a well-formed dpo feed."""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.ingest import reconcile_check
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings
from distill_assets.defs.revisions.assets import PAIRS, UNPAIRED, VALIDATIONS
from distill_assets.defs.revisions.pairing import SOURCE
from distill_assets.lib.lake import scan_partition

TURNS_CHECK = "every_turn_accounted"
FEED_CHECK = "dpo_feed_valid"
FEED_CONFIG = "dpo"

validations_reconcile = reconcile_check(SOURCE, VALIDATIONS)


def _scan(settings: DistillSettings, table: str, partition: str) -> pl.LazyFrame:
    return scan_partition(settings.resolved().lake_root, SOURCE, table, partition)


@dg.asset_check(
    partitions_def=daily_partitions,
    asset=dg.AssetKey([SOURCE, PAIRS]),
    name=TURNS_CHECK,
    blocking=True,
    additional_deps=[dg.AssetKey([SOURCE, VALIDATIONS]), dg.AssetKey([SOURCE, UNPAIRED])],
    description="Every turn of the partition is exactly one pair or one unpaired turn.",
)
def every_turn_accounted(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Compare the turn ids of validations with those of pairs and unpaired turns."""
    partition = context.partition_key
    turns = _scan(settings, VALIDATIONS, partition).select("turn_id").unique()
    paired = _scan(settings, PAIRS, partition).select(
        pl.col("source_ref").str.strip_prefix("turn:").alias("turn_id")
    )
    unpaired = _scan(settings, UNPAIRED, partition).select("turn_id")
    outcomes = pl.concat([paired, unpaired]).collect()
    turn_ids = turns.collect()
    duplicated = outcomes.height - outcomes.n_unique()
    unknown = outcomes.join(turn_ids, on="turn_id", how="anti").height
    passed = outcomes.height == turn_ids.height and duplicated == 0 and unknown == 0
    return dg.AssetCheckResult(
        passed=passed,
        metadata={
            "turns": turn_ids.height,
            "pairs_plus_unpaired": outcomes.height,
            "turns_counted_twice": duplicated,
            "turns_not_in_validations": unknown,
        },
    )


@dg.asset_check(
    partitions_def=daily_partitions,
    asset=dg.AssetKey([SOURCE, PAIRS]),
    name=FEED_CHECK,
    blocking=True,
    description=(
        "Columns are exactly feed_schema('dpo'); ids unique; prompt, chosen, rejected non-empty "
        "and chosen differs from rejected; scores in [0, 1]."
    ),
)
def dpo_feed_valid(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Validate the schema and row invariants of one partition of the dpo feed."""
    frame = _scan(settings, PAIRS, context.partition_key)
    schema_ok = frame.collect_schema() == feed_schema(FEED_CONFIG)
    texts = [
        pl.col(c).fill_null("").str.strip_chars() == "" for c in ("prompt", "chosen", "rejected")
    ]
    stats = (
        frame.select(
            pl.len().alias("rows"),
            pl.col("id").n_unique().alias("unique_ids"),
            pl.any_horizontal(texts).sum().alias("empty_texts"),
            (pl.col("chosen") == pl.col("rejected")).sum().alias("chosen_equals_rejected"),
            (~pl.col("quality_score").is_between(0.0, 1.0)).sum().alias("scores_out_of_range"),
        )
        .collect()
        .row(0, named=True)
    )
    passed = (
        schema_ok
        and stats["unique_ids"] == stats["rows"]
        and stats["empty_texts"] == 0
        and stats["chosen_equals_rejected"] == 0
        and stats["scores_out_of_range"] == 0
    )
    return dg.AssetCheckResult(passed=passed, metadata={"schema_matches": schema_ok, **stats})
