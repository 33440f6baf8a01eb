"""`distillation.db` as a working store: reviews, edits and rows made in it come back (issue 27)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from distill_assets.contracts.escalations import SEED_SQLITE_COLUMNS
from distill_assets.defs.escalations.compat import write_seed_sqlite
from distill_assets.defs.escalations.review import (
    append_decision,
    apply_decisions,
    decisions_path,
    read_decisions,
    with_corrected_responses,
)
from distill_assets.defs.escalations.working_store import (
    database_decisions,
    database_path,
    harvest,
    inserted_rows,
)
from tests.unit.escalations.frames import example_frame

ANSWER = "Use exponential backoff with jitter and cap the attempts, so retries never pile up."


def _examples(*ids: str) -> pl.DataFrame:
    frame = example_frame(
        *({"id": i, "query": f"How do I retry {i}?", "claude_response": ANSWER} for i in ids)
    )
    return frame.select(*SEED_SQLITE_COLUMNS, "answer_rejection").with_columns(
        pl.lit("2026-11-19").alias("partition")
    )


def _written(root: Path, *ids: str) -> Path:
    database = database_path(root)
    write_seed_sqlite([_examples(*ids)], database)
    return database


def _execute(database: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    con = sqlite3.connect(database)
    try:
        for sql, params in statements:
            con.execute(sql, params)
        con.commit()
    finally:
        con.close()


INSERT = (
    "INSERT INTO distillation_examples (id, session_id, created_at, query, claude_response, "
    "reasoning_type, domain, human_reviewed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


def test_reviews_edits_and_inserts_made_in_the_database_are_read_back(tmp_path: Path) -> None:
    database = _written(tmp_path, "a", "b", "c")
    assert database_decisions(tmp_path).is_empty()  # distill's own rows log nothing
    _execute(
        database,
        (
            "UPDATE distillation_examples SET human_reviewed = -1, reviewer_notes = ? WHERE id = ?",
            ("junk: a pasted log", "a"),
        ),
        ("UPDATE distillation_examples SET claude_response = ? WHERE id = ?", ("Fixed.", "b")),
        ("UPDATE distillation_examples SET human_reviewed = 1 WHERE id = ?", ("c",)),
        (
            INSERT,
            (
                "n1",
                "s9",
                1795132800.0,
                "What is a TTL?",
                "A time-to-live: how long a cached value stays valid before it expires.",
                "direct",
                "factual",
                0,
            ),
        ),
    )
    decisions = database_decisions(tmp_path)
    assert decisions.drop("ts").rows() == [
        ("a", "reject", "junk: a pasted log", "distillation.db", None, "distillation.db"),
        ("b", "edit", None, "distillation.db", "Fixed.", "distillation.db"),
        ("c", "approve", None, "distillation.db", None, "distillation.db"),
    ]
    assert decisions.get_column("ts").min() > 1.7e9  # SQLite's clock, unix seconds
    [kept] = inserted_rows(tmp_path).to_dicts()
    assert (kept["id"], kept["query"], kept["domain"]) == ("n1", "What is a TTL?", "factual")


def test_the_latest_timestamp_wins_field_by_field(tmp_path: Path) -> None:
    database = _written(tmp_path, "a")
    append_decision(tmp_path, "a", "approve", notes="good", reviewer="ann", ts=1.0)
    _execute(
        database,
        ("UPDATE distillation_examples SET human_reviewed = -1 WHERE id = ?", ("a",)),
    )
    [row] = read_decisions(tmp_path).to_dicts()
    assert (row["decision"], row["notes"], row["via"]) == ("reject", "good", "distillation.db")
    append_decision(tmp_path, "a", "approve", notes=None, reviewer="ann", ts=row["ts"] + 1)
    [row] = read_decisions(tmp_path).to_dicts()
    assert (row["decision"], row["notes"], row["reviewer"]) == ("approve", "good", "ann")


def test_harvest_carries_changes_once_and_lands_inserted_rows_as_raw_lines(
    tmp_path: Path,
) -> None:
    root, raw = tmp_path / "distilled", tmp_path / "raw"
    database = _written(root, "a")
    _execute(
        database,
        (
            "UPDATE distillation_examples SET human_reviewed = 1, reviewer_notes = ? WHERE id = ?",
            ("clear", "a"),
        ),
        (
            INSERT,
            (
                "n1",
                None,
                1795132800.5,
                "What is a TTL?",
                "How long a cached value stays valid.",
                "direct",
                "factual",
                0,
            ),
        ),
    )
    assert harvest(root, decisions_path(root), str(raw), known_ids={"a"}) == {
        "decisions": 1,
        "inserted": 1,
    }
    assert harvest(root, decisions_path(root), str(raw), known_ids={"a"}) == {
        "decisions": 0,
        "inserted": 1,
    }
    [line] = [json.loads(x) for x in decisions_path(root).read_text().splitlines()]
    assert (line["id"], line["decision"], line["notes"], line["via"]) == (
        "a",
        "approve",
        "clear",
        "distillation.db",
    )
    [landed] = list((raw / "escalations" / "2026-11-20").glob("distillation_db-*.jsonl"))
    [record] = [json.loads(x) for x in landed.read_text().splitlines()]
    assert record == {
        "id": "n1",
        "created_at": 1795132800.5,
        "query": "What is a TTL?",
        "claude_response": "How long a cached value stays valid.",
        "reasoning_type": "direct",
        "domain": "factual",
        "distillation_db_ref": "distillation.db#distillation_examples/n1",
    }
    # the decision read back once, though it is in the file and still in the database
    assert read_decisions(root).height == 1


def test_a_rewrite_keeps_rows_not_yet_ingested_and_applies_corrected_text(tmp_path: Path) -> None:
    database = _written(tmp_path, "a", "b")
    _execute(
        database,
        ("UPDATE distillation_examples SET claude_response = ? WHERE id = ?", ("Fixed.", "b")),
        (INSERT, ("n1", None, 1.0, "q", "A reply written by SAM.", "direct", "factual", 0)),
    )
    decisions = read_decisions(tmp_path)
    kept = inserted_rows(tmp_path)
    batches = [apply_decisions(_examples("a", "b"), decisions)]
    assert write_seed_sqlite(batches, database, kept) == 3
    con = sqlite3.connect(database)
    try:
        rows = con.execute(
            "SELECT id, claude_response FROM distillation_examples ORDER BY id"
        ).fetchall()
        log = con.execute("SELECT count(*) FROM distill_changes").fetchone()[0]
    finally:
        con.close()
    assert rows == [("a", ANSWER), ("b", "Fixed."), ("n1", "A reply written by SAM.")]
    assert log == 0  # a fresh change log


def test_corrected_text_is_extracted_as_the_answer() -> None:
    records = pl.DataFrame({"id": ["a", "b"], "claude_response": ["old a", "old b"]}).lazy()
    decisions = pl.DataFrame(
        {
            "id": ["b"],
            "decision": ["edit"],
            "notes": [None],
            "reviewer": ["x"],
            "ts": [1.0],
            "response": ["new b"],
            "via": [None],
        },
        schema_overrides={"notes": pl.String(), "via": pl.String()},
    )
    corrected = with_corrected_responses(records, decisions).collect()
    assert corrected.get_column("claude_response").to_list() == ["old a", "new b"]


def test_a_crash_while_writing_leaves_the_previous_database(tmp_path: Path) -> None:
    database = _written(tmp_path, "a")
    before = database.read_bytes()

    def failing() -> Iterator[pl.DataFrame]:
        yield _examples("x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_seed_sqlite(failing(), database)
    assert database.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["distillation.db"]


def test_a_database_without_the_change_log_yields_nothing(tmp_path: Path) -> None:
    con = sqlite3.connect(database_path(tmp_path))
    con.execute("CREATE TABLE distillation_examples (id TEXT PRIMARY KEY, human_reviewed INT)")
    con.execute("INSERT INTO distillation_examples VALUES ('a', 1)")
    con.commit()
    con.close()
    assert database_decisions(tmp_path).is_empty()
    assert inserted_rows(tmp_path).is_empty()


def test_an_ingested_database_row_points_at_the_database() -> None:
    frame = example_frame(
        {"extra": json.dumps({"distillation_db_ref": "distillation.db#distillation_examples/n1"})},
        {},
    )
    assert frame.get_column("source_ref").to_list() == [
        "distillation.db#distillation_examples/n1",
        "escalations/2026-11-19/a.jsonl:2",
    ]
