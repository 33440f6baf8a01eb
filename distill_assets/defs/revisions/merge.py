"""Merge principles that say the same thing; confidence that follows evidence.

See docs/sources/revisions.md#merging-and-confidence.

The per-turn principles of every partition are read together, sorted by (event_time, id), and
grouped: principles with the same category and the same trigger form a group; two groups of one
category whose triggers' embeddings have cosine ≥ `MERGE_TRIGGER_SIMILARITY` are linked, and the
connected groups are one merged principle. Its text (title, principle, why, pattern) and id are
those of its earliest turn; `support` is the number of turns behind it, `source_turns` lists them in
time order, and `confidence` follows `rules.principles` (0.8 for one turn, growing with support,
capped). Because everything is sorted before grouping, the result is the same whatever order the
partitions were ingested in.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from distill_assets.defs.revisions.principles import PRINCIPLE_SCHEMA
from distill_assets.lib.cosine_lsh import exact_pairs
from distill_assets.lib.embed import Embedder
from distill_assets.lib.minhash import components
from distill_assets.rules import principles as rules

# query rows per similarity block: bounds memory to MERGE_BLOCK_ROWS × groups scores
MERGE_BLOCK_ROWS = 512
CONFIDENCE_DECIMALS = 2

PRINCIPLES_SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "source": pl.String(),
        "source_ref": pl.String(),
        **PRINCIPLE_SCHEMA,
        "support": pl.UInt32(),
        "confidence": pl.Float64(),
        "source_turns": pl.List(pl.String()),
        "member_ids": pl.List(pl.String()),
        "created_at": pl.Float64(),
        "file": pl.String(),
    }
)


def confidence(support: pl.Expr) -> pl.Expr:
    """`min(MAX_CONFIDENCE, BASE_CONFIDENCE + CONFIDENCE_STEP * (support - 1))`, rounded."""
    grown = rules.BASE_CONFIDENCE + rules.CONFIDENCE_STEP * (support.cast(pl.Float64) - 1)
    return grown.clip(upper_bound=rules.MAX_CONFIDENCE).round(CONFIDENCE_DECIMALS)


def trigger_components(categories: pl.Series, vectors: np.ndarray, threshold: float) -> np.ndarray:
    """Label each trigger group with the first group of its connected component.

    Groups `i` and `j` are linked when they have the same category and cosine ≥ `threshold`
    (every pair within a category is compared, `MERGE_BLOCK_ROWS` rows at a time). Labels are the
    smallest group index of the component (so the earliest group when groups are in time order).
    """
    codes = categories.cast(pl.Categorical).to_physical().to_numpy()
    sources, targets = [np.empty(0, np.int64)], [np.empty(0, np.int64)]
    for code in np.unique(codes):
        members = np.flatnonzero(codes == code)
        a, b = exact_pairs(vectors[members], threshold, MERGE_BLOCK_ROWS, inclusive=True)
        sources.append(members[a])
        targets.append(members[b])
    return components(len(vectors), np.concatenate(sources), np.concatenate(targets))


def file_names(title: pl.Expr, principle_id: pl.Expr) -> pl.Expr:
    """`<slug of the title>-<id>.md`: stable, lower-case ASCII letters, digits and dashes."""
    slug = (
        title.str.to_lowercase()
        .str.replace_all(r"[^a-z0-9]+", "-")
        .str.strip_chars("-")
        .str.head(60)
        .str.strip_chars("-")
    )
    slug = pl.when(slug == "").then(pl.lit("principle")).otherwise(slug)
    return pl.format("{}-{}.md", slug, principle_id)


def merge_principles(turn_principles: pl.DataFrame, embedder: Embedder) -> pl.DataFrame:
    """Return the merged principles (`PRINCIPLES_SCHEMA`) of all per-turn principles."""
    rows = turn_principles.unique("id", keep="first").sort("event_time", "id")
    groups = rows.select("category", "trigger_pattern").unique(maintain_order=True)
    vectors = embedder.embed(groups.get_column("trigger_pattern"))
    labels = trigger_components(
        groups.get_column("category"), vectors, rules.MERGE_TRIGGER_SIMILARITY
    )
    groups = groups.with_columns(pl.Series("cluster", labels, dtype=pl.Int64))
    clustered = rows.join(
        groups, on=["category", "trigger_pattern"], how="left", maintain_order="left"
    )
    merged = clustered.group_by("cluster", maintain_order=True).agg(
        pl.col("id").first(),
        pl.col("source").first(),
        pl.col("source_ref").first(),
        *[pl.col(name).first() for name in PRINCIPLE_SCHEMA],
        pl.col("turn_id").unique(maintain_order=True).len().alias("support"),
        pl.col("turn_id").unique(maintain_order=True).alias("source_turns"),
        pl.col("id").alias("member_ids"),
        pl.col("event_time").first().alias("created_at"),
    )
    merged = merged.with_columns(
        confidence(pl.col("support")).alias("confidence"),
        file_names(pl.col("title"), pl.col("id")).alias("file"),
    )
    return merged.select(
        [pl.col(name).cast(dtype) for name, dtype in PRINCIPLES_SCHEMA.items()]
    ).sort("created_at", "id")
