"""Novelty and near-duplicate rejection of telemetry feed rows.

See docs/sources/telemetry.md#novelty.
"""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import polars as pl
import pytest

from distill_assets.defs.telemetry import novelty
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


def _all_pairs_reference(
    vectors: np.ndarray, groups: np.ndarray, other: np.ndarray, other_groups: np.ndarray
) -> np.ndarray:
    """Best same-subject cosine over all pairs at once (the definition; memory rows x rows)."""
    sims = vectors @ other.T
    sims[groups[:, None] != other_groups[None, :]] = -1.0
    return np.clip(sims.max(axis=1), 0.0, 1.0) if other.size else np.zeros(len(vectors))


def _unit_rows(rng: np.random.Generator, n: int, dim: int = 8) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_subject_tiles_give_the_all_pairs_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(novelty, "TILE_ROWS", 3)  # several tiles per subject
    rng = np.random.default_rng(7)
    vectors, stored = _unit_rows(rng, 40), _unit_rows(rng, 25)
    groups = rng.choice(["p1", "p2", "p3", "p4"], size=40)
    stored_groups = rng.choice(["p2", "p3", "p5"], size=25)
    against_index = novelty._best_same_subject(vectors, groups, stored, stored_groups)
    # float32 dot products: the same up to the summation order of the BLAS kernel's blocking
    np.testing.assert_allclose(
        against_index, _all_pairs_reference(vectors, groups, stored, stored_groups), atol=1e-6
    )
    earlier = novelty._best_same_subject(vectors, groups, vectors, groups, earlier_only=True)
    reference = vectors @ vectors.T
    reference[groups[:, None] != groups[None, :]] = -1.0
    reference[np.triu_indices(len(vectors))] = -1.0
    np.testing.assert_allclose(earlier, np.clip(reference.max(axis=1), 0.0, 1.0), atol=1e-6)
    assert (against_index[groups == "p1"] == 0.0).all()  # no stored row of p1
    assert earlier[np.unique(groups, return_index=True)[1]].tolist() == [0.0] * 4  # first rows


def test_memory_is_bounded_by_a_subject_not_by_the_partition() -> None:
    rng = np.random.default_rng(3)
    rows = 20_000  # all pairs: 20,000 x 20,000 float32 = 1.6 GB
    vectors = _unit_rows(rng, rows, dim=16)
    groups = np.array([f"player-{i % 400}" for i in range(rows)], dtype=object)
    tracemalloc.start()
    try:
        novelty._best_same_subject(vectors, groups, vectors, groups, earlier_only=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20
