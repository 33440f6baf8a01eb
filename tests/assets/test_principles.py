"""Principles assets in-process: samples, the original example end to end, reruns, LLM fallback."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from distill_assets.cli import main
from distill_assets.defs.revisions.memory import principles_folder
from distill_assets.lib.hashing import stable_id
from distill_assets.lib.lake import global_path, partition_path
from distill_assets.lib.settings import Settings
from tests.conftest import land, materialize
from tests.fixtures.llm_server import chat_server
from tests.unit.revisions.loops import laptop_loop, other_topic_loops
from tests.unit.revisions.test_memory import LAPTOP_FILE, LAPTOP_MARKDOWN

DAY1, DAY2 = "2026-11-19", "2026-11-20"
DAILY = 'key:"revisions/*" and not key:"revisions/principles"'
MEMORY = 'key:"revisions/principles"'
RAW_FIELDS = ("turn_id", "ts", "iteration", "query", "response", "decision", "revision_hints")


@pytest.fixture(autouse=True)
def _default_memory_and_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DISTILL_MEMORY_ROOT", "DISTILL_LLM_BASE_URL", "DISTILL_EMBEDDER"):
        monkeypatch.delenv(name, raising=False)


def lake(settings: Settings, table: str, day: str) -> pl.DataFrame:
    return pl.read_parquet(str(partition_path(settings.lake_root, "revisions", table, day)))


def metadata(result: dg.ExecuteInProcessResult, table: str) -> dict[str, dg.MetadataValue]:
    key = dg.AssetKey(["revisions", table])
    [event] = [e for e in result.get_asset_materialization_events() if e.asset_key == key]
    return event.materialization.metadata


def raw_lines(validations: list[dict[str, object]]) -> str:
    records = [
        {
            **{name: v[name] for name in RAW_FIELDS},
            "revision_focus": v["revision_focus"],
        }
        for v in validations
    ]
    return "".join(json.dumps(r) + "\n" for r in records)


def test_samples_give_one_principle_per_pair_and_count_the_rest(sample_env: Settings) -> None:
    first = materialize(DAILY, DAY1)
    materialize(DAILY, DAY2)
    principles = pl.concat([lake(sample_env, "turn_principles", d) for d in (DAY1, DAY2)])
    pairs = pl.concat([lake(sample_env, "revision_pairs", d) for d in (DAY1, DAY2)])
    # every dpo pair names the principle of its turn, and only pairs yield principles
    named = pairs.select(
        pl.col("metadata")
        .str.json_decode(pl.Struct({"principle_id": pl.String()}))
        .struct.field("principle_id")
        .alias("id"),
        pl.col("id").alias("pair_id"),
    )
    assert sorted(named.rows()) == sorted(principles.select("id", "pair_id").rows())
    assert principles.height == 11
    unpaired = lake(sample_env, "unpaired_turns", DAY1)
    no_principle = unpaired.filter(
        pl.col("reason").is_in(["failed", "approved_without_revision", "empty_revision_hints"])
    )
    assert no_principle.height == 5
    assert not set(no_principle["turn_id"]) & set(principles["turn_id"])
    outcomes = metadata(first, "turn_principles")["turn_outcomes"].value
    for line in (
        "| principle | 5 |",
        "| failed | 2 |",
        "| approved_without_revision | 2 |",
        "| empty_revision_hints | 1 |",
    ):
        assert line in outcomes
    assert metadata(first, "turn_principles")["rows_by_extractor"].value.count("offline") == 1

    assert {e.check_name: e.passed for e in first.get_asset_check_evaluations()}[
        "one_principle_per_pair"
    ]
    result = materialize(MEMORY)
    assert [(e.check_name, e.passed) for e in result.get_asset_check_evaluations()] == [
        ("memory_in_sync", True)
    ]
    merged = pl.read_parquet(str(global_path(sample_env.lake_root, "revisions", "principles")))
    folder = principles_folder(sample_env.memory_root)
    assert sorted(p.name for p in folder.iterdir()) == sorted(merged["file"])
    assert merged["support"].sum() == 11
    laptops = merged.filter(pl.col("trigger_pattern") == "price comparison queries").row(
        0, named=True
    )
    assert laptops["source_turns"] == ["turn_001234", "turn_001246", "turn_001250", "turn_001256"]
    assert (laptops["support"], laptops["confidence"]) == (4, 0.95)
    assert "| written | 6 |" in metadata(result, "principles")["files"].value


def test_seed_example_end_to_end_and_a_rerun_rewrites_no_file(
    distill_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    land(distill_env, "revisions", DAY1, "gateway.jsonl", raw_lines(laptop_loop()))
    land(distill_env, "revisions", DAY2, "gateway.jsonl", raw_lines(other_topic_loops()))
    materialize(DAILY, DAY1)
    materialize(DAILY, DAY2)
    materialize(MEMORY)
    folder = principles_folder(distill_env.memory_root)
    assert (folder / LAPTOP_FILE).read_text(encoding="utf-8") == LAPTOP_MARKDOWN
    files = sorted(folder.iterdir())
    assert len(files) - 1 >= 20

    assert main(["principles", "search", "compare prices for mechanical keyboards", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert len(found) == 5
    assert Path(found[0]["file"]).name == LAPTOP_FILE
    assert (found[0]["category"], found[0]["confidence"], found[0]["support"]) == (
        "formatting",
        0.8,
        1,
    )
    assert main(["principles", "search", "compare prices for mechanical keyboards"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[2].split()[:3] == ["1", table[2].split()[1], "formatting"]
    assert table[2].endswith(LAPTOP_FILE)

    stamps = {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in files}
    tables = [
        partition_path(distill_env.lake_root, "revisions", "turn_principles", DAY2),
        global_path(distill_env.lake_root, "revisions", "principles"),
    ]
    before = [t.read_bytes() for t in tables]
    materialize(DAILY, DAY2)
    result = materialize(MEMORY)
    assert [t.read_bytes() for t in tables] == before
    assert {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in folder.iterdir()} == stamps
    assert "| written | 0 |" in metadata(result, "principles")["files"].value


def test_a_failing_llm_falls_back_and_never_fails_the_run(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    land(distill_env, "revisions", DAY1, "gateway.jsonl", raw_lines(laptop_loop()))
    with chat_server(lambda body: (503, "overloaded")) as server:
        monkeypatch.setenv("DISTILL_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("DISTILL_LLM_MODEL", "tiny")
        result = materialize(DAILY, DAY1)
    meta = metadata(result, "turn_principles")
    assert "| http_503 | 1 |" in meta["llm_fallbacks"].value
    assert "| offline | 1 |" in meta["rows_by_extractor"].value
    [row] = lake(distill_env, "turn_principles", DAY1).to_dicts()
    assert row["id"] == stable_id("principle", "revisions", "turn:turn_001234")
    assert (row["extractor"], row["category"]) == ("offline", "formatting")
