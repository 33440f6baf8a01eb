"""Engine connections: cursors on one process database, private databases for global settings."""

from __future__ import annotations

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
