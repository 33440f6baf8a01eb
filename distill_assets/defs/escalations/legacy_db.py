"""Reading a legacy `knowledge_distillation.db`: tables as text, outcomes and quarantine per table.

`LegacyDatabase` opens one file read-only (standard library `sqlite3`), reads each of the nine
tables with every column as TEXT (a missing table or column is a problem, not a crash), and
counts what the migration does with each table's rows. The JSON-array TEXT columns are parsed
with `json` here, row by row: the one place the legacy format forces per-row Python.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import polars as pl

from distill_assets.contracts.escalations_legacy import (
    LEGACY_TABLES,
    PROBLEM_CORRUPT,
    PROBLEM_MISSING_TABLE,
    QUARANTINE_SCHEMA,
)


def read_table(con: sqlite3.Connection, table: str) -> tuple[pl.DataFrame | None, list[str]]:
    """Read every column of `table` as text; return the frame (None if absent) and problems."""
    exists = con.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()[0]
    if not exists:
        return None, [PROBLEM_MISSING_TABLE]
    columns = [row[1] for row in con.execute(f'PRAGMA table_info("{table}")')]
    expected = LEGACY_TABLES[table]
    problems = [f"missing_column:{c}" for c in expected if c not in columns]
    problems += [f"unknown_column:{c}" for c in columns if c not in expected]
    select = ", ".join(f'CAST("{c}" AS TEXT)' for c in columns)
    rows = con.execute(f'SELECT {select} FROM "{table}" ORDER BY rowid').fetchall()
    frame = pl.DataFrame(rows, schema=dict.fromkeys(columns, pl.String()), orient="row")
    return frame, problems


def unix_seconds(column: str) -> pl.Expr:
    """Return a legacy time column as unix seconds: a number, or `YYYY-MM-DD[ T]HH:MM:SS` (UTC)."""
    text = pl.col(column).str.strip_chars()
    numeric = text.cast(pl.Float64, strict=False)
    iso = (
        text.str.replace(r"^(\d{4}-\d{2}-\d{2}) ", "${1}T")
        .str.to_datetime(time_zone="UTC", strict=False)
        .dt.epoch("us")
        / 1_000_000
    )
    return pl.coalesce(numeric, iso)


def json_list(text: Any) -> list[Any] | None:
    """Parse a legacy JSON-array TEXT value (None when blank); raise ValueError when not a list."""
    if text is None or not str(text).strip():
        return None
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError("not a JSON array")
    return value


def _steps(items: list[Any] | None) -> list[dict[str, Any]] | None:
    if not items:
        return None
    steps = []
    for number, item in enumerate(items, start=1):
        if isinstance(item, dict):
            content = item.get("content") or item.get("step") or json.dumps(item, sort_keys=True)
            steps.append(
                {
                    "step_num": int(item.get("step_num") or number),
                    "action": item.get("action"),
                    "content": str(content),
                    "reasoning": item.get("reasoning"),
                }
            )
        else:
            steps.append(
                {"step_num": number, "action": None, "content": str(item), "reasoning": None}
            )
    return steps


def legacy_steps(frame: pl.DataFrame, column: str) -> tuple[list[Any], list[bool]]:
    """Parse a steps column; return the steps per row and whether each row parsed."""
    parsed, ok = [], []
    for text in frame.get_column(column).to_list():
        try:
            parsed.append(_steps(json_list(text)))
            ok.append(True)
        except (ValueError, TypeError):
            parsed.append(None)
            ok.append(False)
    return parsed, ok


class LegacyDatabase:
    """One legacy database being migrated (tables read once, outcomes counted per table)."""

    def __init__(self, display: str, con: sqlite3.Connection) -> None:
        self.display = display
        self.name = display.rsplit("/", 1)[-1]
        self.tables: dict[str, pl.DataFrame | None] = {}
        self.problems: dict[str, list[str]] = {}
        for table in LEGACY_TABLES:
            self.tables[table], self.problems[table] = read_table(con, table)
        self.outcomes: dict[str, dict[str, int]] = {t: {} for t in LEGACY_TABLES}
        self.quarantined: list[pl.DataFrame] = []

    def usable(self, table: str, needed: tuple[str, ...]) -> pl.DataFrame | None:
        """Return the table when it has `needed` columns; else quarantine its rows."""
        frame = self.tables[table]
        if frame is None:
            return None
        missing = [c for c in needed if c not in frame.columns]
        if missing:
            self.quarantine(table, frame, f"missing_column:{missing[0]}")
            return None
        return frame

    def count(self, table: str, outcome: str, rows: int) -> None:
        """Add `rows` to a table's outcome count."""
        self.outcomes[table][outcome] = self.outcomes[table].get(outcome, 0) + rows

    def quarantine(self, table: str, frame: pl.DataFrame, reason: str | pl.Series) -> None:
        """Quarantine every row of `frame` with `reason` (one for all, or one per row)."""
        if frame.is_empty():
            return
        height = frame.height
        ids = (
            frame.get_column("id").cast(pl.String)
            if "id" in frame.columns
            else pl.Series([None] * height, dtype=pl.String)
        )
        reasons = reason if isinstance(reason, pl.Series) else pl.Series([reason] * height)
        rows = pl.DataFrame(
            {
                "source_file": [self.display] * height,
                "legacy_table": [table] * height,
                "legacy_id": ids,
                "reason": reasons.cast(pl.String),
            }
        ).with_columns(
            pl.format("{}#{}/{}", pl.lit(self.name), pl.lit(table), pl.col("legacy_id")).alias(
                "source_ref"
            )
        )
        self.quarantined.append(rows.select(QUARANTINE_SCHEMA.names()))
        self.count(table, "quarantined", height)


def open_database(display: str, local: Path) -> tuple[LegacyDatabase | None, list[str]]:
    """Read a local database file; return it, or None and the problem when it is corrupt."""
    try:
        con = sqlite3.connect(f"file:{local}?mode=ro", uri=True)
        try:
            return LegacyDatabase(display, con), []
        finally:
            con.close()
    except sqlite3.DatabaseError as error:
        return None, [f"{PROBLEM_CORRUPT}: {error}"]
