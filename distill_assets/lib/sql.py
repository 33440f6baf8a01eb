"""Load DuckDB SQL statements from `sql/<source>/<verb>_<table>.sql`.

The folder is found inside the installed package (the wheel force-includes it as
`distill_assets/sql`) or, in a checkout, beside `pyproject.toml`.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from importlib import resources
from pathlib import Path

import duckdb
from upath import UPath

from distill_assets.lib.lake import is_remote

# Each DuckDB database's memory, past which its sorts, joins and aggregates spill to temporary
# files: DuckDB's default, 80 % of the machine's memory, let one step's sort hold a whole day
# (telemetry's accepted events grew 1.4 GB at 0.5 GB of telemetry and 5.1 GB at 2 GB)
MEMORY_LIMIT = "2GB"


@cache
def sql_root() -> Path:
    """Return the folder holding distill's SQL files."""
    packaged = Path(str(resources.files("distill_assets"))) / "sql"
    if packaged.is_dir():
        return packaged
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file() and (folder / "sql").is_dir():
            return folder / "sql"
    raise FileNotFoundError("distill's sql/ folder is neither packaged nor in a checkout")


@cache
def load_sql(name: str) -> str:
    """Return the statement in `sql/<name>.sql`, e.g. `load_sql("traces/select_events")`."""
    return (sql_root() / f"{name}.sql").read_text(encoding="utf-8")


def json_fields_structure(names: list[str]) -> str:
    """Return the `json_transform` structure that reads each named field as its JSON text."""
    return json.dumps(dict.fromkeys(names, "JSON"))


def connect(lake_root: str | None = None, *, private: bool = False) -> duckdb.DuckDBPyConnection:
    """Return a DuckDB connection with distill's macros (`sql/macros/*.sql`) defined.

    Every engine connection of distill is made here, so a statement may use the macros whichever
    asset, check or test runs it. The caller gives the paths: a statement that reads lake files
    by path gets the `lake_root` they are under (from the settings resource), and when that root
    is remote (`s3://…`) its fsspec filesystem is registered so DuckDB can read them; a caller
    that only registers frames or reads local files gives none. No setting is read here.

    It is a cursor on the process's in-memory database (opening a database costs ~35 ms; a cursor
    nothing): its registered frames, temporary tables, variables and session settings are its
    own, but a global setting (`preserve_insertion_order`, `threads`, ...) would change every
    cursor's, so a caller that sets one asks for a `private` connection, a database of its own.
    """
    remote = lake_root if lake_root is not None and is_remote(UPath(lake_root)) else None
    if private:
        return _new_database(remote)
    return _process_database(os.getpid(), remote).cursor()


@cache
def _process_database(pid: int, remote_root: str | None) -> duckdb.DuckDBPyConnection:
    """Return the database `connect` hands out cursors on, one per process and remote lake root.

    A forked child makes its own (DuckDB's threads do not survive a fork).
    """
    return _new_database(remote_root)


def _new_database(remote_root: str | None) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")
    # DuckDB's default spill folder is `.tmp` in the working directory
    spill = Path(tempfile.gettempdir()) / f"distill-duckdb-{os.getpid()}"
    con.execute(f"SET temp_directory = '{spill}'")
    if remote_root is not None:
        # DuckDB's own `httpfs` extension is a download, which an offline machine cannot make: the
        # root's fsspec filesystem (credentials and endpoint from the environment) reads its paths
        # instead, registered once per database (DuckDB refuses a second registration)
        con.register_filesystem(UPath(remote_root).fs)
    for macro in sorted((sql_root() / "macros").glob("*.sql")):
        con.execute(macro.read_text(encoding="utf-8"))
    return con
