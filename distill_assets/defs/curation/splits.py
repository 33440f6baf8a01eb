"""Honest train/test splits, decided once over the published rows of every config.

A row's split group is its `split_group` (its `id` when empty). Groups are merged (connected
components of one graph over every config's published rows) when their rows share a normalized
prompt (`prompt_text`: the text a model is asked; rows of one config or of several with the same
prompt) or a source record (`source`, `source_ref`: the same trace step in `sft` and
`sft_tools`, the same escalation in `dpo` and `correction`). The merged group is named by its
smallest member, and the split is a function of that name alone: `test` when its bucket
(`group_bucket`) is below `buckets_in_test()`. So a source record sits in one split in every
config built from it, identical prompts never straddle splits in any config, and a split a
config's groups do not reach stays empty (no moved keys, no finer keys for large groups). Each
row records how its group was formed (`split_by`: `group`, or `merged` when its group was joined
with another). Rules: `distill_assets.rules.curation`; the hash runs in DuckDB
(`sql/curation/select_split_buckets.sql`).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from distill_assets.defs.curation.dedup import content_hashes, normalize_text
from distill_assets.lib.minhash import components
from distill_assets.lib.sql import connect, load_sql
from distill_assets.lib.text import joined_text
from distill_assets.rules.curation import (
    NEAR_DUPLICATE_SKIPPED_FIELDS,
    SPLIT_BUCKETS,
    SPLIT_BY_GROUP,
    SPLIT_BY_MERGED,
    SPLIT_PROMPT_COLUMNS,
    TEST_SPLIT,
    TRAIN_SPLIT,
    buckets_in_test,
)

# the keys through which groups are merged (module docstring)
MERGE_KEYS: tuple[str, ...] = ("prompt_key", "source", "source_ref")


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
    """Return the content hash of each normalized prompt; null for a null or empty prompt.

    An empty prompt links no rows (the release check does not judge it either).
    """
    hashed = content_hashes(texts.fill_null(""))
    empty = texts.fill_null("") == ""
    return pl.select(pl.when(empty).then(None).otherwise(hashed)).to_series()


def key_buckets(rows: pl.DataFrame) -> pl.DataFrame:
    """Return `group_bucket`: the bucket of each row's group (rows hold `id, split_group`).

    A row's bucket depends on the row alone, so it is computed once, with its curation product.
    """
    keys = rows.select(_group().alias("split_key"))
    return pl.DataFrame([split_buckets(keys).alias("group_bucket")])


def merged_groups(rows: pl.DataFrame) -> pl.Series:
    """Return each row's merged group: the smallest group linked to it through shared keys.

    For rows holding `group`, `prompt_key`, `source` and `source_ref` (a null key links nothing).
    Groups (numbered in name order, so the smallest number is the smallest name), prompts and
    records are the nodes, each row an edge from its group to its prompt and to its record; the
    labels are the graph's connected components (`lib.minhash.components`, vectorized).
    """
    numbered = rows.select(
        pl.col("group"),
        pl.col("prompt_key").alias("prompt"),
        pl.when(pl.col("source").is_not_null() & pl.col("source_ref").is_not_null())
        .then(pl.struct("source", "source_ref"))
        .alias("record"),
    ).with_columns(
        (pl.col("group").rank("dense") - 1).cast(pl.Int64).alias("group_node"),
        pl.col("prompt").rank("dense").cast(pl.Int64).alias("prompt_node"),
        pl.col("record").rank("dense").cast(pl.Int64).alias("record_node"),
    )
    groups = int(numbered.get_column("group_node").max() or 0) + 1
    prompts = int(numbered.get_column("prompt_node").max() or 0)
    records = int(numbered.get_column("record_node").max() or 0)
    prompt_edges = numbered.filter(pl.col("prompt_node").is_not_null())
    record_edges = numbered.filter(pl.col("record_node").is_not_null())
    a = np.concatenate(
        [
            prompt_edges.get_column("group_node").to_numpy(),
            record_edges.get_column("group_node").to_numpy(),
        ]
    )
    b = np.concatenate(
        [
            prompt_edges.get_column("prompt_node").to_numpy() + groups - 1,
            record_edges.get_column("record_node").to_numpy() + groups + prompts - 1,
        ]
    )
    labels = components(groups + prompts + records, a, b)
    names = numbered.select("group", "group_node").unique("group_node").sort("group_node")
    merged = labels[numbered.get_column("group_node").to_numpy()]
    return names.get_column("group").gather(merged).alias("merged")


def assign_splits(rows: pl.DataFrame) -> pl.DataFrame:
    """Return `split, split_by` for rows holding `id, split_group` (and maybe the merge keys).

    The merge keys are `prompt_key`, `source` and `source_ref` (absent: nothing to merge
    through); rows may be of several configs, which are then split as one (module docstring).
    Rows that also hold `group_bucket` (`key_buckets`) are not hashed again. The result depends
    only on the set of rows, never on their order.
    """
    if rows.is_empty():
        return pl.DataFrame(schema={"split": pl.String(), "split_by": pl.String()})
    if "group_bucket" not in rows.columns:
        rows = pl.concat([rows, key_buckets(rows)], how="horizontal")
    missing = [c for c in MERGE_KEYS if c not in rows.columns]
    rows = rows.with_columns(pl.lit(None, dtype=pl.String).alias(c) for c in missing)
    keyed = rows.select("group_bucket", *MERGE_KEYS, _group().alias("group"))
    keyed = keyed.with_columns(merged_groups(keyed))
    buckets = keyed.select(pl.col("group").alias("merged"), "group_bucket").unique("merged")
    keyed = keyed.drop("group_bucket").join(buckets, on="merged", how="left", maintain_order="left")
    return keyed.select(
        pl.when(pl.col("group_bucket") < buckets_in_test())
        .then(pl.lit(TEST_SPLIT))
        .otherwise(pl.lit(TRAIN_SPLIT))
        .alias("split"),
        pl.when(pl.col("merged") == pl.col("group"))
        .then(pl.lit(SPLIT_BY_GROUP))
        .otherwise(pl.lit(SPLIT_BY_MERGED))
        .alias("split_by"),
    )
