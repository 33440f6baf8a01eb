"""Revisions asset checks: raw reconciliation, every turn accounted for, a well-formed dpo feed.

Also: one principle per pair, and a principles memory in sync with its table.
"""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.ingest import reconcile_check
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings
from distill_assets.defs.revisions.assets import (
    PAIRS,
    PRINCIPLES,
    TURN_PRINCIPLES,
    UNPAIRED,
    VALIDATIONS,
)
from distill_assets.defs.revisions.memory import memory_drift, principles_folder
from distill_assets.defs.revisions.pairing import SOURCE
from distill_assets.lib.lake import global_path, scan_partition

TURNS_CHECK = "every_turn_accounted"
FEED_CHECK = "dpo_feed_valid"
FEED_CONFIG = "dpo"
PRINCIPLE_PER_PAIR_CHECK = "one_principle_per_pair"
MEMORY_CHECK = "memory_in_sync"

validations_reconcile = reconcile_check(SOURCE, VALIDATIONS)


def _scan(settings: DistillSettings, table: str, partition: str) -> pl.LazyFrame:
    return scan_partition(settings.resolved().lake_root, SOURCE, table, partition)


@dg.asset_check(
    partitions_def=daily_partitions(),
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
    partitions_def=daily_partitions(),
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


@dg.asset_check(
    partitions_def=daily_partitions(),
    asset=dg.AssetKey([SOURCE, TURN_PRINCIPLES]),
    name=PRINCIPLE_PER_PAIR_CHECK,
    blocking=True,
    additional_deps=[dg.AssetKey([SOURCE, PAIRS])],
    description="Every revision pair has exactly one principle, with the id its metadata names.",
)
def one_principle_per_pair(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Join the partition's pairs (by their `metadata.principle_id`) with its principles."""
    partition = context.partition_key
    named = _scan(settings, PAIRS, partition).select(
        pl.col("metadata")
        .str.json_decode(pl.Struct({"principle_id": pl.String()}))
        .struct.field("principle_id")
        .alias("id"),
        pl.col("id").alias("pair_id"),
    )
    found = _scan(settings, TURN_PRINCIPLES, partition).select("id", "pair_id")
    named_rows, found_rows = named.collect(), found.collect()
    without = named_rows.join(found_rows, on=["id", "pair_id"], how="anti").height
    orphans = found_rows.join(named_rows, on=["id", "pair_id"], how="anti").height
    duplicated = found_rows.height - found_rows.n_unique()
    return dg.AssetCheckResult(
        passed=without == 0 and orphans == 0 and duplicated == 0,
        metadata={
            "pairs": named_rows.height,
            "principles": found_rows.height,
            "pairs_without_principle": without,
            "principles_without_pair": orphans,
            "duplicated_principles": duplicated,
        },
    )


@dg.asset_check(
    asset=dg.AssetKey([SOURCE, PRINCIPLES]),
    name=MEMORY_CHECK,
    description=(
        "Every principle's markdown file exists with the content rendered from the table, and "
        "no file of this writer is left over from principles that no longer exist."
    ),
)
def memory_in_sync(settings: DistillSettings) -> dg.AssetCheckResult:
    """Compare the memory folder with `revisions/principles`."""
    cfg = settings.resolved()
    table = pl.read_parquet(str(global_path(cfg.lake_root, SOURCE, PRINCIPLES)))
    drift = memory_drift(principles_folder(cfg.memory_root), table)
    return dg.AssetCheckResult(
        passed=not any(drift.values()), metadata={"principles": table.height, **drift}
    )
