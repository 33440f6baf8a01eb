"""A legacy knowledge_distillation.db dropped in a partition's raw folder is migrated by it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl

from distill_assets.contracts.escalations import DistillationExample
from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from tests.conftest import land, materialize
from tests.fixtures.escalations.legacy_db import EXPECTED, write_legacy_db

DAY = "2026-11-21"
ALL = 'key:"escalations/*"'
DB = "knowledge_distillation.db"


def read(settings: Settings, table: str) -> pl.DataFrame:
    return pl.read_parquet(str(partition_path(settings.lake_root, "escalations", table, DAY)))


def test_legacy_database_migrates_with_exact_counts_and_provenance(distill_env: Settings) -> None:
    write_legacy_db(Path(distill_env.raw_root) / "escalations" / DAY / DB)
    land(distill_env, "escalations", DAY, "corrupt.db", b"this is not a database" * 50)
    result = materialize(ALL, DAY)
    checks = {c.check_name: c.passed for c in result.get_asset_check_evaluations()}
    assert checks["legacy_reconciles"] and checks["one_example_per_record"]

    reconciliation = read(distill_env, "legacy_migration")
    corrupt = reconciliation.filter(pl.col("source_file") == "escalations/2026-11-21/corrupt.db")
    assert corrupt.get_column("problems").to_list() == [
        ["corrupt_database: file is not a database"]
    ]
    columns = ("legacy_table", "rows_read", "migrated", "attached", "stored", "quarantined")
    rows = reconciliation.filter(pl.col("legacy_table") != "*").to_dicts()
    assert [
        (*(r[c] for c in columns), json.loads(r["quarantine_reasons"])) for r in rows
    ] == EXPECTED

    examples = read(distill_env, "distillation_examples").sort("source_ref")
    assert examples.get_column("source_ref").to_list() == [
        f"{DB}#chain_of_thought/1",
        f"{DB}#examples/1",
        f"{DB}#examples/2",
        f"{DB}#preference_pairs/1",
        f"{DB}#raw_interactions/1",
    ]
    for row in examples.to_dicts():
        DistillationExample.model_validate(row)
    by_ref = {r["source_ref"]: r for r in examples.to_dicts()}

    quicksort = by_ref[f"{DB}#examples/1"]
    # the valid legacy correction reached the example (the one with invalid JSON was quarantined)
    assert quicksort["corrections"]["sam_errors"] == [
        {
            "error_type": "factual",
            "what_sam_said": "Quicksort is O(n).",
            "what_was_wrong": "It ignores the recursion depth",
            "correct_answer": "O(n log n) on average, O(n^2) worst case",
        }
    ]
    assert quicksort["corrections"]["improvements"] == ["Mention the worst case"]
    assert [s["action"] for s in quicksort["reasoning_steps"]] == ["identify", "solve"]
    principles = [p["principle"] for p in quicksort["principles"]]
    assert principles[:2] == [
        "Always state average and worst case complexity",  # the correction's lesson
        "Always state both average and worst case complexity",  # the code-domain principle
    ]
    assert (quicksort["human_reviewed"], quicksort["reviewer_notes"]) == (1, "great example")
    assert (quicksort["domain"], quicksort["reasoning_type"]) == ("code", "correction")

    rejected = by_ref[f"{DB}#examples/2"]
    assert (rejected["human_reviewed"], rejected["reviewer_notes"]) == (-1, "too shallow")
    assert rejected["training_ready"] == 0

    sheep = by_ref[f"{DB}#chain_of_thought/1"]
    assert [s["content"] for s in sheep["reasoning_steps"]] == [
        "Start with 17 sheep",
        "All but 9 means 9 stay",
        "So 9 are left",
    ]
    assert sheep["created_at"] == 1737745822.0  # "2025-01-24 19:10:22" read as UTC
    pair = by_ref[f"{DB}#preference_pairs/1"]
    assert pair["sam_attempt"] == "let and const are both used for variables."
    assert pair["training_format"] == "preference"

    dpo = read(distill_env, "preference_pairs")
    assert f"{DB}#preference_pairs/1" in dpo.get_column("source_ref").to_list()
    assert (
        f"{DB}#examples/2"
        not in read(distill_env, "instruction_examples").get_column("source_ref").to_list()
    )  # rejected in the legacy review
    assert read(distill_env, "legacy_principles").height == 2
    assert read(distill_env, "legacy_skill_templates").height == 1
    queue = read(distill_env, "legacy_review_queue")
    assert queue.get_column("example_id").to_list() == [rejected["id"]]
    assert read(distill_env, "legacy_quarantine").get_column("source_ref").to_list() == [
        "corrupt.db",  # the whole file: reason corrupt_database
        f"{DB}#examples/3",
        f"{DB}#chain_of_thought/2",
        f"{DB}#raw_interactions/2",
        f"{DB}#reasoning_patterns/2",
        f"{DB}#corrections/2",
    ]


def test_a_database_missing_tables_and_columns_is_quarantined_not_a_crash(
    distill_env: Settings,
) -> None:
    path = Path(distill_env.raw_root) / "escalations" / DAY / "partial.db"
    path.parent.mkdir(parents=True)
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE examples (id INTEGER, query TEXT, created_at REAL, mood TEXT)")
    con.execute("INSERT INTO examples VALUES (1, 'q', 1.0, 'happy')")
    con.execute(
        "CREATE TABLE raw_interactions (id INTEGER, prompt TEXT, response TEXT, created_at REAL,"
        " mood TEXT)"
    )
    con.execute(
        "INSERT INTO raw_interactions VALUES (7, 'Capital of France?', 'Paris.', 2.0, 'ok')"
    )
    con.commit()
    con.close()
    result = materialize(ALL, DAY)
    assert all(c.passed for c in result.get_asset_check_evaluations())
    reconciliation = read(distill_env, "legacy_migration")
    examples = reconciliation.filter(pl.col("legacy_table") == "examples").row(0, named=True)
    assert (examples["rows_read"], examples["quarantined"]) == (1, 1)
    assert json.loads(examples["quarantine_reasons"]) == {"missing_column:claude_response": 1}
    assert "unknown_column:mood" in examples["problems"]
    others = reconciliation.filter(pl.col("legacy_table") == "principles").row(0, named=True)
    assert others["problems"] == ["missing_table"]
    raw = reconciliation.filter(pl.col("legacy_table") == "raw_interactions").row(0, named=True)
    assert (raw["rows_read"], raw["migrated"]) == (1, 1)
    assert raw["problems"] == [
        "missing_column:domain",
        "missing_column:quality_score",
        "missing_column:processed",
        "unknown_column:mood",
    ]
    [example] = read(distill_env, "distillation_examples").to_dicts()
    assert example["source_ref"] == "partial.db#raw_interactions/7"
    records = read(distill_env, "legacy_records")
    assert json.loads(records.get_column("extra")[0]) == {"mood": "ok"}  # kept, not lost
