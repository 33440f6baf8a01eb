"""`lake.frame_batches`, `lake.write_frames` and `lake.parquet_writer_atomic`: a table streamed
through in batches."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from upath import UPath

from distill_assets.lib.lake import (
    ROW_GROUP_SIZE,
    RowGroupWriter,
    frame_batches,
    parquet_key_values,
    parquet_writer_atomic,
    read_parquet_table,
    write_frames,
    write_frames_as_one,
    write_parquet_atomic,
)


def test_frame_batches_yield_every_row_in_order_in_batches_of_the_size() -> None:
    frame = pl.LazyFrame({"n": range(10)})

    batches = list(frame_batches(frame, 4))

    assert [b.get_column("n").to_list() for b in batches] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9],
    ]


def test_frame_batches_of_an_empty_frame_are_one_empty_frame_with_its_schema() -> None:
    frame = pl.LazyFrame(schema={"n": pl.Int64, "s": pl.String})

    batches = list(frame_batches(frame, 4))

    assert len(batches) == 1
    assert batches[0].height == 0
    assert batches[0].schema == pl.Schema({"n": pl.Int64, "s": pl.String})


def test_write_frames_writes_every_frame_in_full_row_groups(tmp_path: Path) -> None:
    rows = ROW_GROUP_SIZE + 100
    frames = [
        pl.DataFrame({"n": range(start, min(start + 3000, rows)), "s": "x"})
        for start in range(0, rows, 3000)
    ]
    target = tmp_path / "t.parquet"

    written = write_frames(iter(frames), target)

    assert written == rows
    assert pl.read_parquet(target).equals(pl.concat(frames))
    meta = pq.ParquetFile(target).metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [
        ROW_GROUP_SIZE,
        100,
    ]
    assert meta.row_group(0).column(0).compression == "ZSTD"


def test_write_frames_casts_later_frames_to_the_first_frames_schema(tmp_path: Path) -> None:
    first = pl.DataFrame({"n": [1]}, schema={"n": pl.Int64})
    later = pl.DataFrame({"n": [2]}, schema={"n": pl.Int32})
    target = tmp_path / "t.parquet"

    write_frames([first, later], target)

    assert pl.read_parquet(target).equals(pl.DataFrame({"n": [1, 2]}, schema={"n": pl.Int64}))


def test_write_frames_of_one_empty_frame_is_an_empty_table_with_the_schema(
    tmp_path: Path,
) -> None:
    target = tmp_path / "t.parquet"

    assert write_frames([pl.DataFrame(schema={"n": pl.Int64})], target) == 0
    assert pl.read_parquet(target).schema == pl.Schema({"n": pl.Int64})


def test_write_frames_needs_at_least_one_frame(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="got no frame"):
        write_frames([], tmp_path / "t.parquet")


def test_write_frames_raises_what_the_producer_raised_and_stops_writing(tmp_path: Path) -> None:
    def frames() -> Iterator[pl.DataFrame]:
        yield pl.DataFrame({"n": [1, 2]})
        raise RuntimeError("batch 2 failed")

    threads = threading.active_count()

    with pytest.raises(RuntimeError, match="batch 2 failed"):
        write_frames(frames(), tmp_path / "t.parquet")
    assert threading.active_count() == threads


def test_write_frames_raises_what_the_writer_failed_with(tmp_path: Path) -> None:
    frames = [pl.DataFrame({"n": [1]}), pl.DataFrame({"n": ["not a number"]})]
    threads = threading.active_count()

    with pytest.raises(pa.ArrowInvalid):
        write_frames(frames, tmp_path / "t.parquet")
    assert threading.active_count() == threads


def test_row_group_writer_bytes_do_not_depend_on_batching(tmp_path: Path) -> None:
    """Pages of a column larger than a data page are cut the same however rows were batched."""
    rows = 3 * ROW_GROUP_SIZE + 100
    table = pa.table(
        {
            "n": pa.array(range(rows), pa.int64()),
            # ~300 bytes a row: a row group's column spans several 1 MiB data pages
            "text": pa.array([f"{i:08d}" * 37 for i in range(rows)], pa.string()),
        }
    )
    written = []
    for size in (1000, 4096, 7777):
        path = tmp_path / f"{size}.parquet"
        writer = RowGroupWriter(path, table.schema, "zstd")
        for batch in table.to_batches(max_chunksize=size):
            writer.write(batch)
        assert writer.close() == rows
        written.append(path.read_bytes())
    assert written[0] == written[1] == written[2]
    assert pq.ParquetFile(tmp_path / "1000.parquet").metadata.num_row_groups == 4


def _vectors(rows: range) -> pa.Table:
    frame = pl.DataFrame(
        {"id": [f"r{i}" for i in rows], "vec": [[float(i), 1.0] for i in rows]},
        schema={"id": pl.String, "vec": pl.Array(pl.Float32, 2)},
    )
    return frame.to_arrow().replace_schema_metadata({b"distill.k": b"v"})


def test_parquet_writer_atomic_in_one_piece_writes_the_bytes_of_write_parquet_atomic(
    tmp_path: Path,
) -> None:
    table = _vectors(range(10))
    whole, pieces = UPath(tmp_path / "whole.parquet"), UPath(tmp_path / "pieces.parquet")
    write_parquet_atomic(table, whole, plain=("vec",))
    with parquet_writer_atomic(pieces, table.schema, plain=("vec",)) as writer:
        writer.write_table(table, row_group_size=ROW_GROUP_SIZE)
    assert pieces.read_bytes() == whole.read_bytes()
    assert parquet_key_values(pieces)[b"distill.k"] == b"v"


def test_parquet_writer_atomic_shows_the_file_only_when_complete(tmp_path: Path) -> None:
    path = UPath(tmp_path / "t.parquet")
    table = _vectors(range(4))
    with (
        pytest.raises(RuntimeError, match="slice failed"),
        parquet_writer_atomic(path, table.schema) as writer,
    ):
        writer.write_table(table.slice(0, 2))
        assert not path.exists()
        raise RuntimeError("slice failed")
    assert list(tmp_path.iterdir()) == []
    with parquet_writer_atomic(path, table.schema) as writer:
        writer.write_table(table.slice(0, 2))
        writer.write_table(table.slice(2))
    assert pl.read_parquet(path.path).equals(pl.from_arrow(table))
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"]


def test_parquet_writer_atomic_writes_to_a_remote_lake() -> None:
    root = f"memory://distill-{uuid.uuid4().hex}"
    path = UPath(f"{root}/curation/t/2026-11-20.parquet")
    table = _vectors(range(3))
    try:
        with parquet_writer_atomic(path, table.schema) as writer:
            writer.write_table(table)
        assert read_parquet_table(path).num_rows == 3
        assert [p.name for p in path.parent.iterdir()] == ["2026-11-20.parquet"]
    finally:
        fsspec.filesystem("memory").rm(root, recursive=True)


@pytest.mark.parametrize("sizes", [[0], [3, 0, 5], [8192, 1], [5000, 5000, 0, 8000], [0, 0, 20000]])
def test_write_frames_as_one_writes_the_bytes_of_their_concatenation(
    tmp_path: Path, sizes: list[int]
) -> None:
    start = [sum(sizes[:i]) for i in range(len(sizes))]
    step = pl.Struct({"x": pl.Float64, "t": pl.String})
    frames = [
        pl.DataFrame(
            {
                "id": [f"row-{i}" for i in range(lo, lo + n)],
                "steps": [
                    [{"x": float(i), "t": "a" * (i % 7)}] * (i % 3) for i in range(lo, lo + n)
                ],
            },
            schema={"id": pl.String, "steps": pl.List(step)},
        )
        for lo, n in zip(start, sizes, strict=True)
    ]
    whole = pl.concat(frames)
    write_parquet_atomic(whole, UPath(tmp_path / "whole.parquet"))
    assert write_frames_as_one(iter(frames), tmp_path / "parts.parquet") == whole.height
    assert (tmp_path / "parts.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()


def test_write_frames_as_one_needs_at_least_one_frame(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="got no frame"):
        write_frames_as_one(iter([]), tmp_path / "none.parquet")
