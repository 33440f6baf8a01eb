"""`compat.write_seed_sqlite`: the seed's SQLite database from examples streamed in batches."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from distill_assets.contracts.escalations import SEED_SQLITE_COLUMNS, SEED_SQLITE_DDL
from distill_assets.defs.escalations.compat import write_seed_sqlite
from tests.unit.escalations.frames import example_frame


def _partition(day: str, *rows: tuple[str, float, str]) -> pl.DataFrame:
    frame = example_frame(
        *({"id": i, "created_at": t, "query": q, "claude_response": "a"} for i, t, q in rows)
    )
    return frame.select(*SEED_SQLITE_COLUMNS).with_columns(pl.lit(day).alias("partition"))


def _rows(database: Path) -> list[tuple[object, ...]]:
    con = sqlite3.connect(database)
    try:
        return con.execute("SELECT id, created_at, query FROM distillation_examples").fetchall()
    finally:
        con.close()


def test_latest_partitions_row_per_id_in_created_at_order_from_any_batches(
    tmp_path: Path,
) -> None:
    older = _partition("2026-11-19", ("x", 2.0, "x old"), ("y", 1.0, "y"), ("w", 5.0, "w"))
    newer = _partition("2026-11-20", ("x", 3.0, "x new"), ("z", 0.0, "z"))
    database = tmp_path / "distilled" / "distillation.db"

    written = write_seed_sqlite([newer, older.head(1), older.slice(1)], database)

    assert written == 4
    assert _rows(database) == [
        ("z", 0.0, "z"),
        ("y", 1.0, "y"),
        ("x", 3.0, "x new"),
        ("w", 5.0, "w"),
    ]
    assert sorted(p.name for p in database.parent.iterdir()) == ["distillation.db"]


def test_no_batch_gives_an_empty_database_with_the_seed_schema(tmp_path: Path) -> None:
    database = tmp_path / "distillation.db"

    assert write_seed_sqlite([], database) == 0

    con = sqlite3.connect(database)
    try:
        columns = [row[1] for row in con.execute("PRAGMA table_info(distillation_examples)")]
    finally:
        con.close()
    assert tuple(columns) == SEED_SQLITE_COLUMNS
    assert _rows(database) == []


def test_the_schema_is_the_seeds_and_a_later_batch_wins_within_a_partition(
    tmp_path: Path,
) -> None:
    first = _partition("2026-11-19", ("x", 2.0, "x first"), ("y", 1.0, "y"))
    second = _partition("2026-11-19", ("x", 2.0, "x second"))
    database = tmp_path / "distillation.db"

    assert write_seed_sqlite([first, second], database) == 2

    assert _rows(database) == [("y", 1.0, "y"), ("x", 2.0, "x second")]
    seed = sqlite3.connect(":memory:")
    written = sqlite3.connect(database)
    try:
        seed.executescript(SEED_SQLITE_DDL)
        listing = (
            "SELECT type, name, tbl_name, sql FROM sqlite_master"
            " WHERE tbl_name = 'distillation_examples' AND type IN ('table', 'index')"
        )
        # the indexes are built after the rows: the same objects, in the seed's order
        assert written.execute(listing).fetchall() == seed.execute(listing).fetchall()
        assert written.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        seed.close()
        written.close()
