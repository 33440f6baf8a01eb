"""The content digest that release shard fingerprints are made from (curation.curated_table)."""

from __future__ import annotations

import polars as pl

from distill_assets.defs.curation.curated_table import content_digest


def _rows(score: float = 0.5) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": ["a", "b"],
            "quality_score": [score, 0.9],
            "messages": [[{"role": "user", "content": "x"}], [{"role": "user", "content": None}]],
        }
    )


def test_the_same_rows_give_the_same_digest_whatever_else_differs() -> None:
    assert content_digest(_rows()) == content_digest(_rows())
    assert len(content_digest(_rows())) == 64


def test_a_value_an_order_or_a_type_changes_the_digest() -> None:
    digests = {
        content_digest(_rows()),
        content_digest(_rows(score=0.6)),
        content_digest(_rows().reverse()),
        content_digest(_rows().with_columns(pl.col("quality_score").cast(pl.Float32))),
    }
    assert len(digests) == 4
