"""Engine connections: cursors on one process database, private databases for global settings."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from distill_assets.lib.sql import connect


def test_connections_share_macros_but_not_their_frames_or_session() -> None:
    first, second = connect(), connect()
    try:
        first.register("frame", pa.table({"x": [1, 2]}))
        first.execute("SET TimeZone = 'Asia/Tokyo'")
        first.execute("CREATE TEMP TABLE scratch AS SELECT 1 AS y")
        assert first.execute("SELECT sum(x) FROM frame").fetchone() == (3,)
        assert second.execute("SELECT current_setting('TimeZone')").fetchone() == ("Etc/UTC",)
        with pytest.raises(duckdb.CatalogException, match="scratch"):
            second.execute("SELECT * FROM scratch")
        with pytest.raises(duckdb.CatalogException, match="frame"):
            second.execute("SELECT * FROM frame")
        assert second.execute("""SELECT json_kind('"text"')""").fetchone() == ("VARCHAR",)
    finally:
        first.close()
        second.close()


def test_a_private_connection_keeps_its_global_settings_to_itself() -> None:
    private = connect(private=True)
    shared = connect()
    try:
        private.execute("SET preserve_insertion_order = false")
        setting = "SELECT current_setting('preserve_insertion_order')"
        assert private.execute(setting).fetchone() == (False,)
        assert shared.execute(setting).fetchone() == (True,)
        assert private.execute("""SELECT json_kind('1')""").fetchone() == ("UBIGINT",)
    finally:
        private.close()
        shared.close()


def test_connect_reads_no_setting_its_caller_gives_the_lake(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bad DISTILL_* value does not reach `connect`: the caller gave (or not) the lake root."""
    monkeypatch.setenv("DISTILL_DATASET_NAME", "../elsewhere")
    monkeypatch.setenv("DISTILL_LAKE_ROOT", "memory://not-read")
    con = connect()
    try:
        assert con.execute("SELECT 1").fetchone() == (1,)
        with pytest.raises(duckdb.IOException, match="not-read"):
            con.execute("SELECT * FROM read_parquet('memory://not-read/a.parquet')")
    finally:
        con.close()


def test_every_database_spills_past_its_memory_limit_outside_the_working_directory() -> None:
    """A shared cursor and a private database: `MEMORY_LIMIT`, spilling under the system temp.

    The process's shared database took the system temp of the moment it was made (an earlier
    test in the same worker may have pointed `tempfile` elsewhere), so its folder is checked by
    name and place; a private database is made now, under today's system temp.
    A sort of ~200 MB of text under a 128 MB limit completes by spilling (DuckDB raises an
    out-of-memory error on it without a spill folder).
    """
    name = f"distill-duckdb-{os.getpid()}"
    settings = "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
    ((limit, folder),) = connect().execute(settings).fetchall()
    assert (limit, Path(folder).name) == ("1.8 GiB", name)
    assert Path(folder).is_absolute()
    assert not Path(folder).is_relative_to(Path.cwd())
    ((limit, folder),) = connect(private=True).execute(settings).fetchall()
    assert (limit, folder) == ("1.8 GiB", str(Path(tempfile.gettempdir()) / name))
    con = connect(private=True)
    con.execute("SET memory_limit = '128MB'")
    sort = (
        "SELECT count(*) FROM (SELECT repeat(md5(i::VARCHAR), 6) AS t "
        "FROM range(1000000) r(i) ORDER BY t)"
    )
    assert con.execute(sort).fetchall() == [(1_000_000,)]
    unspilled = connect(private=True)
    unspilled.execute("SET memory_limit = '128MB'")
    unspilled.execute("SET temp_directory = ''")
    with pytest.raises(duckdb.OutOfMemoryException):
        unspilled.execute(sort).fetchall()
