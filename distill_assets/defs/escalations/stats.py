"""Counts of `distillation_examples` for `distill stats escalations` and the asset metadata.

By domain, reasoning type, training format, quality tier, review state and flag: one computation
for both, so the command and the Dagster UI always agree.
"""

from __future__ import annotations

import dagster as dg
import polars as pl

from distill_assets.lib.metadata import funnel
from distill_assets.rules import escalations as rules

DIMENSIONS: tuple[str, ...] = (
    "domain",
    "reasoning_type",
    "training_format",
    "quality_tier",
    "review_state",
    "quality_flag",
)

# The columns of `distillation_examples` the stats are computed from.
STATS_COLUMNS: tuple[str, ...] = (
    "domain",
    "reasoning_type",
    "training_format",
    "quality_score",
    "human_reviewed",
    "quality_flags",
)


def quality_tier() -> pl.Expr:
    """Return the rules' quality tier of `quality_score`."""
    (tier, minimum), *rest = rules.QUALITY_TIERS
    chain = pl.when(pl.col("quality_score") >= minimum).then(pl.lit(tier))
    for tier, minimum in rest:
        chain = chain.when(pl.col("quality_score") >= minimum).then(pl.lit(tier))
    return chain.otherwise(pl.lit(rules.QUALITY_TIERS[-1][0]))


def escalation_stats(examples: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Return dimension -> value -> examples, values sorted by count (desc) then name."""
    labelled = examples.with_columns(
        quality_tier().alias("quality_tier"),
        pl.col("human_reviewed")
        .replace_strict(rules.REVIEW_STATES, return_dtype=pl.String)
        .alias("review_state"),
    )
    stats: dict[str, dict[str, int]] = {"examples": {"total": examples.height}}
    for dimension in DIMENSIONS:
        column = (
            labelled.select(pl.col("quality_flags").explode().alias(dimension)).drop_nulls()
            if dimension == "quality_flag"
            else labelled.select(pl.col(dimension).fill_null("none"))
        )
        counted = (
            column.group_by(dimension).len().sort(["len", dimension], descending=[True, False])
        )
        stats[dimension] = {str(value): int(n) for value, n in counted.iter_rows()}
    return stats


def stats_metadata(examples: pl.DataFrame) -> dict[str, dg.MetadataValue]:
    """Return the stats as materialization metadata (one funnel table per dimension)."""
    stats = escalation_stats(examples)
    return {
        f"by_{dimension}": funnel(stats[dimension], dimension.replace("_", " "))
        for dimension in DIMENSIONS
    }
