"""Train/test splits that always work: stable group hashes, finer keys for oversized groups.

A row's split is a function of its split key: its group (`split_group`, or its `id`), or, for a
group holding more than `MAX_GROUP_SHARE` of a config of at least `MIN_ROWS_FOR_BOTH_SPLITS` rows,
`group/id` (a smaller config keeps its groups whole: it has no two-split guarantee anyway). A
config with at least `MIN_ROWS_FOR_BOTH_SPLITS` rows whose hashing left a split empty moves the
key with the lowest (or highest) bucket across. Each row records how it was split (`split_by`).
Rules and the hash: `distill_assets.rules.curation`; the hash runs in DuckDB
(`sql/curation/select_split_buckets.sql`).
"""

from __future__ import annotations

import polars as pl

from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules.curation import (
    MAX_GROUP_SHARE,
    MIN_ROWS_FOR_BOTH_SPLITS,
    SPLIT_BUCKETS,
    SPLIT_BY_GROUP,
    SPLIT_BY_MOVED,
    SPLIT_BY_ROW,
    TEST_SPLIT,
    TRAIN_SPLIT,
    buckets_in_test,
)


def split_buckets(keys: pl.DataFrame) -> pl.Series:
    """Return the bucket (0..SPLIT_BUCKETS-1) of each `split_key` of `keys`, in row order."""
    frame = keys.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("row_nr"), "split_key")
    con = connect()
    try:
        con.register("split_keys", frame)
        buckets = con.sql(
            load_sql("curation/select_split_buckets"), params={"buckets": SPLIT_BUCKETS}
        ).pl()
    finally:
        con.close()
    return buckets.get_column("bucket").cast(pl.Int64)


def _group() -> pl.Expr:
    """Return a row's split group: its `split_group`, or its `id` when the group is empty."""
    return (
        pl.when(pl.col("split_group").fill_null("") == "")
        .then(pl.col("id"))
        .otherwise(pl.col("split_group"))
    )


def key_buckets(rows: pl.DataFrame) -> pl.DataFrame:
    """Return `group_bucket, row_bucket`: the buckets of each row's two possible split keys.

    For rows holding `id, split_group` (same order): the bucket of the group key and of the finer
    `group/id` key. A row's buckets depend on the row alone, so they are computed once, with its
    curation product, and `assign_splits` only picks one per row.
    """
    keys = rows.select(_group().alias("group"), "id")
    both = pl.concat(
        [
            keys.select(pl.col("group").alias("split_key")),
            keys.select((pl.col("group") + "/" + pl.col("id")).alias("split_key")),
        ]
    )
    buckets = split_buckets(both)  # one hashing pass: the group keys, then the row keys
    return pl.DataFrame(
        [
            buckets.head(rows.height).alias("group_bucket"),
            buckets.tail(rows.height).alias("row_bucket"),
        ]
    )


def assign_splits(rows: pl.DataFrame) -> pl.DataFrame:
    """Return `split, split_by` for rows holding `id, split_group` (same order).

    Rows that also hold `group_bucket, row_bucket` (`key_buckets`) are not hashed again. See the
    module docstring; the result depends only on the set of rows, never on their order.
    """
    if rows.is_empty():
        return pl.DataFrame(schema={"split": pl.String(), "split_by": pl.String()})
    if "group_bucket" not in rows.columns:
        rows = pl.concat([rows, key_buckets(rows)], how="horizontal")
    keyed = rows.select("id", "group_bucket", "row_bucket", _group().alias("group")).with_columns(
        (
            (pl.len() >= MIN_ROWS_FOR_BOTH_SPLITS)
            & (pl.len().over("group") > MAX_GROUP_SHARE * pl.len())
        ).alias("oversized")
    )
    keyed = keyed.with_columns(
        pl.when("oversized")
        .then(pl.col("group") + "/" + pl.col("id"))
        .otherwise("group")
        .alias("split_key"),
        pl.when("oversized")
        .then(pl.lit(SPLIT_BY_ROW))
        .otherwise(pl.lit(SPLIT_BY_GROUP))
        .alias("split_by"),
        pl.when("oversized")
        .then(pl.col("row_bucket"))
        .otherwise(pl.col("group_bucket"))
        .alias("bucket"),
    )
    keyed = keyed.with_columns((pl.col("bucket") < buckets_in_test()).alias("in_test"))
    if keyed.height >= MIN_ROWS_FOR_BOTH_SPLITS:
        keyed = _fill_empty_split(keyed)
    return keyed.select(
        pl.when("in_test").then(pl.lit(TEST_SPLIT)).otherwise(pl.lit(TRAIN_SPLIT)).alias("split"),
        "split_by",
    )


def _fill_empty_split(keyed: pl.DataFrame) -> pl.DataFrame:
    """Move the lowest-bucket key to `test` (or the highest to `train`) when a split is empty."""
    tests = int(keyed.get_column("in_test").sum())
    if 0 < tests < keyed.height:
        return keyed
    keys = keyed.select("bucket", "split_key").unique().sort("bucket", "split_key")
    if keys.height < 2:
        return keyed
    moved = keys.row(0 if tests == 0 else keys.height - 1, named=True)["split_key"]
    return keyed.with_columns(
        pl.when(pl.col("split_key") == moved)
        .then(pl.col("in_test").not_())
        .otherwise("in_test")
        .alias("in_test"),
        pl.when(pl.col("split_key") == moved)
        .then(pl.lit(SPLIT_BY_MOVED))
        .otherwise("split_by")
        .alias("split_by"),
    )
