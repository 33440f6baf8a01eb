"""The Parquet lake: where tables live and how they are written (atomically) and scanned.

Layout: `<lake root>/<source>/<table>/<YYYY-MM-DD>.parquet` for partitioned tables and
`<lake root>/<source>/<table>.parquet` for global ones. Every write goes to a temporary name in
the same folder and is renamed into place, so readers never see a half-written file and re-running
a partition replaces it whole.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
import uuid
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from distill_assets.lib.threads import Drain

PARQUET_COMPRESSION = "zstd"
ROW_GROUP_SIZE = 8192
# the same layout as the options of a DuckDB `COPY … TO` (for tables DuckDB writes itself)
DUCKDB_COPY_PARQUET = (
    f"(FORMAT parquet, COMPRESSION {PARQUET_COMPRESSION}, ROW_GROUP_SIZE {ROW_GROUP_SIZE})"
)


def table_dir(lake_root: str, source: str, table: str) -> UPath:
    """Return the folder of a partitioned table."""
    return UPath(lake_root) / source / table


def partition_path(lake_root: str, source: str, table: str, partition: str) -> UPath:
    """Return the file of one partition of a table."""
    return table_dir(lake_root, source, table) / f"{partition}.parquet"


def global_path(lake_root: str, source: str, table: str) -> UPath:
    """Return the file of an unpartitioned table."""
    return UPath(lake_root) / source / f"{table}.parquet"


def partition_files(lake_root: str, source: str, table: str) -> list[str]:
    """Return every partition file of a table, sorted by partition key."""
    folder = table_dir(lake_root, source, table)
    if not folder.exists():
        return []
    return sorted(str(p) for p in folder.iterdir() if p.name.endswith(".parquet"))


def scan_partitions(
    lake_root: str, source: str, table: str, schema: pl.Schema | None = None
) -> pl.LazyFrame:
    """Lazily scan all partitions of a table, adding a `partition` column (YYYY-MM-DD).

    With no partition written yet, return an empty frame of `schema` (if given).
    """
    frames = partition_scans(lake_root, source, table)
    if not frames:
        return pl.LazyFrame(schema=schema or {}).with_columns(
            pl.lit(None, dtype=pl.String).alias("partition")
        )
    return pl.concat(frames, how="diagonal_relaxed")


def partition_scans(lake_root: str, source: str, table: str) -> list[pl.LazyFrame]:
    """Lazily scan each partition of a table, oldest first, adding its `partition` (YYYY-MM-DD)."""
    return [
        pl.scan_parquet(f).with_columns(pl.lit(Path(f).stem).alias("partition"))
        for f in partition_files(lake_root, source, table)
    ]


def scan_partition(lake_root: str, source: str, table: str, partition: str) -> pl.LazyFrame:
    """Lazily scan one partition of a table."""
    return pl.scan_parquet(str(partition_path(lake_root, source, table, partition)))


# the protocols of the local filesystem (any other is object storage)
LOCAL_PROTOCOLS = ("", "file", "local")


def is_remote(path: UPath) -> bool:
    """Return whether `path` is on object storage (not the local filesystem)."""
    return path.protocol not in LOCAL_PROTOCOLS


@contextmanager
def local_file(path: UPath) -> Iterator[Path]:
    """Yield a local path holding the file `path`: itself if local, else a temporary download.

    For readers that only see local files (DuckDB without its `httpfs` extension, which cannot be
    installed offline): a remote lake file is fetched through fsspec and removed afterwards.
    """
    if not is_remote(path):
        yield Path(path.path)
        return
    with tempfile.TemporaryDirectory(prefix="distill-lake-") as scratch:
        local = Path(scratch) / path.name
        path.fs.get_file(path.path, str(local))
        yield local


def _temporary_sibling(path: UPath) -> UPath:
    return path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"


def _publish(tmp: UPath, path: UPath) -> None:
    if not is_remote(tmp):
        os.replace(tmp.path, path.path)
    else:
        tmp.fs.mv(tmp.path, path.path)


def write_parquet_atomic(
    obj: pl.DataFrame | pl.LazyFrame | pa.Table, path: UPath, plain: Collection[str] = ()
) -> None:
    """Write a frame (a LazyFrame is streamed) to `path` atomically: temporary name, then rename.

    `plain` columns (of a DataFrame or Table) are stored PLAIN and uncompressed: dense numeric
    vectors (hash signatures, embeddings) neither repeat nor compress, so a dictionary or a codec
    only makes every later read decode them (four times slower for embeddings).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary_sibling(path)
    try:
        if isinstance(obj, pl.LazyFrame):
            obj.sink_parquet(
                str(tmp), compression=PARQUET_COMPRESSION, row_group_size=ROW_GROUP_SIZE
            )
        else:
            table = obj.to_arrow() if isinstance(obj, pl.DataFrame) else obj
            encoding = _encoding(table.column_names, plain)
            with tmp.open("wb") as handle:
                pq.write_table(table, handle, row_group_size=ROW_GROUP_SIZE, **encoding)
        _publish(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _encoding(names: list[str], plain: Collection[str]) -> dict[str, object]:
    """Return the Parquet writer options of `write_parquet_atomic` for columns `names`."""
    if not plain:
        return {"compression": PARQUET_COMPRESSION}
    return {
        "compression": {n: "none" if n in plain else PARQUET_COMPRESSION for n in names},
        "use_dictionary": [n for n in names if n not in plain],
    }


@contextmanager
def parquet_writer_atomic(
    path: UPath, schema: pa.Schema, plain: Collection[str] = ()
) -> Iterator[pq.ParquetWriter]:
    """Yield a Parquet writer of `schema` whose file appears at `path` whole, when the block ends.

    For a table written piece by piece (`writer.write_table(piece, row_group_size=ROW_GROUP_SIZE)`)
    so that it is never in memory at once: the pieces go to a temporary name in the same folder,
    renamed into place only if the block raised nothing (else removed). The encoding is
    `write_parquet_atomic`'s (`plain` columns PLAIN and uncompressed); `schema`'s metadata is
    the file's key-value metadata. One piece writes the bytes `write_parquet_atomic` would.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary_sibling(path)
    try:
        with tmp.open("wb") as handle:
            writer = pq.ParquetWriter(handle, schema, **_encoding(schema.names, plain))
            try:
                yield writer
            finally:
                writer.close()
        _publish(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def move_into_place(staged: Path, path: UPath) -> None:
    """Move a Parquet file an asset wrote locally (e.g. by DuckDB COPY) atomically to `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not is_remote(path):
        tmp = _temporary_sibling(path)
        os.replace(staged, tmp.path) if _same_device(staged, Path(tmp.path)) else _copy(staged, tmp)
        os.replace(tmp.path, path.path)
    else:
        tmp = _temporary_sibling(path)
        tmp.fs.put_file(str(staged), tmp.path)
        _publish(tmp, path)
        staged.unlink(missing_ok=True)


def _same_device(a: Path, b: Path) -> bool:
    return a.stat().st_dev == b.parent.stat().st_dev


def _copy(staged: Path, tmp: UPath) -> None:
    with staged.open("rb") as src, tmp.open("wb") as dst:
        while chunk := src.read(8 << 20):
            dst.write(chunk)
    staged.unlink()


class RowGroupWriter:
    """Write record batches to a local Parquet file in row groups of exactly `ROW_GROUP_SIZE` rows.

    Batches of any size are buffered until a row group is full; the last row group may be short.
    A row group is written from one contiguous piece per column, so the file's bytes (its pages
    too) depend on the rows alone, never on how they were batched (a day merged from shards is
    the day ingested whole, `defs.shards`).
    Columns named in `dictionary` are dictionary-encoded (few distinct values per row group), the
    others are not. No Arrow schema is stored: every reader sees the Parquet types.
    """

    def __init__(
        self,
        path: Path,
        schema: pa.Schema,
        compression: str,
        compression_level: int | None = None,
        dictionary: list[str] | None = None,
    ) -> None:
        """Open `path` for writing `schema` with `compression` (and its level, if given)."""
        self.schema = schema
        self.writer = pq.ParquetWriter(
            path,
            schema,
            compression=compression,
            compression_level=compression_level,
            use_dictionary=[c for c in dictionary or [] if c in schema.names],
            store_schema=False,
        )
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Buffer `batch`; write every full row group."""
        if batch.num_rows == 0:
            return
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        if self.pending_rows >= ROW_GROUP_SIZE:
            table = pa.Table.from_batches(self.pending, schema=self.schema)
            full = self.pending_rows - self.pending_rows % ROW_GROUP_SIZE
            self.writer.write_table(
                table.slice(0, full).combine_chunks(), row_group_size=ROW_GROUP_SIZE
            )
            self.rows += full
            rest = table.slice(full)
            self.pending = rest.to_batches()
            self.pending_rows = rest.num_rows

    def close(self) -> int:
        """Write the last row group, close the file and return the rows written."""
        if self.pending_rows:
            table = pa.Table.from_batches(self.pending, schema=self.schema)
            self.writer.write_table(table.combine_chunks(), row_group_size=ROW_GROUP_SIZE)
            self.rows += self.pending_rows
        self.writer.close()
        return self.rows


def frame_batches(frame: pl.LazyFrame, rows: int) -> Iterator[pl.DataFrame]:
    """Yield `frame` in order, `rows` rows at a time (one empty frame when it has no row).

    Runs on Polars' streaming engine, so only a few batches are in memory at once.
    """
    empty = True
    for batch in frame.collect_batches(chunk_size=rows):
        if batch.height:
            empty = False
            yield batch
    if empty:
        yield frame.head(0).collect()


def write_frames(frames: Iterable[pl.DataFrame], path: Path) -> int:
    """Write `frames` to a local Parquet file as they come and return the rows written.

    A background thread encodes and writes each frame while the next one is produced (Arrow's
    Parquet writer uses one core, and releases the GIL), so memory holds at most three frames and
    one row group, whatever the total. The first frame (it may be empty, and there must be one)
    sets the file's schema; every later frame is cast to it. Row groups of `ROW_GROUP_SIZE` rows,
    `PARQUET_COMPRESSION`, dictionary encoding where it pays: the layout `write_parquet_atomic`
    gives a whole frame.
    """
    iterator = iter(frames)
    first = next(iterator, None)
    if first is None:
        raise ValueError(f"write_frames({path}) got no frame: pass at least an empty one")
    schema = first.to_arrow().schema
    writer = RowGroupWriter(path, schema, PARQUET_COMPRESSION, dictionary=schema.names)

    def write(frame: pl.DataFrame) -> None:
        for batch in frame.to_arrow().cast(schema).to_batches():
            writer.write(batch)

    drain: Drain[pl.DataFrame] = Drain(write, pending=1)
    try:
        for frame in itertools.chain([first], iterator):
            drain.put(frame)
    finally:
        try:
            drain.close()
        finally:
            rows = writer.close()
    return rows


def write_frames_as_one(frames: Iterable[pl.DataFrame], path: Path) -> int:
    """Write `frames` to a local Parquet file as `write_parquet_atomic` writes their concatenation.

    Row groups of `ROW_GROUP_SIZE` rows across frame boundaries, `PARQUET_COMPRESSION`, the Arrow
    schema stored (the first frame's; later frames are cast to it): a table built a part at a time
    reads back as the whole one, and memory holds one frame and one row group. Returns the rows.
    """
    writer: pq.ParquetWriter | None = None
    pending: pa.Table | None = None
    rows = 0
    try:
        for frame in frames:
            table = frame.to_arrow()
            if writer is None or pending is None:
                writer = pq.ParquetWriter(path, table.schema, compression=PARQUET_COMPRESSION)
                pending = table.slice(0, 0)
            pending = pa.concat_tables([pending, table.cast(pending.schema)])
            full = pending.num_rows - pending.num_rows % ROW_GROUP_SIZE
            if full:
                piece = pending.slice(0, full).combine_chunks()
                writer.write_table(piece, row_group_size=ROW_GROUP_SIZE)
                rows += full
                pending = pending.slice(full)
        if writer is None or pending is None:
            raise ValueError(
                f"write_frames_as_one({path}) got no frame: pass at least an empty one"
            )
        if pending.num_rows or not rows:
            writer.write_table(pending.combine_chunks(), row_group_size=ROW_GROUP_SIZE)
            rows += pending.num_rows
    finally:
        if writer is not None:
            writer.close()
    return rows


@contextmanager
def parquet_file(path: UPath) -> Iterator[pq.ParquetFile]:
    """Open a Parquet file of any filesystem the lake may be on, for reading its data.

    A local file is opened by name, so Arrow reads it with its own file and threads. Arrow
    reading through a Python file object keeps work on its thread pool past the read, which
    intermittently aborts the interpreter at exit ("terminate called without an active
    exception", apache/arrow#34314, #50482); a remote file, which only a file object can reach,
    is therefore read without Arrow's threads (`use_threads=not is_remote(path)`).
    """
    if not is_remote(path):
        yield pq.ParquetFile(path.path)
        return
    with path.open("rb") as handle:
        yield pq.ParquetFile(handle)


def read_parquet_table(path: UPath, columns: list[str] | None = None) -> pa.Table:
    """Read a Parquet file (only `columns` when given) of any filesystem (see `parquet_file`)."""
    with parquet_file(path) as parquet:
        return parquet.read(columns=columns, use_threads=not is_remote(path))


def parquet_row_count(path: UPath) -> int:
    """Return the number of rows recorded in a Parquet file's footer."""
    with parquet_file(path) as footer:
        return footer.metadata.num_rows


def parquet_columns(path: UPath) -> list[tuple[str, str]]:
    """Return (name, Arrow type) of every top-level column of a Parquet file, from its footer."""
    with parquet_file(path) as footer:
        schema = footer.schema_arrow
    return [(field.name, str(field.type)) for field in schema]


def parquet_key_values(path: UPath) -> dict[bytes, bytes]:
    """Return the key-value metadata of a Parquet file's footer (empty when there is no file)."""
    if not path.exists():
        return {}
    with parquet_file(path) as footer:
        return dict(footer.schema_arrow.metadata or {})


def feed_fingerprint(paths: list[UPath]) -> str:
    """Return a fingerprint of feed partition files: their names, sizes and Parquet footers.

    The footer holds every column chunk's offset, size and statistics, so a rewritten partition
    with other content gets another fingerprint without the data being read.
    """
    prefixes = feed_fingerprints(paths)
    return prefixes[-1] if prefixes else hashlib.sha256().hexdigest()


def feed_fingerprints(paths: list[UPath]) -> list[str]:
    """Return `feed_fingerprint(paths[: i + 1])` for every i, each footer read once."""
    digest = hashlib.sha256()
    prefixes = []
    for path in paths:
        with path.open("rb") as handle:
            size = handle.seek(0, 2)
            handle.seek(size - 8)
            footer_length = int.from_bytes(handle.read(4), "little")
            handle.seek(size - 8 - footer_length)
            footer = handle.read(footer_length)
        digest.update(f"{path.parent.name}/{path.name} {size}\n".encode())
        digest.update(hashlib.sha256(footer).digest())
        prefixes.append(digest.hexdigest())
    return prefixes
