"""A day's products computed in slices are the day's products computed at once, column by column.

`products.write_day_products` cuts a day's feed files into slices of about `slice_bytes`
(`feed_slices`, by the footers' row-group sizes) and writes each slice's products as it is done;
every product column must depend on its row alone (`product_row` on the slice's offset, the scrub
of checked numbers on the whole day's candidates), so one slice, one slice per row and the
in-memory `compute_products` of the whole day give the same rows, values and order.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal
from upath import UPath

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.curation.decontaminate import load_eval_ngrams
from distill_assets.defs.curation.pipeline import scan_feeds
from distill_assets.defs.curation.products import (
    VECTOR_COLUMNS,
    ProductContext,
    compute_products,
    day_feed_files,
    feed_slices,
    read_products,
    vector_row_bytes,
    write_day_products,
)
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.lake import partition_path
from distill_assets.lib.scrub import redaction_column
from tests.unit.curation.feeds import feed_row
from tests.unit.curation.test_part_dedup import episode
from tests.unit.curation.texts import changed, words

DAY = "2026-11-19"
CARD = "4539 1488 0343 6467"  # Luhn-valid, not a published test number
EVAL_WORDS = words("eval", 20)


def _dpo_rows(source: str, count: int) -> list[dict[str, object]]:
    rows = []
    for i in range(count):
        text = " ".join(words(f"{source}-{i % 4}", 30))
        extra = {
            0: f" mail me at user{i}@corp.com",
            1: f" card {CARD}",  # a valid card number: found in this row
            2: f" ref x{CARD}",  # inside a longer run: replaced only with the day's candidates
            3: " broken \ufffd text",
            4: " " + " ".join(EVAL_WORDS),  # contaminated by the eval set
        }.get(i % 7, "")
        rows.append(
            feed_row(
                "dpo",
                f"{source}-{i}",
                text + extra,
                source=source,
                group=f"g{i % 3}",
                score=0.2 + 0.1 * (i % 7),
                event_time=float(i),
                metadata={"trust": 0.5 + 0.01 * i} if i % 2 else None,
            )
        )
    return rows


def _rlds_rows(count: int) -> list[dict[str, object]]:
    actions = words("action", 12)
    return [
        episode(
            f"ep{i}",
            changed(actions, [i % 12], f"c{i}"),
            trust=0.4 + 0.05 * i,
            success=i % 3 != 0,
            seed=f"s{i}",
            score=0.1 * (i % 10),
            event_time=float(i),
        )
        for i in range(count)
    ]


def _sft_rows(count: int) -> list[dict[str, object]]:
    return [
        feed_row(
            "sft",
            f"s{i}",
            " ".join(words(f"sft-{i % 5}", 25)) + (f" call +1 415 555 01{i:02d}" if i % 2 else ""),
            source="traces",
            group=f"task-{i % 4}",
            score=0.5,
            event_time=float(i),
        )
        for i in range(count)
    ]


FEEDS = {
    "dpo": {
        ("revisions", "revision_pairs"): lambda: _dpo_rows("revisions", 23),
        ("escalations", "preference_pairs"): lambda: _dpo_rows("escalations", 9),
    },
    "rlds": {("telemetry", "episodes"): lambda: _rlds_rows(17)},
    "sft": {
        ("traces", "sft_steps"): lambda: _sft_rows(11),
        ("telemetry", "dialogues"): lambda: _sft_rows(6),
    },
}


def _write_lake(lake: str, config: str) -> None:
    """Write the config's feed partitions of `DAY`, in row groups of 3 rows."""
    for (source, table), rows in FEEDS[config].items():
        path = partition_path(lake, source, table, DAY)
        path.parent.mkdir(parents=True, exist_ok=True)
        frame = pl.DataFrame(rows(), schema=feed_schema(config))
        pq.write_table(frame.to_arrow(), path.path, row_group_size=3)


@pytest.fixture
def evals(tmp_path: Path):
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "bench.jsonl").write_text(json.dumps({"q": " ".join(EVAL_WORDS)}) + "\n")
    return load_eval_ngrams(str(folder))


@pytest.mark.parametrize("config", ["dpo", "rlds", "sft"])
def test_slices_give_the_products_of_the_whole_day(tmp_path: Path, evals, config: str) -> None:
    lake = str(tmp_path / "lake")
    _write_lake(lake, config)
    context = ProductContext(config, load_embedder(), evals)
    files = day_feed_files(lake, config)[DAY]
    groups = [pq.ParquetFile(path.path).metadata.row_group(0).total_byte_size for *_, path in files]
    # a few rows: two row groups' feed bytes and the vectors of four rows
    some = 2 * max(groups) + 4 * vector_row_bytes(context)
    written, frames = {}, {}
    for name, slice_bytes in (("one", 1 << 40), ("rows", 1), ("some", some)):
        path = UPath(tmp_path / name / f"{DAY}.parquet")
        written[name] = write_day_products(
            path, files, DAY, context, fingerprint="f", slice_bytes=slice_bytes
        )
        frames[name] = read_products([path])
    rows = sum(len(make()) for make in FEEDS[config].values())
    # a slice never spans two feed files: one per file, one per row, or a few per file
    assert (written["one"].slices, written["rows"].slices) == (len(files), rows)
    assert len(files) < written["some"].slices < rows
    assert 1 < written["some"].largest_slice_rows <= 4
    assert written["rows"].rows == written["one"].rows == rows
    assert written["rows"].largest_slice_rows == 1
    whole = compute_products(scan_feeds(lake, config, {DAY}), context)
    one = frames["one"]
    assert_frame_equal(one, whole, check_exact=True)
    assert_frame_equal(frames["rows"], one, check_exact=True)
    assert_frame_equal(frames["some"], one, check_exact=True)
    assert one["product_row"].to_list() == list(range(rows))
    # a slice is sized by its vectors' bytes too: those of the product's columns
    sizes = {pl.UInt32: 4, pl.UInt64: 8, pl.Float32: 4, pl.Boolean: 1}
    assert vector_row_bytes(context) == sum(
        dtype.size * sizes[dtype.inner] if isinstance(dtype, pl.Array) else sizes[dtype]
        for dtype in (one.schema[name] for name in VECTOR_COLUMNS)
    )
    # the vector columns are not all zeros (the comparison compares something)
    for name in VECTOR_COLUMNS:
        assert np.abs(one[name].to_numpy().astype(np.float64)).sum() > 0, name
    if config == "dpo":
        # every column kind is exercised: redactions (a card replaced inside another row's
        # longer run: the day's candidates reach every slice), U+FFFD, contamination, trust
        cards = one.filter(pl.col(redaction_column("payment_card")) > 0)
        assert cards["id"].to_list() == [
            *(f"revisions-{i}" for i in (1, 2, 8, 9, 15, 16, 22)),
            *(f"escalations-{i}" for i in (1, 2, 8)),
        ]
        # prompt, chosen and rejected each hold the number once
        assert set(cards[redaction_column("payment_card")].to_list()) == {3}
        assert one.filter(pl.col("id") == "revisions-2")["prompt"][0][0]["content"].endswith(
            "ref x[REDACTED_CARD]"
        )
        assert one["replacement_chars"].sum() > 0
        assert one["contaminated_by"].drop_nulls().unique().to_list() == ["bench.jsonl"]
        assert one["trust"].null_count() < rows


def test_slices_follow_row_groups_and_cut_large_ones(tmp_path: Path) -> None:
    lake = str(tmp_path / "lake")
    _write_lake(lake, "dpo")
    paths = [path for _, _, path in day_feed_files(lake, "dpo")[DAY]]
    whole = feed_slices(paths, 1 << 40)
    assert [(s.path.name, s.offset, s.rows, s.first_row) for s in whole] == [
        (f"{DAY}.parquet", 0, 23, 0),
        (f"{DAY}.parquet", 0, 9, 23),
    ]
    # with the vectors of a row counted, a slice of 4 rows' vectors holds 4 rows at most
    capped = feed_slices(paths, 1 << 40, row_bytes=1 << 38)
    assert [(s.offset, s.rows, s.first_row) for s in capped] == [
        (0, 3, 0),
        (3, 3, 3),
        (6, 3, 6),
        (9, 3, 9),
        (12, 3, 12),
        (15, 3, 15),
        (18, 3, 18),
        (21, 2, 21),
        (0, 3, 23),
        (3, 3, 26),
        (6, 3, 29),
    ]
    single = feed_slices(paths, 1)
    assert [(s.offset, s.rows, s.first_row) for s in single] == [
        *((i, 1, i) for i in range(23)),
        *((i, 1, 23 + i) for i in range(9)),
    ]
    assert [s.path for s in single] == [paths[0]] * 23 + [paths[1]] * 9
