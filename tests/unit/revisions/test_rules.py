"""The revision-pair quality heuristic and text normalisation (rules/revisions.py)."""

from __future__ import annotations

import polars as pl
import pytest

from distill_assets.rules import revisions as rules


def scores(hints: list[list[str]], revisions: list[int], chosen: list[str], rejected: list[str]):
    frame = pl.DataFrame(
        {"h": hints, "n": revisions, "c": chosen, "r": rejected},
        schema={"h": pl.List(pl.String), "n": pl.UInt32, "c": pl.String, "r": pl.String},
    )
    parts = rules.score_components(pl.col("h"), pl.col("n"), pl.col("c"), pl.col("r"))
    return frame.select(**parts, score=rules.quality_score(parts))


def test_weights_sum_to_one() -> None:
    assert sum(rules.SCORE_WEIGHTS.values()) == pytest.approx(1.0)


def test_specific_single_revision_same_length_scores_one() -> None:
    out = scores([["Use a table with Product, Price and Retailer columns"]], [1], ["ab"], ["cd"])
    assert out.row(0, named=True) == {
        "hint_specificity": 1.0,
        "revision_economy": 1.0,
        "length_balance": 1.0,
        "score": 1.0,
    }


def test_components() -> None:
    out = scores(
        [["improve"], ["use a table", "sort it"], ["fix"]],
        [1, 2, 5],
        ["a" * 40, "a" * 10, "a" * 10],
        ["a" * 10, "a" * 20, "a" * 10],
    )
    assert out["hint_specificity"].to_list() == [0.125, 0.3125, 0.125]
    assert out["revision_economy"].to_list() == [1.0, 0.75, 0.25]
    # 4x longer → 0; 2x shorter → 1 - ln 2 / ln 4 = 0.5
    assert out["length_balance"].to_list() == [0.0, 0.5, 1.0]
    assert out["score"].to_list() == [0.35, 0.5, 0.425]


def test_normalized_text() -> None:
    frame = pl.DataFrame({"t": ["  Find the\tCheapest\n laptops ", "find the cheapest laptops"]})
    out = frame.select(rules.normalized_text(pl.col("t"))).to_series().to_list()
    assert out == ["find the cheapest laptops", "find the cheapest laptops"]
