"""Exact dedup on a normalized-content hash and hash-based train/test splits.

Both are global over all history and independent of input order: a cluster's representative and
a row's split are functions of row content only (rules and hash in `distill_assets.rules.curation`).
The normalized key is built with Polars; hashing and ranking run in DuckDB
(`sql/curation/select_duplicate_clusters.sql`, `sql/curation/select_split_assignments.sql`).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from distill_assets.defs.curation.text import map_text
from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules.curation import (
    CONTENT_HASH_HEX_DIGITS,
    SPLIT_BUCKETS,
    TEST_SPLIT,
    TRAIN_SPLIT,
    WHITESPACE_PATTERN,
    buckets_in_test,
)


def normalize_text(text: pl.Expr) -> pl.Expr:
    """Lowercase, collapse whitespace runs to one space, trim."""
    return text.str.to_lowercase().str.replace_all(WHITESPACE_PATTERN, " ").str.strip_chars()


def content_key(core: Mapping[str, pl.DataType]) -> pl.Expr:
    """Return the normalized content of the `core` columns as one JSON string per row."""
    return pl.struct(
        map_text(pl.col(name), dtype, normalize_text).alias(name) for name, dtype in core.items()
    ).struct.json_encode()


def _run(sql_name: str, table: str, frame: pl.DataFrame, params: dict[str, object]) -> pl.DataFrame:
    con = connect()
    try:
        con.register(table, frame)
        return con.sql(load_sql(sql_name), params=params).pl()
    finally:
        con.close()


def duplicate_clusters(keys: pl.DataFrame) -> pl.DataFrame:
    """Rank rows within exact-duplicate clusters.

    `keys` holds `row_nr, id, source_ref, quality_score, event_time, content_key`; the result holds
    `row_nr, content_hash, kept_id, cluster_rank` (rank 1 is the representative), by `row_nr`.
    """
    return _run(
        "curation/select_duplicate_clusters",
        "curation_keys",
        keys,
        {"hash_digits": CONTENT_HASH_HEX_DIGITS},
    ).with_columns(pl.col("row_nr").cast(keys.schema["row_nr"]))


def split_assignments(keys: pl.DataFrame) -> pl.DataFrame:
    """Assign `train`/`test` to rows holding `row_nr, id, split_group`; returns `row_nr, split`."""
    return _run(
        "curation/select_split_assignments",
        "split_keys",
        keys,
        {
            "buckets": SPLIT_BUCKETS,
            "test_buckets": buckets_in_test(),
            "test_split": TEST_SPLIT,
            "train_split": TRAIN_SPLIT,
        },
    ).with_columns(pl.col("row_nr").cast(keys.schema["row_nr"]))
