"""Novelty score and near-duplicate rejection of telemetry feed rows.

See docs/sources/telemetry.md#novelty.

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
# rows whose similarities to their subject's rows are computed at once (bounds the memory used)
TILE_ROWS = 1024


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
    vectors: np.ndarray,
    groups: np.ndarray,
    other: np.ndarray,
    other_groups: np.ndarray,
    *,
    earlier_only: bool = False,
) -> np.ndarray:
    """Return, per row, the max cosine (clipped to [0, 1]) to the rows of `other` of its subject.

    With `earlier_only`, `other` is `vectors` itself (same order) and only the rows before a row
    count. A row without such a row gets 0. Similarities are computed subject by subject, in tiles
    of at most `TILE_ROWS` rows, so memory is bounded by a tile times the largest subject's rows,
    never all rows by all rows of the partition or of its history.
    """
    best = np.zeros(len(vectors), dtype=np.float64)
    if len(vectors) == 0 or len(other) == 0:
        return best
    codes = pl.Series(np.concatenate([groups, other_groups])).rank("dense").to_numpy()
    row_codes, other_codes = codes[: len(groups)], codes[len(groups) :]
    order = np.argsort(row_codes, kind="stable")
    other_order = np.argsort(other_codes, kind="stable")
    sorted_codes, sorted_other = row_codes[order], other_codes[other_order]
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]])
    ends = np.r_[starts[1:], len(order)]
    first = np.searchsorted(sorted_other, sorted_codes[starts], "left")
    last = np.searchsorted(sorted_other, sorted_codes[starts], "right")
    for start, end, lo, hi in zip(starts, ends, first, last, strict=True):
        if hi == lo or (earlier_only and end - start < 2):
            continue
        rows = order[start:end]
        candidates = other[other_order[lo:hi]]
        for tile_start in range(0, len(rows), TILE_ROWS):
            tile = rows[tile_start : tile_start + TILE_ROWS]
            if earlier_only:
                seen = candidates[: tile_start + len(tile)]
                sims = vectors[tile] @ seen.T
                position = tile_start + np.arange(len(tile))
                sims[np.arange(len(seen))[None, :] >= position[:, None]] = -1.0
            else:
                sims = vectors[tile] @ candidates.T
            best[tile] = np.clip(sims.max(axis=1), 0.0, 1.0)
    return best


def apply_novelty(
    rows: pl.DataFrame, config: str, index: pl.DataFrame, embedder: Embedder
) -> NoveltyResult:
    """Score `rows` against `index` and each other, per subject; drop near-duplicates (rules)."""
    if rows.is_empty():
        return NoveltyResult(rows.with_columns(pl.lit(None, EMBEDDING_DTYPE).alias(EMBEDDING)), 0)
    embedded = with_embedding(rows, config, embedder)
    return scored(embedded, best_similarity(embedded, index))


def with_embedding(rows: pl.DataFrame, config: str, embedder: Embedder) -> pl.DataFrame:
    """Add `embedding`: each row's vector of its `feed_text` (a row's alone, whatever the batch)."""
    vectors = embedder.embed(rows.select(feed_text(config)).to_series()).astype(np.float32)
    return rows.with_columns(pl.Series(EMBEDDING, vectors).cast(EMBEDDING_DTYPE))


def _vectors(embeddings: pl.Series, dim: int) -> np.ndarray:
    """Return the float32 matrix of an `embedding` column (rows of `dim` floats)."""
    if embeddings.is_empty():
        return np.zeros((0, dim), dtype=np.float32)
    return np.ascontiguousarray(embeddings.list.to_array(dim).to_numpy(), dtype=np.float32)


def best_similarity(rows: pl.DataFrame, index: pl.DataFrame) -> np.ndarray:
    """Return each of `rows`' (subject, embedding) best cosine to `index` and earlier rows.

    Per subject: a subject's rows in `rows` (in their order) and in `index` decide its scores,
    so scoring the rows of a set of whole subjects gives each row the score of the whole.
    """
    dim = rows.get_column(EMBEDDING).list.len().max() if rows.height else 0
    vectors = _vectors(rows.get_column(EMBEDDING), int(dim or 0))
    groups = rows.get_column(SUBJECT_COLUMN).to_numpy()
    stored = (
        _vectors(index.get_column(EMBEDDING), vectors.shape[1])
        if index.height
        else np.zeros((0, vectors.shape[1]), dtype=np.float32)
    )
    return np.maximum(
        _best_same_subject(vectors, groups, stored, index.get_column(SUBJECT_COLUMN).to_numpy()),
        _best_same_subject(vectors, groups, vectors, groups, earlier_only=True),
    )


def scored(rows: pl.DataFrame, best: np.ndarray) -> NoveltyResult:
    """Keep the `rows` (with `embedding`) whose `best` similarity is no duplicate's, scored."""
    novelty = np.round(1.0 - best, rules.NOVELTY_DECIMALS)
    duplicate = best > rules.DUPLICATE_ABOVE
    marked = rows.with_columns(
        pl.Series("novelty_score", novelty, pl.Float64),
        pl.Series("duplicate", duplicate, pl.Boolean),
    )
    kept = marked.filter(~pl.col("duplicate")).with_columns(
        (
            pl.col("metadata").str.strip_suffix("}")
            + pl.lit(',"novelty_score":')
            + pl.col("novelty_score").cast(pl.String)
            + pl.lit("}")
        ).alias("metadata")
    )
    return NoveltyResult(kept.drop("novelty_score", "duplicate"), int(duplicate.sum()))
