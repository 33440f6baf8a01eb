"""`distillation_examples` → the `instruction` feed (seed 000 export format 1, Alpaca-style).

instruction = query, input = query_context (or ""), output = claude_response. A row leaves the feed
for the first applicable reason of `rules.escalations` (an excluded quality flag, then the minimum
quality score); the reasons are counted, and the dropped examples stay queryable in
`distillation_examples` (same `id`, with their flags and score).

Row id: `stable_id(escalation id, instruction, input, output)` (sha256[:16], see `lib.hashing`),
so it is stable across re-runs and changes when the exported text does. `split_group` is the
session (fallback: the escalation id) so one session never straddles train and test.
"""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.lib.hashing import with_stable_id
from distill_assets.rules import escalations as rules

FEED_CONFIG = "instruction"
ID_COLUMNS: list[str] = ["escalation_id", "instruction", "input", "output"]


def drop_reason() -> pl.Expr:
    """Return why an example is not exported as an instruction row (first reason), or null."""
    flags = pl.col("quality_flags")
    reasons = [(flags.list.contains(f), f"flag_{f}") for f in rules.INSTRUCTION_EXCLUDED_FLAGS]
    reasons.append((pl.col("quality_score") < rules.INSTRUCTION_MIN_QUALITY, "below_min_quality"))
    (condition, reason), *rest = reasons
    chain = pl.when(condition).then(pl.lit(reason))
    for condition, reason in rest:
        chain = chain.when(condition).then(pl.lit(reason))
    return chain.otherwise(pl.lit(None, dtype=pl.String))


def _metadata() -> pl.Expr:
    return pl.struct(
        escalation_id=pl.col("id"),
        session_id=pl.col("session_id"),
        reasoning_type=pl.col("reasoning_type"),
        domain=pl.col("domain"),
        subdomain=pl.col("subdomain"),
        task_type=pl.col("task_type"),
        complexity=pl.col("complexity"),
        quality_flags=pl.col("quality_flags"),
        sam_confidence=pl.col("sam_confidence"),
    ).struct.json_encode()


def instruction_rows(examples: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int]]:
    """Return the instruction feed rows (in `feed_schema("instruction")`) and drop counts."""
    decided = examples.sort("source_file", "line_no").with_columns(
        drop_reason().alias("drop_reason")
    )
    dropped = decided.filter(pl.col("drop_reason").is_not_null())
    counts = {str(r): int(n) for r, n in dropped.group_by("drop_reason").len().iter_rows()}
    kept = decided.filter(pl.col("drop_reason").is_null()).select(
        pl.col("id").alias("escalation_id"),
        pl.lit("escalations").alias("source"),
        pl.col("source_ref"),
        pl.col("quality_score"),
        _metadata().alias("metadata"),
        pl.col("query").alias("instruction"),
        pl.col("query_context").fill_null("").alias("input"),
        pl.col("claude_response").alias("output"),
        pl.coalesce("session_id", "id").alias("split_group"),
        pl.col("created_at").alias("event_time"),
    )
    schema = feed_schema(FEED_CONFIG)
    feed = with_stable_id(kept, ID_COLUMNS).select(
        [pl.col(name).cast(dtype) for name, dtype in schema.items()]
    )
    return feed, counts
