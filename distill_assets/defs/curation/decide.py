"""Global curation decisions over compact per-row keys of all history (never the text).

Rows are first put in representative order — highest contributor `trust` (telemetry rows; rows
without one after), then highest `quality_score`, then earliest `event_time`, then smallest `id`,
`source_ref`, `partition`, row within partition — so that in every cluster the
representative is simply the row ranked first, whatever order partitions arrived in. Then, in
funnel order: exact duplicates (same content hash), near duplicates (MinHash LSH over the
signatures of the rows left), semantic duplicates (embedding cosine over the rows left),
contaminated rows, rows failing the quality gate; what is left is published (its split is
decided afterwards over every config's published rows at once: `splits.py`). Each
removed duplicate names the published-side row it was folded into (`kept_id`, followed through
every dedup stage). Rules: `distill_assets.rules.curation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import polars as pl

from distill_assets.lib.cosine_lsh import lsh_keys, member_pairs
from distill_assets.lib.minhash import band_keys, components, near_components
from distill_assets.rules.curation import (
    BELOW_THRESHOLD,
    CONTAMINATED,
    EXACT_DUPLICATE,
    LSH_BANDS,
    LSH_ROWS,
    NEAR_DUPLICATE,
    NEAR_DUPLICATE_MIN_ESTIMATE,
    REMOVAL_REASONS,
    SEMANTIC_DUPLICATE,
    SEMANTIC_DUPLICATE_COSINE,
    SEMANTIC_EXACT_LIMIT,
    SEMANTIC_LSH_BANDS,
    SEMANTIC_LSH_BITS,
)

RANK_COLUMNS: tuple[str, ...] = (
    "trust",
    "quality_score",
    "event_time",
    "id",
    "source_ref",
    "partition",
    "product_row",
)
FATE_SCHEMA: dict[str, pl.DataType] = {
    "partition": pl.String(),
    "product_row": pl.Int64(),
    "reason": pl.String(),
    "kept_id": pl.String(),
    "eval_file": pl.String(),
}


@dataclass(frozen=True)
class Decisions:
    """The fate of every row: `FATE_SCHEMA` (reason null for published rows).

    `semantic_exact`: whether semantic dedup compared every pair of its rows exactly (at most
    `SEMANTIC_EXACT_LIMIT` near survivors in the run) rather than by LSH candidates.
    """

    fates: pl.DataFrame
    semantic_exact: bool = False

    def removed(self, reason: str) -> int:
        """Return how many rows were removed for `reason`."""
        return int((self.fates.get_column("reason") == reason).sum())

    @property
    def removal_counts(self) -> dict[str, int]:
        """Return rows removed per reason, in funnel order."""
        return {reason: self.removed(reason) for reason in REMOVAL_REASONS}


def rank_order(keys: pl.DataFrame) -> pl.DataFrame:
    """Return `keys` sorted into representative order (see the module docstring)."""
    return keys.sort(
        list(RANK_COLUMNS),
        descending=[True, True, False, False, False, False, False],
        nulls_last=True,
        maintain_order=True,
    )


def _code(reason: str) -> int:
    """Return the code of a removal reason (its position in `REMOVAL_REASONS`, plus one)."""
    return REMOVAL_REASONS.index(reason) + 1


def _follow(parent: np.ndarray) -> np.ndarray:
    """Return the root of every node of a forest given as parent pointers."""
    while True:
        grand = parent[parent]
        if np.array_equal(grand, parent):
            return parent
        parent = grand


class VectorSource(Protocol):
    """Where the full per-row vectors of the rows being decided are read from."""

    def fetch(self, column: str, rows: np.ndarray) -> np.ndarray:
        """Return the vectors (`signature` or `embedding`) of sorted distinct `rows`."""
        ...


@dataclass(frozen=True)
class ArraySource:
    """Full vectors held in memory, by column name (products computed in this process)."""

    columns: dict[str, np.ndarray]

    def fetch(self, column: str, rows: np.ndarray) -> np.ndarray:
        """Return the vectors of `rows`."""
        return self.columns[column][rows]


@dataclass(frozen=True)
class RowVectors:
    """The per-row arrays the decisions read; row i belongs to row i of the keys.

    Held for every row (compact, computed with the products once per row): `band_keys`, the
    MinHash signatures' LSH band keys (`near_keys`); `shingled`, whether the row has a shingle
    at all; `semantic_keys`, the embeddings' LSH bucket keys; `embedding_head` and
    `embedding_tail`, each embedding's bound parts (`lib.cosine_lsh.bound_parts`). The full
    signatures and embeddings are fetched from `source` (row i is its row `source_rows[i]`) only
    for the rows a candidate link needs, so history never has to be held whole.
    """

    band_keys: np.ndarray
    shingled: np.ndarray
    semantic_keys: np.ndarray
    embedding_head: np.ndarray
    embedding_tail: np.ndarray
    source: VectorSource
    source_rows: np.ndarray

    def take(self, rows: np.ndarray) -> RowVectors:
        """Return the vectors of `rows`, in that order."""
        return RowVectors(
            self.band_keys[rows],
            self.shingled[rows],
            self.semantic_keys[rows],
            self.embedding_head[rows],
            self.embedding_tail[rows],
            self.source,
            self.source_rows[rows],
        )

    def fetch(self, column: str, rows: np.ndarray) -> np.ndarray:
        """Return the full vectors (`signature` or `embedding`) of sorted distinct `rows`."""
        return self.source.fetch(column, self.source_rows[rows])


def near_keys(signatures: np.ndarray) -> np.ndarray:
    """Return the near-duplicate LSH band keys of MinHash signatures (the rules' bands and rows)."""
    return band_keys(signatures, LSH_BANDS, LSH_ROWS)


def semantic_keys(embeddings: np.ndarray) -> np.ndarray:
    """Return the semantic LSH bucket keys of embeddings (the rules' bands and bits)."""
    return lsh_keys(embeddings, SEMANTIC_LSH_BANDS, SEMANTIC_LSH_BITS)


def near_labels(vectors: RowVectors, members: np.ndarray, parts: int = 1) -> np.ndarray:
    """Return the near-duplicate component label of each member (rows `members`, in order).

    Signatures of `parts` interleaved parts are linked only when every part is near.
    """
    return near_components(
        vectors.shingled,
        vectors.band_keys,
        members,
        lambda rows: vectors.fetch("signature", rows),
        NEAR_DUPLICATE_MIN_ESTIMATE,
        parts=parts,
    )


def semantic_links(
    vectors: RowVectors, members: np.ndarray, *, exact: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Return links `(a, b)` between members whose embeddings have cosine > the rules' threshold.

    `exact`: nearest-neighbour search over every pair; otherwise random-hyperplane LSH with exact
    verification (`lib.cosine_lsh.member_pairs`, screened by the stored bound parts). `a, b` are
    member indexes.
    """
    return member_pairs(
        SEMANTIC_DUPLICATE_COSINE,
        exact_limit=len(members) if exact else 0,
        members=members,
        keys=vectors.semantic_keys,
        head=vectors.embedding_head,
        tail=vectors.embedding_tail,
        fetch=lambda rows: vectors.fetch("embedding", rows),
    )


def decide(
    keys: pl.DataFrame,
    vectors: RowVectors,
    parts: int = 1,
    *,
    semantic: bool = True,
    other_survivors: int = 0,
) -> Decisions:
    """Decide every row's fate; row i of `vectors` belongs to `keys` row i.

    `keys` holds the product key columns (`products.KEY_COLUMNS`) of the rows left after removal
    by subject. `parts` > 1 (configs in `rules.curation.NEAR_DUPLICATE_PARTS`): the signatures
    hold that many interleaved parts, each of which must be near for a near duplicate.
    `semantic=False` (`rules.curation.SEMANTIC_SKIPPED_CONFIGS`) skips semantic dedup. Semantic
    dedup is exact over all pairs when the run's near survivors — those of `keys` plus
    `other_survivors` decided elsewhere in the same run (`links.py`) — number at most
    `SEMANTIC_EXACT_LIMIT`, by LSH candidates above.
    """
    if keys.is_empty():
        exact = other_survivors <= SEMANTIC_EXACT_LIMIT
        return Decisions(pl.DataFrame(schema=FATE_SCHEMA), semantic and exact)
    read = [*RANK_COLUMNS, "content_hash", "contaminated_by", "gate_failed"]
    ordered = rank_order(keys.select(*read, pl.int_range(pl.len()).alias("input_row")))
    order = ordered.get_column("input_row").to_numpy()
    count = ordered.height
    # reason code per row: 0 published, i + 1 for REMOVAL_REASONS[i]
    reason = np.zeros(count, dtype=np.int8)

    # exact: the first-ranked row of each content hash
    first = ordered.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("position")).with_columns(
        pl.col("position").min().over(ordered.get_column("content_hash"))
    )
    parent = first.get_column("position").to_numpy().copy()
    reason[parent != np.arange(count)] = _code(EXACT_DUPLICATE)

    # near: components over the signatures of the exact survivors (positions in rank order)
    alive = np.flatnonzero(parent == np.arange(count))
    labels = near_labels(vectors, order[alive], parts)
    near = alive[labels] != alive
    parent[alive] = alive[labels]
    reason[alive[near]] = _code(NEAR_DUPLICATE)

    # semantic: components over the embeddings of the near survivors
    alive = alive[~near]
    exact = len(alive) + other_survivors <= SEMANTIC_EXACT_LIMIT
    if semantic:
        labels = components(len(alive), *semantic_links(vectors, order[alive], exact=exact))
        linked = alive[labels] != alive
        parent[alive] = alive[labels]
        reason[alive[linked]] = _code(SEMANTIC_DUPLICATE)
        alive = alive[~linked]
    contaminated = ordered.get_column("contaminated_by").is_not_null().to_numpy()
    dirty = alive[contaminated[alive]]
    reason[dirty] = _code(CONTAMINATED)
    gate = ordered.get_column("gate_failed").fill_null(False).to_numpy()
    failing = np.setdiff1d(alive[gate[alive]], dirty)
    reason[failing] = _code(BELOW_THRESHOLD)

    root = _follow(parent)
    labels = pl.Series("reason", [None, *REMOVAL_REASONS], dtype=pl.String)
    folded = pl.Series(root != np.arange(count))
    fates = ordered.select("partition", "product_row").with_columns(
        labels.gather(reason.astype(np.int64)),
        pl.when(folded)
        .then(ordered.get_column("id").gather(root))
        .otherwise(None)
        .alias("kept_id"),
        pl.when(pl.Series(reason == _code(CONTAMINATED)))
        .then(ordered.get_column("contaminated_by"))
        .otherwise(None)
        .alias("eval_file"),
    )
    return Decisions(fates.select(list(FATE_SCHEMA)).cast(FATE_SCHEMA), semantic and exact)
