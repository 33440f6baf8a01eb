"""Stable hashes for ids, dedup keys and splits (DESIGN rule 8).

Never Polars' `.hash()`: its values change between versions. Row ids are the first 16 hex digits
of SHA-256 over the fields joined by the unit separator (U+001F), computed in DuckDB for whole
columns; `stable_id` is the same function for one value in Python, and the two agree.
"""

from __future__ import annotations

import hashlib

import polars as pl

from distill_assets.lib.sql import connect

FIELD_SEPARATOR = "\x1f"
ID_HEX_DIGITS = 16


def stable_id(*parts: object) -> str:
    """Return sha256(parts joined by U+001F)[:16] for one record (None joins as "")."""
    text = FIELD_SEPARATOR.join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:ID_HEX_DIGITS]


def with_stable_id(frame: pl.DataFrame, columns: list[str], name: str = "id") -> pl.DataFrame:
    """Add column `name` = `stable_id(*row[columns])` for every row, vectorized in DuckDB."""
    if frame.height == 0:
        return frame.with_columns(pl.lit(None, dtype=pl.String).alias(name))
    joined = " || chr(31) || ".join(f"coalesce(CAST(\"{c}\" AS VARCHAR), '')" for c in columns)
    con = connect()
    try:
        con.register("frame", frame)
        query = f"SELECT left(sha256({joined}), {ID_HEX_DIGITS}) AS id FROM frame"
        ids = pl.from_arrow(con.sql(query).to_arrow_table())
    finally:
        con.close()
    return frame.with_columns(ids.get_column("id").alias(name))


def split_bucket(group_key: str, buckets: int = 10_000) -> int:
    """Return a stable bucket in [0, buckets) for a group key (used to assign splits)."""
    digest = hashlib.sha256(group_key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % buckets


def with_stable_bucket(
    frame: pl.DataFrame, column: str, salt: str, buckets: int, name: str = "bucket"
) -> pl.DataFrame:
    """Add `name` = `split_bucket(salt + row[column], buckets)` for every row, vectorized in DuckDB.

    Used for sampling by a stable hash (never `random`): a row is in a rate-r sample when its
    bucket is below r * buckets; different salts give independent samples of the same rows.
    """
    if frame.height == 0:
        return frame.with_columns(pl.lit(None, dtype=pl.Int64).alias(name))
    con = connect()
    try:
        con.register("frame", frame.select(column))
        query = (
            f"SELECT CAST(('0x' || left(sha256($salt || coalesce(CAST(\"{column}\" AS VARCHAR), "
            f"'')), 16))::UBIGINT % $buckets AS BIGINT) AS bucket FROM frame"
        )
        values = pl.from_arrow(
            con.sql(query, params={"salt": salt, "buckets": buckets}).to_arrow_table()
        )
    finally:
        con.close()
    return frame.with_columns(values.get_column("bucket").alias(name))
