"""The seed database in two steps (stage, finish) gives the file one rewrite gives (issue 31)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from distill_assets.defs.escalations.compat import HISTORY_SCHEMA, merge_history
from distill_assets.defs.escalations.review import append_decision, decisions_path
from distill_assets.defs.escalations.seed_database import (
    SIDECAR_NAME,
    finish_database,
    rewrite_database,
    stage_database,
    staged_path,
)
from distill_assets.defs.escalations.working_store import database_path
from distill_assets.lib.lake import partition_path
from tests.unit.escalations.frames import example_frame

ANSWER = "Use exponential backoff with jitter and cap the attempts, so retries never pile up."
DAYS = ("2026-11-19", "2026-11-20")
INSERT = (
    "INSERT INTO distillation_examples (id, session_id, created_at, query, claude_response, "
    "reasoning_type, domain, human_reviewed) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)


class Store:
    """A lake of examples, its `distilled/` folder and raw root under one folder."""

    def __init__(self, folder: Path) -> None:
        self.lake = str(folder / "lake")
        self.raw = str(folder / "raw")
        self.root = folder / "distilled"
        self.root.mkdir(parents=True)

    def write_partition(self, day: str, *ids: str, answer: str = ANSWER) -> None:
        frame = example_frame(
            *({"id": i, "query": f"How do I retry {i}?", "claude_response": answer} for i in ids),
            time_step=1.0,
        )
        path = Path(str(partition_path(self.lake, "escalations", "distillation_examples", day)))
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.write_parquet(path)

    def execute(self, *statements: tuple[str, tuple[object, ...]]) -> None:
        con = sqlite3.connect(database_path(self.root))
        try:
            for sql, params in statements:
                con.execute(sql, params)
            con.commit()
        finally:
            con.close()


def _history(*versions: tuple[str, list[str]]) -> pl.DataFrame:
    history = pl.DataFrame(schema=HISTORY_SCHEMA)
    for index, (version, ids) in enumerate(versions):
        rows = pl.DataFrame(
            {"version": version, "example_id": ids, "exported_at": 1795000000.0 + index},
            schema=HISTORY_SCHEMA,
        )
        history = merge_history(history, rows)
    return history


def _content(database: Path) -> dict[str, object]:
    con = sqlite3.connect(database)
    try:
        return {
            "schema": con.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
            ).fetchall(),
            "rows": con.execute("SELECT * FROM distillation_examples ORDER BY id").fetchall(),
            "log": con.execute("SELECT * FROM distill_changes").fetchall(),
            "check": con.execute("PRAGMA integrity_check").fetchall(),
        }
    finally:
        con.close()


Prepare = Callable[[Store], None]


def _nothing(store: Store) -> None:
    del store


def _lake_only(store: Store) -> None:
    """Two partitions and no database yet (the first release)."""
    store.write_partition(DAYS[0], "a", "b", "c")
    store.write_partition(DAYS[1], "b", "d", answer="Retry with a capped backoff and jitter.")


def _base(store: Store) -> None:
    """Two partitions (b in both), a decision, and a live database a reviewer and SAM changed."""
    store.write_partition(DAYS[0], "a", "b", "c")
    store.write_partition(DAYS[1], "b", "d", answer="Retry with a capped backoff and jitter.")
    append_decision(store.root, "c", "reject", notes="off topic", reviewer="ann", ts=1.0)
    rewrite_database(store.lake, store.raw, store.root, _history())
    store.execute(
        ("UPDATE distillation_examples SET human_reviewed = 1 WHERE id = ?", ("a",)),
        (INSERT, ("n1", None, 1795132800.0, "What is a TTL?", "How long.", "direct", "fact", 0)),
    )


def _changes(store: Store) -> None:
    """A reviewer edit, a corrected answer, a `distill review` line and a row SAM inserted."""
    store.execute(
        (
            "UPDATE distillation_examples SET human_reviewed = -1, reviewer_notes = ? WHERE id = ?",
            ("a pasted log", "d"),
        ),
        ("UPDATE distillation_examples SET claude_response = ? WHERE id = ?", ("Fixed.", "b")),
        ("UPDATE distillation_examples SET reviewer_notes = ? WHERE id = ?", ("kept", "n1")),
        (INSERT, ("n2", "s2", 1795132900.0, "What is DNS?", "Names to IPs.", "direct", "net", 0)),
    )
    append_decision(store.root, "a", "edit", notes="checked", reviewer="bob", ts=2.0)


def _one_step(
    folder: Path, prepare: Prepare, between: Prepare, history: pl.DataFrame
) -> dict[str, object]:
    store = Store(folder)
    prepare(store)
    between(store)
    rewrite_database(store.lake, store.raw, store.root, history)
    return _content(database_path(store.root))


def _two_steps(
    folder: Path,
    prepare: Prepare,
    between: Prepare,
    *,
    previous: pl.DataFrame,
    history: pl.DataFrame,
    published: list[str],
) -> tuple[Store, str | None]:
    store = Store(folder)
    prepare(store)
    stage_database(store.lake, store.raw, store.root, previous)
    between(store)
    written = finish_database(
        store.lake,
        store.raw,
        store.root,
        history,
        versions=previous.get_column("version").to_list(),
        published=published,
    )
    return store, written.rewritten_because


@pytest.mark.parametrize(
    ("prepare", "between", "previous", "published"),
    [
        pytest.param(_lake_only, _nothing, [], ("v1", ["a"]), id="first-release-no-database"),
        pytest.param(_base, _nothing, [], ("v1", ["a", "b"]), id="first-release"),
        pytest.param(
            _base, _nothing, [("v1", ["a", "b"])], ("v2", ["b", "d"]), id="second-release"
        ),
        pytest.param(
            _base, _changes, [("v1", ["a", "b"])], ("v2", ["b", "d"]), id="changes-between"
        ),
        pytest.param(_base, _nothing, [("v1", ["a"])], ("v1", ["a"]), id="re-run-of-a-version"),
    ],
)
def test_stage_then_finish_gives_the_single_rewrites_database(
    tmp_path: Path,
    prepare: Prepare,
    between: Prepare,
    previous: list[tuple[str, list[str]]],
    published: tuple[str, list[str]],
) -> None:
    before = _history(*previous)
    history = _history(*previous, published)
    expected = _one_step(tmp_path / "one", prepare, between, history)
    store, reason = _two_steps(
        tmp_path / "two", prepare, between, previous=before, history=history, published=published[1]
    )
    assert reason is None
    assert _content(database_path(store.root)) == expected
    assert sorted(p.name for p in store.root.iterdir() if p.is_file()) == ["distillation.db"]
    if published[0] == "v2":
        counts = dict(
            sqlite3.connect(database_path(store.root))
            .execute("SELECT id, export_count FROM distillation_examples")
            .fetchall()
        )
        assert (counts["a"], counts["b"], counts["c"], counts["d"]) == (1, 2, 0, 1)


def test_changes_made_between_the_steps_survive_and_land_once(tmp_path: Path) -> None:
    history = _history(("v1", ["a"]))
    store, _ = _two_steps(
        tmp_path, _base, _changes, previous=_history(), history=history, published=["a"]
    )
    con = sqlite3.connect(database_path(store.root))
    try:
        rows = {
            r[0]: r[1:]
            for r in con.execute(
                "SELECT id, human_reviewed, reviewer_notes, claude_response FROM "
                "distillation_examples"
            )
        }
    finally:
        con.close()
    assert rows["d"][:2] == (-1, "a pasted log")
    assert rows["b"][2] == "Fixed."
    assert rows["a"][:2] == (1, "checked")
    assert rows["n1"][1] == "kept"
    assert rows["n2"][2] == "Names to IPs."
    landed = [
        json.loads(line)["id"]
        for path in sorted(Path(store.raw).glob("escalations/*/distillation_db-*.jsonl"))
        for line in path.read_text().splitlines()
    ]
    assert sorted(landed) == ["n1", "n2"]  # n1 landed by the stage only
    decided = [json.loads(x)["id"] for x in decisions_path(store.root).read_text().splitlines()]
    assert sorted(decided) == ["a", "a", "b", "c", "d", "n1"]


def _missing(store: Store) -> None:
    staged_path(store.root).unlink(missing_ok=True)


def _no_sidecar(store: Store) -> None:
    (store.root / SIDECAR_NAME).unlink(missing_ok=True)


def _examples_changed(store: Store) -> None:
    store.write_partition(DAYS[1], "b", "d", "e")


def _decisions_rewritten(store: Store) -> None:
    path = decisions_path(store.root)
    path.write_text(path.read_text().replace("off topic", "off-topic"))


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (_missing, "is missing"),
        (_no_sidecar, "is missing"),
        (_examples_changed, "was built from other examples partitions"),
        (_decisions_rewritten, "was built from a decisions file since rewritten"),
    ],
)
def test_a_missing_or_stale_staged_file_is_rewritten_whole(
    tmp_path: Path, spoil: Prepare, reason: str
) -> None:
    history = _history(("v1", ["a"]))

    def spoiled(store: Store) -> None:
        _changes(store)
        spoil(store)

    expected = _one_step(tmp_path / "one", _base, spoiled, history)
    store, why = _two_steps(
        tmp_path / "two", _base, spoiled, previous=_history(), history=history, published=["a"]
    )
    assert why == reason
    assert _content(database_path(store.root)) == expected
    assert sorted(p.name for p in store.root.iterdir() if p.is_file()) == ["distillation.db"]


def test_another_history_makes_the_staged_file_stale(tmp_path: Path) -> None:
    store = Store(tmp_path)
    _base(store)
    stage_database(store.lake, store.raw, store.root, _history())
    written = finish_database(
        store.lake,
        store.raw,
        store.root,
        _history(("v0", ["c"]), ("v1", ["a"])),
        versions=["v0"],
        published=["a"],
    )
    assert written.rewritten_because == "was built from another export history"
    counts = dict(
        sqlite3.connect(database_path(store.root))
        .execute("SELECT id, export_count FROM distillation_examples")
        .fetchall()
    )
    assert (counts["a"], counts["c"]) == (1, 1)
