"""Action tokenization of trajectory steps (rules: `rules/action_tokens.py`).

See docs/sources/telemetry.md#action-tokens.

Steps are exploded into one row per `action_details` key (DuckDB, payload key order kept), each
key gets its axis, a value normalised to [-1, 1], Gaussian-smoothed along its episode's steps and
binned into one token; the tokens are collected back per step in axis order. All Polars
expressions: no per-row Python.
"""

from __future__ import annotations

import math

import polars as pl

from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules import action_tokens as rules

_ALL_AXES = (1 << rules.AXES) - 1


def _free_axis_table() -> pl.DataFrame:
    """Return (taken axes bitmask, rank) -> the rank-th free axis, for every mask of AXES bits."""
    rows = []
    for mask in range(_ALL_AXES + 1):
        free = [axis for axis in range(rules.AXES) if not mask & (1 << axis)]
        rows += [(mask, rank, axis) for rank, axis in enumerate(free)]
    return pl.DataFrame(
        rows, schema={"taken": pl.Int64, "free_rank": pl.Int64, "free_axis": pl.Int64}, orient="row"
    )


def _named_axes() -> pl.DataFrame:
    rows = [
        (category, key, axis)
        for category, keys in rules.AXIS_OF_KEY.items()
        for key, axis in keys.items()
    ]
    return pl.DataFrame(
        rows, schema={"category": pl.String, "key": pl.String, "named_axis": pl.Int64}, orient="row"
    )


def _ranges() -> pl.DataFrame:
    rows = [(key, lo, hi) for key, (lo, hi) in rules.VALUE_RANGES.items()]
    return pl.DataFrame(
        rows, schema={"key": pl.String, "lo": pl.Float64, "hi": pl.Float64}, orient="row"
    )


def action_values(steps: pl.DataFrame) -> pl.DataFrame:
    """Return one row per step (`row_nr`) and action key: key_pos, key, value (DuckDB)."""
    con = connect()
    try:
        con.register("steps", steps.select("row_nr", "action_details").to_arrow())
        table = con.sql(load_sql("telemetry/select_action_values")).to_arrow_table()
    finally:
        con.close()
    return pl.from_arrow(table).cast(
        {"row_nr": pl.Int64, "key_pos": pl.Int64, "key": pl.String, "value": pl.Float64}
    )


def assign_axes(values: pl.DataFrame, categories: pl.DataFrame) -> pl.DataFrame:
    """Give each (row_nr, key) its axis, or null when no axis is free (see the rules docstring).

    `categories`: row_nr, category. A named axis goes to the first key (by key_pos) naming it;
    the other keys take the free axes in key order.
    """
    named = (
        values.join(categories, on="row_nr", how="left")
        .join(_named_axes(), on=["category", "key"], how="left")
        .sort("row_nr", "key_pos")
        .with_columns(
            pl.when(pl.col("named_axis").is_not_null())
            .then(pl.col("key_pos").rank("ordinal").over("row_nr", "named_axis") == 1)
            .otherwise(False)
            .alias("owns_axis")
        )
        .with_columns(pl.when("owns_axis").then(pl.col("named_axis")).alias("named_axis"))
    )
    taken = named.group_by("row_nr").agg(
        pl.lit(2.0).pow(pl.col("named_axis")).sum().cast(pl.Int64).alias("taken")
    )
    unnamed = (
        named.filter(pl.col("named_axis").is_null())
        .with_columns(
            (pl.col("key_pos").rank("ordinal").over("row_nr") - 1).cast(pl.Int64).alias("free_rank")
        )
        .join(taken, on="row_nr", how="left")
        .join(_free_axis_table(), on=["taken", "free_rank"], how="left")
        .select("row_nr", "key_pos", "free_axis")
    )
    return (
        named.join(unnamed, on=["row_nr", "key_pos"], how="left")
        .with_columns(pl.coalesce("named_axis", "free_axis").alias("axis"))
        .select("row_nr", "key_pos", "key", "value", "axis")
    )


def normalise(values: pl.DataFrame) -> pl.DataFrame:
    """Map each value to [-1, 1]: linearly from its documented range, else as is; clipped."""
    ranged = values.join(_ranges(), on="key", how="left")
    scaled = (
        pl.when(pl.col("lo").is_not_null() & (pl.col("hi") > pl.col("lo")))
        .then((pl.col("value") - pl.col("lo")) / (pl.col("hi") - pl.col("lo")) * 2.0 - 1.0)
        .otherwise(pl.col("value"))
    )
    return ranged.with_columns(scaled.clip(-1.0, 1.0).alias("normalised")).drop("lo", "hi")


def gaussian_weights() -> list[float]:
    """Return the kernel weights for offsets -RADIUS..RADIUS (not normalised)."""
    sigma, radius = rules.SMOOTHING_SIGMA, rules.SMOOTHING_RADIUS
    return [math.exp(-(d * d) / (2.0 * sigma * sigma)) for d in range(-radius, radius + 1)]


def smooth(values: pl.DataFrame) -> pl.DataFrame:
    """Gaussian-smooth `normalised` per (episode_id, key) along step_index into `smoothed`.

    Weights are renormalised over the neighbours present, so a constant signal is unchanged.
    """
    window = ("episode_id", "key")
    radius = rules.SMOOTHING_RADIUS
    weighted, totals = [], []
    for weight, offset in zip(gaussian_weights(), range(-radius, radius + 1), strict=True):
        neighbour = pl.col("normalised").shift(-offset).over(window, order_by="step_index")
        weighted.append((neighbour * weight).fill_null(0.0))
        totals.append(pl.when(neighbour.is_not_null()).then(weight).otherwise(0.0))
    return values.with_columns(
        (pl.sum_horizontal(weighted) / pl.sum_horizontal(totals)).clip(-1.0, 1.0).alias("smoothed")
    )


def token(axis: pl.Expr, value: pl.Expr) -> pl.Expr:
    """Return the token of a value in [-1, 1] on an axis: axis * BINS + its uniform bin."""
    bins = rules.BINS
    bin_ = ((value + 1.0) / 2.0 * bins).floor().cast(pl.Int64).clip(0, bins - 1)
    return axis.cast(pl.Int64) * bins + bin_


def decode_token(token_: int) -> tuple[int, float]:
    """Return (axis, value) of a token: the value is the centre of its bin in [-1, 1].

    PAD_TOKEN (an axis no key took) is outside the vocabulary and raises like any other.
    """
    if not 0 <= token_ < rules.VOCAB_SIZE:
        raise ValueError(f"token {token_} outside [0, {rules.VOCAB_SIZE})")
    axis, bin_ = divmod(token_, rules.BINS)
    return axis, (bin_ + 0.5) / rules.BINS * 2.0 - 1.0


def denormalise(key: str, value: float) -> float:
    """Map a decoded [-1, 1] value back to the key's documented range (identity without one)."""
    if key not in rules.VALUE_RANGES:
        return value
    lo, hi = rules.VALUE_RANGES[key]
    return lo + (value + 1.0) / 2.0 * (hi - lo)


def tokenize_steps(steps: pl.DataFrame) -> pl.DataFrame:
    """Add `action_tokens` (TOKENS_PER_STEP ints, one per axis) and `action_flag` to steps.

    `steps`: episode_id, step_index, action_type, action_details (JSON object text). Entry i of
    `action_tokens` is axis i's token, PAD_TOKEN when no key took axis i. The flag is
    `too_many_action_keys` when a step had more keys than axes, else null.
    """
    indexed = steps.with_row_index("row_nr").with_columns(pl.col("row_nr").cast(pl.Int64))
    categories = indexed.select(
        "row_nr",
        pl.col("action_type")
        .replace_strict(rules.CATEGORY_OF_ACTION_TYPE, default=None, return_dtype=pl.String)
        .alias("category"),
    )
    values = assign_axes(action_values(indexed), categories)
    keyed = values.join(
        indexed.select("row_nr", "episode_id", "step_index"), on="row_nr", how="left"
    )
    smoothed = smooth(normalise(keyed))
    tokens = smoothed.filter(pl.col("axis").is_not_null()).select(
        "row_nr", "axis", token(pl.col("axis"), pl.col("smoothed")).alias("action_token")
    )
    axes = pl.DataFrame({"axis": list(range(rules.TOKENS_PER_STEP))}, schema={"axis": pl.Int64})
    padded = (
        indexed.select("row_nr")
        .join(axes, how="cross")
        .join(tokens, on=["row_nr", "axis"], how="left")
        .sort("row_nr", "axis")
        .group_by("row_nr", maintain_order=True)
        .agg(pl.col("action_token").fill_null(rules.PAD_TOKEN).alias("action_tokens"))
    )
    overflow = smoothed.group_by("row_nr").agg(pl.col("axis").is_null().any().alias("overflow"))
    return (
        indexed.join(padded, on="row_nr", how="left")
        .join(overflow, on="row_nr", how="left")
        .sort("row_nr")
        .with_columns(
            pl.when(pl.col("overflow").fill_null(False))
            .then(pl.lit(rules.TOO_MANY_KEYS_FLAG))
            .otherwise(pl.lit(None, dtype=pl.String))
            .alias("action_flag"),
        )
        .drop("row_nr", "overflow")
    )
