"""DISTILL_EVAL_SETS reaches the curation assets: a leaked eval question never reaches a release."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from distill_assets.defs.curation.curated_table import read_curated
from distill_assets.lib.lake import global_path
from distill_assets.lib.settings import Settings
from tests.conftest import materialize
from tests.unit.curation.feeds import feed_frame, feed_row, write_feed

QUESTION = (
    "Which gas do plants absorb from the atmosphere during photosynthesis and which one do "
    "they release back into the air"
)


def test_an_eval_question_in_escalations_is_removed_as_contaminated(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "science_qa.jsonl").write_text(json.dumps({"question": QUESTION}) + "\n")
    monkeypatch.setenv("DISTILL_EVAL_SETS", str(evals))
    rows = [
        feed_row("instruction", "leak", f"Quiz: {QUESTION}?", source="escalations", group="s"),
        feed_row("instruction", "fine", "Rotate the deploy keys", source="escalations", group="s"),
    ]
    write_feed(
        distill_env.lake_root,
        "escalations",
        "instruction_examples",
        "2026-11-19",
        feed_frame("instruction", rows),
    )
    assert materialize('key:"curation/*"').success
    lake = distill_env.lake_root
    curated = read_curated(lake, "instruction")
    removed = pl.read_parquet(str(global_path(lake, "curation", "instruction_duplicates")))
    assert curated["id"].to_list() == ["fine"]
    assert removed.select("id", "reason", "eval_file").rows() == [
        ("leak", "contaminated", "science_qa.jsonl")
    ]
