"""`distill principles search` on a memory folder: table, JSON, --top, --memory-root, empty."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distill_assets.cli import main
from distill_assets.defs.revisions.memory import principles_folder, sync_memory
from distill_assets.defs.revisions.merge import merge_principles
from distill_assets.defs.revisions.principles import extract_turn_principles
from distill_assets.lib.embed import load_embedder
from tests.unit.revisions.loops import laptop_loop, other_topic_loops, pairs_of
from tests.unit.revisions.test_memory import LAPTOP_FILE

QUERY = "compare prices for mechanical keyboards"


@pytest.fixture
def memory_root(tmp_path: Path) -> Path:
    frame, _ = extract_turn_principles(
        pairs_of(laptop_loop() + other_topic_loops()), None, "revisions"
    )
    sync_memory(principles_folder(tmp_path), merge_principles(frame, load_embedder()))
    return tmp_path


def test_table_and_json_with_top_and_memory_root(
    memory_root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["principles", "search", QUERY, "--top", "2", "--memory-root", str(memory_root)]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["#", "score", "category", "title", "file"]
    assert len(lines) == 5
    assert lines[2].endswith(LAPTOP_FILE)
    assert lines[-1] == f"[principles] best 2 from {principles_folder(memory_root)}"

    assert main(["principles", "search", QUERY, "--json", "--memory-root", str(memory_root)]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in found] == [1, 2, 3, 4, 5]
    assert found[0]["file"] == str(principles_folder(memory_root) / LAPTOP_FILE)
    assert found[0]["trigger_pattern"] == "price comparison queries"
    assert found[0]["title"] == "Price Comparison Table Format"
    assert [r["score"] for r in found] == sorted((r["score"] for r in found), reverse=True)


def test_an_empty_memory_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["principles", "search", QUERY, "--memory-root", str(tmp_path)]) == 1
    assert "no principles in" in capsys.readouterr().out
    assert main(["principles", "search", QUERY, "--json", "--memory-root", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out) == []
