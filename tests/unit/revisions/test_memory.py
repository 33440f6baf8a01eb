"""The principles memory: the seed's exact file format, idempotent sync, retrieval."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from distill_assets.defs.revisions.memory import (
    memory_drift,
    parse_principle_file,
    read_memory,
    render_principle,
    search,
    sync_memory,
)
from distill_assets.defs.revisions.merge import merge_principles
from distill_assets.defs.revisions.principles import extract_turn_principles
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.hashing import stable_id
from tests.unit.revisions.loops import OTHER_TOPICS, laptop_loop, other_topic_loops, pairs_of

LAPTOP_ID = stable_id("principle", "revisions", "turn:turn_001234")
LAPTOP_FILE = f"price-comparison-table-format-{LAPTOP_ID}.md"
# docs/sources/revisions.md#principle-format, its own example
LAPTOP_MARKDOWN = """---
category: formatting
trigger_pattern: price comparison queries
source_turn: turn_001234
confidence: 0.8
created_at: 2026-11-19T08:14:05
tags: [improvement-principle, formatting]
---

# Price Comparison Table Format

When answering price comparison queries, present the options as a markdown table with columns \
for Laptop, Price, and Retailer rather than prose paragraphs.

## Why This Works

Users can scan tables faster than reading sentences. Side-by-side comparison is more intuitive \
for decision-making.

## Pattern

**Original issue:** Response listed the items in paragraph form.

**Successful fix:** Converted to table format with clear headers (Laptop, Price, and Retailer).
"""


def merged(validations: list[dict[str, object]]) -> pl.DataFrame:
    frame, _ = extract_turn_principles(pairs_of(validations), None, "revisions")
    return merge_principles(frame, load_embedder())


def test_a_single_turn_principle_is_the_seeds_format_exactly() -> None:
    [row] = merged(laptop_loop()).to_dicts()
    assert render_principle(row) == LAPTOP_MARKDOWN


def test_a_merged_principle_adds_support_and_source_turns() -> None:
    [row] = merged(laptop_loop() + laptop_loop("turn 9: retry", ts=1_795_080_000.0)).to_dicts()
    front = render_principle(row).split("---\n")[1]
    assert front == (
        "category: formatting\n"
        "trigger_pattern: price comparison queries\n"
        "source_turn: turn_001234\n"
        "confidence: 0.85\n"
        "support: 2\n"
        'source_turns: [turn_001234, "turn 9: retry"]\n'
        "created_at: 2026-11-19T08:14:05\n"
        "tags: [improvement-principle, formatting]\n"
    )


def test_sync_writes_once_rewrites_nothing_and_removes_only_its_own_stale_files(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "Improvements" / "Principles"
    principles = merged(laptop_loop() + other_topic_loops())
    assert sync_memory(folder, principles).written == principles.height
    assert (folder / LAPTOP_FILE).read_text(encoding="utf-8") == LAPTOP_MARKDOWN
    stamps = {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in folder.iterdir()}

    again = sync_memory(folder, principles)
    assert (again.written, again.unchanged, again.removed) == (0, principles.height, 0)
    assert {p.name: (p.stat().st_mtime_ns, p.stat().st_ino) for p in folder.iterdir()} == stamps

    (folder / "my-own-note.md").write_text("# Mine\n\nKeep me.\n", encoding="utf-8")
    later = sync_memory(folder, principles.filter(pl.col("id") != LAPTOP_ID))
    assert (later.written, later.removed) == (0, 1)
    assert not (folder / LAPTOP_FILE).exists()
    assert (folder / "my-own-note.md").exists()
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_drift_counts_missing_differing_and_stale_files(tmp_path: Path) -> None:
    principles = merged(laptop_loop() + other_topic_loops())
    sync_memory(tmp_path, principles)
    assert memory_drift(tmp_path, principles) == {"missing": 0, "differing": 0, "stale": 0}
    (tmp_path / LAPTOP_FILE).write_text("edited by hand", encoding="utf-8")
    other = next(name for name in sorted(principles["file"]) if name != LAPTOP_FILE)
    (tmp_path / other).unlink()
    (tmp_path / f"old-principle-{'0' * 16}.md").write_text("stale", encoding="utf-8")
    assert memory_drift(tmp_path, principles) == {"missing": 1, "differing": 1, "stale": 1}


def test_parse_reads_front_matter_title_and_principle() -> None:
    fields = parse_principle_file(LAPTOP_MARKDOWN)
    assert fields["category"] == "formatting"
    assert fields["trigger_pattern"] == "price comparison queries"
    assert fields["confidence"] == "0.8"
    assert fields["title"] == "Price Comparison Table Format"
    assert fields["principle"].startswith("When answering price comparison queries, present")
    assert fields["principle"].endswith("rather than prose paragraphs.")


def test_search_ranks_the_seeds_principle_first_among_other_topics(tmp_path: Path) -> None:
    principles = merged(laptop_loop() + other_topic_loops())
    sync_memory(tmp_path, principles)
    others = len(read_memory(tmp_path)) - 1
    assert others >= 20
    assert len(OTHER_TOPICS) >= others
    found = search(tmp_path, "compare prices for mechanical keyboards", load_embedder(), 3)
    assert found[0][1]["file"] == LAPTOP_FILE
    scores = [score for score, _ in found]
    assert scores == sorted(scores, reverse=True)
    assert search(tmp_path / "missing", "anything", load_embedder(), 3) == []
