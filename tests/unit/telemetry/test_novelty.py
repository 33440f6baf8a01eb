"""Novelty and near-duplicate rejection of telemetry feed rows (seed 004 stage 6)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from distill_assets.defs.telemetry.novelty import EMBEDDING, apply_novelty, feed_text
from distill_assets.lib.embed import load_embedder

NO_INDEX = pl.DataFrame(schema={"subject": pl.String(), EMBEDDING: pl.List(pl.Float32())})


def pairs(prompts: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [f"r{i}" for i in range(len(prompts))],
            "metadata": ['{"pair_kind":"ghost_replay"}'] * len(prompts),
            "subject": ["dpo:a+b"] * len(prompts),
            "prompt": prompts,
            "chosen": ["Feed the temple workers."] * len(prompts),
            "rejected": ["Feed the children."] * len(prompts),
        }
    )


def test_first_rows_are_fully_novel_and_a_same_day_copy_is_dropped() -> None:
    embedder = load_embedder()
    rows = pairs(
        ["The grain stores are empty.", "The river is low.", "The grain stores are empty."]
    )
    result = apply_novelty(rows, "dpo", NO_INDEX, embedder)
    assert result.duplicates == 1
    assert result.kept.get_column("id").to_list() == ["r0", "r1"]
    scores = [json.loads(m)["novelty_score"] for m in result.kept.get_column("metadata")]
    assert scores[0] == 1.0
    assert 0.0 < scores[1] < 1.0
    assert json.loads(result.kept.item(0, "metadata"))["pair_kind"] == "ghost_replay"


def test_rows_already_published_are_the_index() -> None:
    embedder = load_embedder()
    published = apply_novelty(
        pairs(["The grain stores are empty."]), "dpo", NO_INDEX, embedder
    ).kept
    index = published.select("subject", EMBEDDING)
    today = pairs(["The grain stores are empty.", "Two neighbours dispute a boundary stone."])
    result = apply_novelty(today, "dpo", index, embedder)
    assert result.duplicates == 1
    assert result.kept.get_column("id").to_list() == ["r1"]
    stored = np.asarray(index.get_column(EMBEDDING).to_list(), dtype=np.float32)
    expected = 1.0 - float(
        (embedder.embed(today.select(feed_text("dpo")).to_series())[1] @ stored[0]).clip(0, 1)
    )
    assert json.loads(result.kept.item(0, "metadata"))["novelty_score"] == round(expected, 4)


def test_other_contributors_rows_are_not_compared() -> None:
    embedder = load_embedder()
    rows = pairs(["The grain stores are empty.", "The grain stores are empty."]).with_columns(
        pl.Series("subject", ["dpo:a+b", "dpo:c+d"])
    )
    result = apply_novelty(rows, "dpo", NO_INDEX, embedder)
    assert result.duplicates == 0
    assert [json.loads(m)["novelty_score"] for m in result.kept.get_column("metadata")] == [
        1.0,
        1.0,
    ]
