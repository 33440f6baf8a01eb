"""Export history and the seed's SQLite database (`distilled/distillation.db`).

Export history: after each publish, the published escalation rows' `metadata.example_id`s are
recorded with the version (`escalations/export_history`, one row per version and example). So
`export_count` = the number of published versions an example appeared in and `last_exported_at` =
the newest of those versions' input dates as unix seconds (midnight UTC of the release's newest
partition) — data, never the wall clock, so published bytes stay deterministic.

The SQLite database holds every example (review decisions applied, the latest partition's row per
id) in exactly the seed's `CREATE TABLE distillation_examples` and five indexes
(`contracts.escalations.SEED_SQLITE_DDL`), JSON columns as TEXT. It is built in a temporary file
and renamed into place, so a reader never sees a half-written database.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import polars as pl

from distill_assets.contracts.escalations import (
    SEED_SQLITE_COLUMNS,
    SEED_SQLITE_DDL,
    SEED_SQLITE_JSON_COLUMNS,
)

SOURCE = "escalations"
HISTORY_SCHEMA = pl.Schema(
    {"version": pl.String(), "example_id": pl.String(), "exported_at": pl.Float64()}
)


def release_rows(version: str, newest_partition: str | None, rows: pl.DataFrame) -> pl.DataFrame:
    """Return the history rows of one published version from its rows (`source`, `metadata`)."""
    exported_at = (
        pl.lit(newest_partition).str.to_date().dt.epoch("s").cast(pl.Float64)
        if newest_partition
        else pl.lit(0.0)
    )
    if rows.is_empty():
        return pl.DataFrame(schema=HISTORY_SCHEMA)
    return (
        rows.filter(pl.col("source") == SOURCE)
        .select(
            pl.lit(version).alias("version"),
            pl.col("metadata").str.json_path_match("$.example_id").alias("example_id"),
            exported_at.alias("exported_at"),
        )
        .drop_nulls("example_id")
        .unique(["version", "example_id"])
        .sort("version", "example_id")
    )


def merge_history(history: pl.DataFrame, published: pl.DataFrame) -> pl.DataFrame:
    """Add a version's rows unless that version is already recorded (a re-run adds nothing)."""
    known = set(history.get_column("version").to_list())
    new = published.filter(~pl.col("version").is_in(list(known)))
    return pl.concat([history, new]).sort("version", "example_id")


def with_export_counts(examples: pl.DataFrame, history: pl.DataFrame) -> pl.DataFrame:
    """Set `export_count` and `last_exported_at` of each example from the history."""
    counts = history.group_by("example_id").agg(
        pl.len().cast(pl.Int64).alias("_count"), pl.col("exported_at").max().alias("_last")
    )
    return (
        examples.join(
            counts, left_on="id", right_on="example_id", how="left", maintain_order="left"
        )
        .with_columns(
            pl.col("_count").fill_null(0).alias("export_count"),
            pl.col("_last").alias("last_exported_at"),
        )
        .drop("_count", "_last")
    )


def _json_text(column: str) -> pl.Expr:
    wrapped = pl.struct(pl.col(column).alias("v")).struct.json_encode()
    text = wrapped.str.strip_prefix('{"v":').str.strip_suffix("}")
    return pl.when(pl.col(column).is_null()).then(None).otherwise(text).alias(column)


def write_seed_sqlite(examples: pl.DataFrame, path: Path) -> int:
    """Write `examples` into a fresh seed-schema SQLite database at `path`; return the rows."""
    latest = examples.sort("partition", "id").unique("id", keep="last", maintain_order=True)
    table = latest.select(
        *(
            _json_text(c) if c in SEED_SQLITE_JSON_COLUMNS else pl.col(c)
            for c in SEED_SQLITE_COLUMNS
        )
    ).sort("created_at", "id")
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".distillation-", suffix=".db", dir=path.parent)
    os.close(handle)
    try:
        con = sqlite3.connect(tmp)
        try:
            con.executescript(SEED_SQLITE_DDL)
            marks = ", ".join("?" * len(SEED_SQLITE_COLUMNS))
            con.executemany(
                f"INSERT INTO distillation_examples VALUES ({marks})", table.iter_rows()
            )
            con.commit()
        finally:
            con.close()
        Path(tmp).replace(path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return table.height
