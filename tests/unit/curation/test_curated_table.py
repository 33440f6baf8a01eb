"""Curated partition files (curation.curated_table): the content digest, the streamed write."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import fsspec
import polars as pl
import pytest
from upath import UPath

from distill_assets.contracts.published import published_schema
from distill_assets.defs.curation import curated_table
from distill_assets.defs.curation.curated_table import (
    CONTENT_METADATA,
    DECISION_COLUMNS,
    KEY_METADATA,
    PLACEHOLDERS_METADATA,
    SORT_COLUMNS,
    content_digest,
    curated_schema,
    write_partition,
)
from distill_assets.lib import lake
from distill_assets.lib.lake import write_parquet_atomic
from distill_assets.lib.scrub import placeholder_counts, scrubbed_columns


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


def _product(rows: int) -> pl.DataFrame:
    """Product-file columns a curated partition is written from, with ties, nulls and repeats."""
    n = pl.int_range(rows, eager=True)
    return pl.DataFrame(
        {
            "product_row": n.cast(pl.Int64),
            "id": (n % 37).cast(pl.String).replace("5", None),  # repeated ids: ties kept in order
            "source": pl.Series(["traces"] * rows),
            "source_ref": (n % 11).cast(pl.String),
            "quality_score": (n % 7).cast(pl.Float64) / 7,
            "metadata": n.cast(pl.String),
            "prompt": [
                [{"role": "user", "content": f"q{i} [REDACTED_EMAIL]"}] for i in range(rows)
            ],
            "completion": [
                [{"role": "assistant", "content": None if i % 13 == 0 else f"a{i} é"}]
                for i in range(rows)
            ],
            "split_group": (n % 5).cast(pl.String),
            "content_hash": (n % 3).cast(pl.String),
            "partition": pl.Series(["2026-11-19"] * rows),
        }
    )


def _written_whole(product: pl.DataFrame, decisions: pl.DataFrame, path: UPath, key: str) -> None:
    """Write a curated partition the way it was written before streaming: the whole frame."""
    schema = curated_schema("sft")
    rows = (
        product.join(decisions, on="product_row", how="inner", maintain_order="left")
        .select(schema.names())
        .cast(dict(schema))
        .sort(list(SORT_COLUMNS), maintain_order=True)
    )
    placeholders = placeholder_counts(rows, scrubbed_columns(published_schema("sft")))
    arrow = rows.to_arrow().replace_schema_metadata(
        {
            KEY_METADATA: key.encode(),
            PLACEHOLDERS_METADATA: json.dumps(placeholders, sort_keys=True).encode(),
            CONTENT_METADATA: content_digest(rows).encode(),
        }
    )
    write_parquet_atomic(arrow, path)


@pytest.mark.parametrize("published", [0, 1, 97])
def test_a_partition_written_row_group_by_row_group_is_byte_identical_to_writing_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, published: int
) -> None:
    # row groups of 10 rows: the 97 published rows are 10 row groups, the last one short
    monkeypatch.setattr(curated_table, "ROW_GROUP_SIZE", 10)
    monkeypatch.setattr(lake, "ROW_GROUP_SIZE", 10)
    product = _product(200)
    products = UPath(tmp_path / "product.parquet")
    write_parquet_atomic(product, products)
    chosen = pl.int_range(200, eager=True).filter(pl.int_range(200, eager=True) % 2 == 1)
    decisions = pl.DataFrame(
        {
            "product_row": chosen.head(published).cast(pl.Int64),
            "split": ["train" if i % 3 else "test" for i in range(min(published, 100))],
            "split_by": ["group"] * min(published, 100),
        }
    ).select(DECISION_COLUMNS)
    streamed, whole = UPath(tmp_path / "streamed.parquet"), UPath(tmp_path / "whole.parquet")
    counts, content = write_partition(
        str(tmp_path), "sft", products, decisions, path=streamed, key="k"
    )
    _written_whole(product, decisions, whole, "k")
    assert streamed.read_bytes() == whole.read_bytes()
    written = pl.read_parquet(streamed)
    assert written.height == published
    assert content == content_digest(written)
    assert counts == ({"REDACTED_EMAIL": published} if published else {})


def test_a_partition_of_a_remote_lake_is_written_from_its_remote_product(tmp_path: Path) -> None:
    root = f"memory://distill-{uuid.uuid4().hex}/lake"
    product = _product(30)
    decisions = pl.DataFrame(
        {"product_row": [3, 1, 2], "split": ["train", "test", "train"], "split_by": ["group"] * 3}
    )
    local, remote = UPath(tmp_path / "p.parquet"), UPath(f"{root}/p.parquet")
    write_parquet_atomic(product, local)
    write_parquet_atomic(product, remote)
    try:
        write_partition(str(tmp_path), "sft", local, decisions, path=UPath(tmp_path / "c"), key="k")
        write_partition(root, "sft", remote, decisions, path=UPath(f"{root}/c"), key="k")
        assert UPath(f"{root}/c").read_bytes() == UPath(tmp_path / "c").read_bytes()
        assert pl.read_parquet(tmp_path / "c")["id"].to_list() == ["1", "2", "3"]
    finally:
        fsspec.filesystem("memory").rm(root.rsplit("/", 1)[0], recursive=True)
