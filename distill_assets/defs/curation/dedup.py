"""Exact-dedup keys: the normalized content of a row and its content hash.

The normalized key is built with Polars, hashed with SHA-256 in DuckDB
(`sql/curation/select_content_hashes.sql`); rules in `distill_assets.rules.curation`. Clustering
over all history is `decide.py`.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from distill_assets.lib.sql import connect, load_sql
from distill_assets.lib.text import map_text
from distill_assets.rules.curation import CONTENT_HASH_HEX_DIGITS, WHITESPACE_PATTERN


def normalize_text(text: pl.Expr) -> pl.Expr:
    """Lowercase, collapse whitespace runs to one space, trim."""
    return text.str.to_lowercase().str.replace_all(WHITESPACE_PATTERN, " ").str.strip_chars()


def content_key(core: Mapping[str, pl.DataType]) -> pl.Expr:
    """Return the normalized content of the `core` columns as one JSON string per row."""
    return pl.struct(
        map_text(pl.col(name), dtype, normalize_text).alias(name) for name, dtype in core.items()
    ).struct.json_encode()


def content_hashes(keys: pl.Series) -> pl.Series:
    """Return the content hash (`CONTENT_HASH_HEX_DIGITS` hex digits of sha256) of each key."""
    frame = pl.DataFrame(
        {"row_nr": pl.int_range(len(keys), eager=True, dtype=pl.Int64), "content_key": keys}
    )
    con = connect()
    try:
        con.register("curation_keys", frame)
        hashed = con.sql(
            load_sql("curation/select_content_hashes"),
            params={"hash_digits": CONTENT_HASH_HEX_DIGITS},
        ).pl()
    finally:
        con.close()
    return hashed.get_column("content_hash").cast(pl.String)
