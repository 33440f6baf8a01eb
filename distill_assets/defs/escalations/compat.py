"""Export history and the seed's SQLite database (`distilled/distillation.db`).

Export history: after each publish, the published escalation rows' `metadata.example_id`s are
recorded with the version (`escalations/export_history`, one row per version and example). So
`export_count` = the number of published versions an example appeared in and `last_exported_at` =
the newest of those versions' input dates as unix seconds (midnight UTC of the release's newest
partition) — data, never the wall clock, so published bytes stay deterministic.

The SQLite database holds every example (review decisions applied, the latest partition's row per
id) in exactly the seed's `CREATE TABLE distillation_examples` and five indexes
(`contracts.escalations.SEED_SQLITE_DDL`), JSON columns as TEXT. It is built in a temporary file
and renamed into place, so a reader never sees a half-written database (a crash leaves the
previous file). It also holds `working_store`'s change log: reviews, edits and rows others make
in it are read back before the next rewrite. It is written in two steps (seed_database.py):
staged beside curation, finished after the publish.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterable
from pathlib import Path

import polars as pl

from distill_assets.contracts.escalations import (
    SEED_SQLITE_COLUMNS,
    SEED_SQLITE_DDL,
    SEED_SQLITE_JSON_COLUMNS,
)
from distill_assets.defs.escalations.working_store import install_change_log
from distill_assets.lib.sql import connect

SOURCE = "escalations"
# rows DuckDB hands SQLite at a time, and SQLite's page cache while it inserts them (KiB)
INSERT_BATCH_ROWS = 50_000
SQLITE_CACHE_KIB = 256 * 1024
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


def write_seed_sqlite(
    batches: Iterable[pl.DataFrame],
    path: Path,
    kept: pl.DataFrame | None = None,
    *,
    change_log: bool = True,
) -> int:
    """Write examples into a fresh seed-schema SQLite database at `path`; return the rows.

    `kept` (seed columns) are rows to keep as they are when no example has their id: the rows
    another writer inserted that the lake has not ingested yet. The file ends with the change
    log of `working_store` installed, so changes made to it later are read back (with
    `change_log` False it is left out: a staged file installs it when finished, seed_database.py).

    `batches` hold every partition's examples (`SEED_SQLITE_COLUMNS` and `partition`, review
    decisions and export counts applied), in any number of batches. They are staged as Parquet
    files in a scratch folder next to `path`; DuckDB keeps the latest partition's row per id (of
    two in one partition, the later batch's) and orders them by (`created_at`, `id`), spilling
    to disk past its memory limit, and SQLite takes them in that order a batch at a time, so
    memory holds one batch however long the history. The table's secondary indexes are built
    once the rows are in (one sort each, not a B-tree insert per row). No batch at all gives an
    empty database.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".distillation-", suffix=".db", dir=path.parent)
    os.close(handle)
    staged = Path(f"{tmp}.staged")
    table, indexes = _seed_table_and_indexes()
    try:
        files = _stage_batches(batches, staged)
        con = sqlite3.connect(tmp)
        try:
            con.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
            con.executescript(table)
            written = _insert_latest(con, files, staged)
            if kept is not None and not kept.is_empty():
                # read from the database: JSON columns are TEXT already
                rows = kept.select(SEED_SQLITE_COLUMNS)
                marks = ", ".join("?" * len(SEED_SQLITE_COLUMNS))
                written += con.executemany(
                    f"INSERT OR IGNORE INTO distillation_examples VALUES ({marks})",
                    rows.iter_rows(),
                ).rowcount
            con.commit()
            con.executescript(indexes)
            if change_log:
                install_change_log(con)
            con.commit()
        finally:
            con.close()
        Path(tmp).replace(path)
    finally:
        Path(tmp).unlink(missing_ok=True)
        shutil.rmtree(staged, ignore_errors=True)
    return written


def _seed_table_and_indexes() -> tuple[str, str]:
    """Split `SEED_SQLITE_DDL` into its `CREATE TABLE` and its `CREATE INDEX` statements."""
    statements = [s.strip() for s in SEED_SQLITE_DDL.split(";") if s.strip()]
    table = [s for s in statements if not s.startswith("CREATE INDEX")]
    indexes = [s for s in statements if s.startswith("CREATE INDEX")]
    return ";\n".join(table) + ";", ";\n".join(indexes) + ";" if indexes else ""


def _stage_batches(batches: Iterable[pl.DataFrame], folder: Path) -> list[Path]:
    """Write each batch's seed columns (JSON as text), partition and order to `folder`."""
    folder.mkdir()
    files = []
    for index, batch in enumerate(batches):
        target = folder / f"{index:06d}.parquet"
        batch.select(
            *(
                _json_text(c) if c in SEED_SQLITE_JSON_COLUMNS else pl.col(c)
                for c in SEED_SQLITE_COLUMNS
            ),
            pl.col("partition").alias("from_partition"),
            pl.lit(index, dtype=pl.Int64).alias("from_batch"),
        ).write_parquet(target, compression="lz4")
        files.append(target)
    return files


def _insert_latest(con: sqlite3.Connection, files: list[Path], spill: Path) -> int:
    """Insert the latest partition's row per id of the staged `files`, by (created_at, id)."""
    if not files:
        return 0
    columns = ", ".join(SEED_SQLITE_COLUMNS)
    marks = ", ".join("?" * len(SEED_SQLITE_COLUMNS))
    insert = f"INSERT INTO distillation_examples VALUES ({marks})"
    engine = connect(private=True)
    written = 0
    try:
        engine.execute(f"SET temp_directory = '{spill / 'spill'}'")
        listed = ", ".join(f"'{f}'" for f in files)
        reader = engine.sql(
            f"SELECT {columns} FROM read_parquet([{listed}]) QUALIFY row_number() OVER "
            "(PARTITION BY id ORDER BY from_partition DESC, from_batch DESC) = 1 "
            "ORDER BY created_at, id"
        ).to_arrow_reader(INSERT_BATCH_ROWS)
        for batch in reader:
            rows = zip(*(column.to_pylist() for column in batch.columns), strict=True)
            written += con.executemany(insert, rows).rowcount
    finally:
        engine.close()
    return written
