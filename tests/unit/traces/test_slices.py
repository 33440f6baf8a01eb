"""Sliced extraction: the request text is handled slice by slice, and slicing changes nothing.

A slice is a run of bronze row groups. Bronze files are rewritten here with row groups of a few
rows, so requests, their actions and a run's first request fall in different slices, and the
samples (both formats, Parquet and JSONL), the dropped steps and the summary must be exactly those
of the extraction in one slice.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from distill_assets.contracts.traces import RAW
from distill_assets.defs.ingest import ingest_partition
from distill_assets.defs.traces.sft_extraction import Extraction, ExtractOptions
from distill_assets.lib import lake
from distill_assets.samples.traces import generate_day

DAY = "2026-11-19"
SMALL_ROW_GROUP = 5
ONE_SLICE = 1 << 60


@pytest.fixture(scope="module")
def bronze(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bronze events of two batches of generated traces, in row groups of 5 rows."""
    root = tmp_path_factory.mktemp("slices")
    day = generate_day(root / "raw", DAY, 2, 3)
    ingested = ingest_partition(RAW, sorted(str(p) for p in day.files), raw_root=str(root / "raw"))
    small = root / "events.parquet"
    pq.write_table(pq.read_table(ingested.bronze.path), small, row_group_size=SMALL_ROW_GROUP)
    return small


def outputs(bronze: Path, work: Path, slice_bytes: int, **options: object) -> dict[str, object]:
    work.mkdir()
    with Extraction(bronze, ExtractOptions(**options), slice_event_bytes=slice_bytes) as ex:
        slices = ex.slices()
        written = ex.write_sft_steps(work / "sft.parquet", "together")
        ex.write_sft_steps(work / "tools.parquet", "tools")
        ex.write_dropped_steps(work / "dropped.parquet")
        lines = ex.write_jsonl(work / "tools.jsonl", "tools", split="train")
        summary = ex.summary()
        assert ex.slice_count == len(slices)
    return {
        "slices": len(slices),
        "written": written,
        "lines": lines,
        "summary": summary,
        "sft": pl.read_parquet(work / "sft.parquet"),
        "tools": pl.read_parquet(work / "tools.parquet"),
        "dropped": pl.read_parquet(work / "dropped.parquet"),
        "jsonl": (work / "tools.jsonl").read_bytes(),
    }


def test_slices_cover_every_row_in_row_order(bronze: Path) -> None:
    rows = pq.ParquetFile(bronze).metadata.num_rows
    groups = -(-rows // SMALL_ROW_GROUP)
    with Extraction(bronze, ExtractOptions(), slice_event_bytes=1) as ex:
        per_group = ex.slices()
    assert len(per_group) == groups
    assert [lo for lo, _ in per_group] == list(range(0, rows, SMALL_ROW_GROUP))
    assert all(hi == lo for (_, hi), (lo, _) in itertools.pairwise(per_group))
    assert per_group[-1][1] > rows
    with Extraction(bronze, ExtractOptions(), slice_event_bytes=ONE_SLICE) as ex:
        assert ex.slices() == [(0, per_group[-1][1])]


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"max_context_chars": 0, "include_recovery": True},
        {"require_success": False, "dedup": False, "eval_fraction": 0.5},
    ],
    ids=["defaults", "full-context-recovery", "all-runs-no-dedup"],
)
def test_many_slices_write_what_one_slice_writes(
    bronze: Path, tmp_path: Path, options: dict[str, object]
) -> None:
    one = outputs(bronze, tmp_path / "one", ONE_SLICE, **options)
    many = outputs(bronze, tmp_path / "many", 1, **options)
    assert one["slices"] == 1
    assert many["slices"] == pq.ParquetFile(bronze).metadata.num_row_groups
    assert many["written"] == one["written"] == one["summary"].samples > 0
    assert many["lines"] == one["lines"]
    assert many["summary"] == one["summary"]
    for table in ("sft", "tools", "dropped"):
        assert many[table].equals(one[table]), table
    assert many["jsonl"] == one["jsonl"]


def test_samples_are_in_raw_order_across_slices(bronze: Path, tmp_path: Path) -> None:
    many = outputs(bronze, tmp_path / "many", 1)
    sft = many["sft"]
    assert isinstance(sft, pl.DataFrame)
    keys = list(sft.select("source_file", "line_no").iter_rows())
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


def test_sample_row_groups_are_full_whatever_the_slices(
    bronze: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = 7
    monkeypatch.setattr(lake, "ROW_GROUP_SIZE", rows)
    with Extraction(bronze, ExtractOptions(), slice_event_bytes=1) as ex:
        written = ex.write_sft_steps(tmp_path / "sft.parquet")
    meta = pq.ParquetFile(tmp_path / "sft.parquet").metadata
    sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert written > rows
    assert sizes == [rows] * (written // rows) + ([written % rows] if written % rows else [])
