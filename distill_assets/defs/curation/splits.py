"""Honest train/test splits: one split per group, groups merged through identical prompts.

A row's split group is its `split_group` (its `id` when empty). Groups whose rows share a
normalized prompt (`prompt_text`: the text a model is asked, per config) are merged into one
(connected components; the merged group is named by its smallest member), so identical prompts
never straddle splits. The split is a function of the merged group alone: `test` when the bucket
of its name (`group_bucket`) is below `buckets_in_test()`. Nothing depends on the other rows of
the config (no finer keys for large groups, no moved keys), so a source record sits in one split
in every config built from it (a trace step: the same task group in `sft` and `sft_tools`), and
a split a config's groups do not reach stays empty. Each row records how its group was formed
(`split_by`: `group`, or `prompt` when merged). Rules: `distill_assets.rules.curation`; the hash
runs in DuckDB (`sql/curation/select_split_buckets.sql`).
"""

from __future__ import annotations

import polars as pl

from distill_assets.defs.curation.dedup import content_hashes, normalize_text
from distill_assets.lib.sql import connect, load_sql
from distill_assets.lib.text import joined_text
from distill_assets.rules.curation import (
    NEAR_DUPLICATE_SKIPPED_FIELDS,
    SPLIT_BUCKETS,
    SPLIT_BY_GROUP,
    SPLIT_BY_PROMPT,
    SPLIT_PROMPT_COLUMNS,
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


def prompt_text(config: str, schema: pl.Schema) -> pl.Expr:
    """Return a row's normalized prompt (`SPLIT_PROMPT_COLUMNS`), null for a config without one.

    For `messages` the last message (the target) is left out; roles, ids and tool schemas are
    not text (`NEAR_DUPLICATE_SKIPPED_FIELDS`).
    """
    columns = SPLIT_PROMPT_COLUMNS.get(config, ())
    if not columns:
        return pl.lit(None, dtype=pl.String)
    parts = []
    for name in columns:
        expr, dtype = pl.col(name), schema[name]
        if name == "messages":
            expr = expr.list.slice(0, expr.list.len() - 1)
        parts.append(joined_text(expr, dtype, skipped_fields=NEAR_DUPLICATE_SKIPPED_FIELDS))
    return normalize_text(pl.concat_str(parts, separator="\n"))


def prompt_hashes(texts: pl.Series) -> pl.Series:
    """Return the content hash of each normalized prompt (null stays null)."""
    hashed = content_hashes(texts.fill_null(""))
    return pl.select(pl.when(texts.is_null()).then(None).otherwise(hashed)).to_series()


def key_buckets(rows: pl.DataFrame) -> pl.DataFrame:
    """Return `group_bucket`: the bucket of each row's group (rows hold `id, split_group`).

    A row's bucket depends on the row alone, so it is computed once, with its curation product.
    """
    keys = rows.select(_group().alias("split_key"))
    return pl.DataFrame([split_buckets(keys).alias("group_bucket")])


def merged_groups(rows: pl.DataFrame) -> pl.Series:
    """Return each row's merged group: the smallest group reachable through shared prompts.

    For rows holding `group` and `prompt_key` (null: the row links nothing). Label propagation
    (min over prompt, then over group) until nothing changes: the connected components of the
    group-prompt graph.
    """
    frame = rows.select("group", "prompt_key").with_columns(pl.col("group").alias("label"))
    while True:
        spread = frame.with_columns(
            pl.when(pl.col("prompt_key").is_not_null())
            .then(pl.col("label").min().over("prompt_key"))
            .otherwise(pl.col("label"))
            .alias("label")
        ).with_columns(pl.col("label").min().over("group"))
        if spread.get_column("label").equals(frame.get_column("label")):
            return spread.get_column("label")
        frame = spread


def assign_splits(rows: pl.DataFrame) -> pl.DataFrame:
    """Return `split, split_by` for rows holding `id, split_group` (and maybe `prompt_key`).

    Rows that also hold `group_bucket` (`key_buckets`) are not hashed again. See the module
    docstring; the result depends only on the set of rows, never on their order.
    """
    if rows.is_empty():
        return pl.DataFrame(schema={"split": pl.String(), "split_by": pl.String()})
    if "group_bucket" not in rows.columns:
        rows = pl.concat([rows, key_buckets(rows)], how="horizontal")
    if "prompt_key" not in rows.columns:
        rows = rows.with_columns(pl.lit(None, dtype=pl.String).alias("prompt_key"))
    keyed = rows.select("group_bucket", "prompt_key", _group().alias("group"))
    keyed = keyed.with_columns(merged_groups(keyed).alias("merged"))
    buckets = keyed.select(pl.col("group").alias("merged"), "group_bucket").unique("merged")
    keyed = keyed.drop("group_bucket").join(buckets, on="merged", how="left", maintain_order="left")
    return keyed.select(
        pl.when(pl.col("group_bucket") < buckets_in_test())
        .then(pl.lit(TEST_SPLIT))
        .otherwise(pl.lit(TRAIN_SPLIT))
        .alias("split"),
        pl.when(pl.col("merged") == pl.col("group"))
        .then(pl.lit(SPLIT_BY_GROUP))
        .otherwise(pl.lit(SPLIT_BY_PROMPT))
        .alias("split_by"),
    )
