"""Novelty score and near-duplicate rejection of telemetry feed rows (seed 004 stage 6).

Incremental: a partition's rows are compared with an index of what earlier partitions of the same
feed table already hold (their stored `embedding` column) and with the rows before them in the
partition, never all pairs over history. Comparisons are per contributor (the row's removal
`subject`: a player, or the two players of a pair), so a deletion - which removes every row of a
contributor - never changes another row's score, and rewriting a partition after a deletion equals
rebuilding it. Rules: `rules/telemetry_novelty.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from distill_assets.contracts.published import SUBJECT_COLUMN
from distill_assets.lib.embed import Embedder
from distill_assets.lib.lake import scan_partitions
from distill_assets.rules import telemetry_novelty as rules

SOURCE = "telemetry"
EMBEDDING = "embedding"
EMBEDDING_DTYPE = pl.List(pl.Float32())


@dataclass(frozen=True)
class NoveltyResult:
    """Rows kept (with `novelty_score` in metadata and their `embedding`) and rows removed."""

    kept: pl.DataFrame
    duplicates: int


def feed_text(config: str) -> pl.Expr:
    """Return the text a feed row of `config` is embedded by (its training content)."""
    if config == "dpo":
        return pl.concat_str("prompt", "chosen", "rejected", separator="\n")
    if config == "cot":
        return pl.concat_str(
            "instruction",
            "input",
            pl.col("thought_process").list.join("\n"),
            "output",
            separator="\n",
        )
    if config == "rlds":
        step = pl.element()
        line = pl.concat_str(
            step.struct.field("observation").struct.field("game_state"),
            step.struct.field("action").struct.field("action_type"),
            step.struct.field("action").struct.field("action_details"),
            step.struct.field("reward").cast(pl.String),
            separator=" ",
        )
        return pl.concat_str(
            "task_description", pl.col("steps").list.eval(line).list.join("\n"), separator="\n"
        )
    raise ValueError(f"no novelty text for config {config!r}")


def published_index(lake_root: str, table: str, before: str, subjects: pl.Series) -> pl.DataFrame:
    """Return (subject, embedding) of the rows of `subjects` in partitions of `table` < `before`."""
    scan = scan_partitions(lake_root, SOURCE, table)
    if EMBEDDING not in scan.collect_schema():
        return pl.DataFrame(schema={SUBJECT_COLUMN: pl.String(), EMBEDDING: EMBEDDING_DTYPE})
    return (
        scan.filter(
            (pl.col("partition") < before) & pl.col(SUBJECT_COLUMN).is_in(subjects.implode())
        )
        .select(SUBJECT_COLUMN, EMBEDDING)
        .drop_nulls()
        .collect()
    )


def _best_same_subject(
    vectors: np.ndarray, groups: np.ndarray, other: np.ndarray, other_groups: np.ndarray
) -> np.ndarray:
    """Return, per row, the max cosine to the rows of `other` with the same subject (else 0)."""
    if other.size == 0:
        return np.zeros(len(vectors), dtype=np.float64)
    sims = vectors @ other.T
    sims[groups[:, None] != other_groups[None, :]] = -1.0
    return np.clip(sims.max(axis=1), 0.0, 1.0).astype(np.float64)


def apply_novelty(
    rows: pl.DataFrame, config: str, index: pl.DataFrame, embedder: Embedder
) -> NoveltyResult:
    """Score `rows` against `index` and each other, per subject; drop near-duplicates (rules)."""
    if rows.is_empty():
        return NoveltyResult(rows.with_columns(pl.lit(None, EMBEDDING_DTYPE).alias(EMBEDDING)), 0)
    vectors = embedder.embed(rows.select(feed_text(config)).to_series()).astype(np.float32)
    groups = rows.get_column(SUBJECT_COLUMN).to_numpy()
    stored = (
        np.asarray(index.get_column(EMBEDDING).to_list(), dtype=np.float32)
        if index.height
        else np.zeros((0, vectors.shape[1]), dtype=np.float32)
    )
    best = _best_same_subject(vectors, groups, stored, index.get_column(SUBJECT_COLUMN).to_numpy())
    within = vectors @ vectors.T
    within[groups[:, None] != groups[None, :]] = -1.0
    within[np.triu_indices(len(vectors))] = -1.0
    best = np.maximum(best, np.clip(within.max(axis=1), 0.0, 1.0))
    novelty = np.round(1.0 - best, rules.NOVELTY_DECIMALS)
    duplicate = best > rules.DUPLICATE_ABOVE
    scored = rows.with_columns(
        pl.Series("novelty_score", novelty, pl.Float64),
        pl.Series("duplicate", duplicate, pl.Boolean),
        pl.Series(EMBEDDING, vectors.tolist(), EMBEDDING_DTYPE),
    )
    kept = scored.filter(~pl.col("duplicate")).with_columns(
        (
            pl.col("metadata").str.strip_suffix("}")
            + pl.lit(',"novelty_score":')
            + pl.col("novelty_score").cast(pl.String)
            + pl.lit("}")
        ).alias("metadata")
    )
    return NoveltyResult(kept.drop("novelty_score", "duplicate"), int(duplicate.sum()))
