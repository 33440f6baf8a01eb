"""`distilled/distillation.db` as a working store: what others change in it comes back (issue 27).

SAM treats the SQLite database as its primary store
(docs/sources/escalations.md#distillation-database): its own tools review examples in it
(`human_reviewed`, `reviewer_notes`), correct answers in it (`claude_response`) and insert rows
into it. distill rebuilds the database from the lake at every release (`compat.write_seed_sqlite`)
and reads those changes back first, so none is lost:

- **Change log.** Every database distill writes carries, beside the seed's table, a table
  `distill_changes (seq, id, op, ts, state_changed, notes_changed, response_changed)` and two
  triggers on `distillation_examples`: an UPDATE of `human_reviewed`, `reviewer_notes` or
  `claude_response` and an INSERT each add a row with the time (unix seconds, SQLite's clock).
  Another writer needs no change: its ordinary UPDATE and INSERT statements fire the triggers.
  distill's own rows are written before the triggers exist, so they log nothing.
- **Reviews and edits** (`database_decisions`): one decision per changed id, from the row as it
  is now: `approve` (human_reviewed 1) / `reject` (-1) when the state changed, else `edit`; the
  notes when they changed; the corrected answer (`response`) when `claude_response` changed;
  `ts` = the latest change; `reviewer` and `via` = `distillation.db`. They join the decisions of
  `distill review` (`review.read_decisions`), where the latest timestamp wins, field by field.
- **Inserted rows** (`inserted_records`): rows another writer inserted, as raw escalation lines
  (the seed's Interaction fields and pre-labels) with `distillation_db_ref` =
  `distillation.db#distillation_examples/<id>`, which becomes the example's `source_ref`.
- **Harvest** (`harvest`, run by `escalations/seed_database` before it stages the database and
  by `escalations/export_history` again before it finishes it, seed_database.py): the database's
  decisions are appended to `review/decisions.jsonl` (a change already
  there, same id and ts, is not appended twice) and its inserted rows land as
  `<raw root>/escalations/<created_at date>/distillation_db-<digest>.jsonl` (the digest of the
  file's content: the same rows give the same file), so the next run of that partition ingests
  them; until then the rewritten database keeps them as they were.

Reading is deterministic: rows come out ordered by id, files are named by their content, and a
database without the change log (one distill did not write) yields nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import polars as pl
from upath import UPath

from distill_assets.contracts.escalations import SEED_SQLITE_COLUMNS
from distill_assets.lib.jsonlines import append_lines

DATABASE_NAME = "distillation.db"
VIA = "distillation.db"
CHANGES_TABLE = "distill_changes"
LANDED_PREFIX = "distillation_db-"
DB_REF = "distillation_db_ref"
_NOW = "(julianday('now') - 2440587.5) * 86400.0"
CHANGE_LOG_DDL = f"""
CREATE TABLE {CHANGES_TABLE} (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    op TEXT NOT NULL,
    ts REAL NOT NULL,
    state_changed INTEGER NOT NULL DEFAULT 0,
    notes_changed INTEGER NOT NULL DEFAULT 0,
    response_changed INTEGER NOT NULL DEFAULT 0
);
CREATE TRIGGER distill_log_update
AFTER UPDATE OF human_reviewed, reviewer_notes, claude_response ON distillation_examples
BEGIN
    INSERT INTO {CHANGES_TABLE} (id, op, ts, state_changed, notes_changed, response_changed)
    VALUES (
        NEW.id, 'update', {_NOW},
        OLD.human_reviewed IS NOT NEW.human_reviewed,
        OLD.reviewer_notes IS NOT NEW.reviewer_notes,
        OLD.claude_response IS NOT NEW.claude_response
    );
END;
CREATE TRIGGER distill_log_insert AFTER INSERT ON distillation_examples
BEGIN
    INSERT INTO {CHANGES_TABLE} (id, op, ts) VALUES (NEW.id, 'insert', {_NOW});
END;
"""
# the columns of a review decision (`review.py` reads decision files with it too)
DECISION_SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "decision": pl.String(),
        "notes": pl.String(),
        "reviewer": pl.String(),
        "ts": pl.Float64(),
        "response": pl.String(),
        "via": pl.String(),
    }
)
# The seed's Interaction fields (a raw escalation line's own).
INTERACTION_FIELDS: tuple[str, ...] = (
    "id",
    "session_id",
    "created_at",
    "query",
    "query_context",
    "sam_attempt",
    "sam_confidence",
    "sam_reasoning",
    "claude_response",
)
# The raw escalation fields an inserted row lands with (seed Interaction + pre-labels).
INSERTED_FIELDS: tuple[str, ...] = (
    *INTERACTION_FIELDS,
    "domain",
    "subdomain",
    "task_type",
    "complexity",
    "reasoning_type",
)


def database_path(root: Path) -> Path:
    """Return the seed's database under the `distilled/` folder."""
    return root / DATABASE_NAME


def install_change_log(con: sqlite3.Connection) -> None:
    """Add the change log table and its triggers to a database being written (rows already in)."""
    con.executescript(CHANGE_LOG_DDL)


def _read(path: Path, sql: str) -> list[tuple[object, ...]]:
    if not path.exists():
        return []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        logged = con.execute(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
            (CHANGES_TABLE,),
        ).fetchone()[0]
        return con.execute(sql).fetchall() if logged else []
    finally:
        con.close()


def database_decisions(root: Path) -> pl.DataFrame:
    """Return the reviews and edits made in the database since distill wrote it (one per id)."""
    rows = _read(
        database_path(root),
        f"""
        SELECT c.id, max(c.ts), max(c.state_changed), max(c.notes_changed),
               max(c.response_changed), e.human_reviewed, e.reviewer_notes, e.claude_response
        FROM {CHANGES_TABLE} AS c JOIN distillation_examples AS e ON e.id = c.id
        WHERE c.op = 'update'
        GROUP BY c.id ORDER BY c.id
        """,
    )
    decisions = []
    for ident, ts, state, notes, response, reviewed, reviewer_notes, answer in rows:
        decision = {1: "approve", -1: "reject"}.get(int(reviewed or 0)) if state else None
        if decision is None and not (notes or response):
            continue
        decisions.append(
            {
                "id": ident,
                "decision": decision or "edit",
                "notes": reviewer_notes if notes else None,
                "reviewer": VIA,
                "ts": float(ts),
                "response": answer if response else None,
                "via": VIA,
            }
        )
    return pl.DataFrame(decisions, schema=DECISION_SCHEMA)


def _inserted(root: Path, columns: tuple[str, ...]) -> list[tuple[object, ...]]:
    """Return `columns` of the rows another writer inserted into the database, by id."""
    selected = ", ".join(f"e.{c}" for c in columns)
    return _read(
        database_path(root),
        f"""
        SELECT DISTINCT {selected}
        FROM {CHANGES_TABLE} AS c JOIN distillation_examples AS e ON e.id = c.id
        WHERE c.op = 'insert' ORDER BY e.id
        """,
    )


def inserted_records(root: Path) -> list[dict[str, object]]:
    """Return the rows another writer inserted into the database, as raw escalation lines."""
    rows = _inserted(root, INSERTED_FIELDS)
    records = []
    for row in rows:
        record = {k: v for k, v in zip(INSERTED_FIELDS, row, strict=True) if v is not None}
        record["created_at"] = float(record.get("created_at") or 0.0)
        record[DB_REF] = f"{DATABASE_NAME}#distillation_examples/{record['id']}"
        records.append(record)
    return records


def inserted_rows(root: Path) -> pl.DataFrame:
    """Return the inserted rows in the seed table's columns, to keep them in a rewritten file."""
    rows = _inserted(root, SEED_SQLITE_COLUMNS)
    return pl.DataFrame(
        rows, schema=list(SEED_SQLITE_COLUMNS), orient="row", infer_schema_length=None
    )


def _landed_name(lines: str) -> str:
    return f"{LANDED_PREFIX}{hashlib.sha256(lines.encode('utf-8')).hexdigest()[:16]}.jsonl"


def harvest(root: Path, path: Path, raw_root: str, known_ids: set[str]) -> dict[str, int]:
    """Carry the database's changes over before it is rewritten; return what was carried.

    Decisions are appended to the decisions file `path` unless already there (same id, ts and
    `via`); inserted rows whose id the lake does not know (`known_ids`) land as raw JSONL per
    created_at date (UTC) under `<raw_root>/escalations/`.
    """
    decisions = database_decisions(root)
    seen: set[tuple[str, float]] = set()
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict) and value.get("via") == VIA:
                seen.add((str(value.get("id")), float(value.get("ts") or 0.0)))
    fresh = [d for d in decisions.to_dicts() if (d["id"], d["ts"]) not in seen]
    if fresh:
        append_lines(path, ({k: v for k, v in d.items() if v is not None} for d in fresh))
    by_day: dict[str, list[str]] = {}
    for record in inserted_records(root):
        if record["id"] in known_ids:
            continue
        day = pl.Series([record["created_at"]]).cast(pl.Float64)
        date = (
            pl.from_epoch((day * 1_000_000).cast(pl.Int64), time_unit="us")
            .dt.strftime("%Y-%m-%d")
            .item()
        )
        by_day.setdefault(date, []).append(json.dumps(record, sort_keys=True))
    landed = 0
    for date, lines in sorted(by_day.items()):
        text = "".join(line + "\n" for line in lines)
        folder = UPath(raw_root) / "escalations" / date
        target = folder / _landed_name(text)
        if not target.exists():
            folder.mkdir(parents=True, exist_ok=True)
            if folder.protocol in ("", "file"):
                staged = Path(str(folder.path)) / f".{target.name}.tmp"
                staged.write_text(text, encoding="utf-8")
                staged.replace(Path(str(target.path)))
            else:  # an object store's put is atomic
                target.write_text(text, encoding="utf-8")
        landed += len(lines)
    return {"decisions": len(fresh), "inserted": landed}
