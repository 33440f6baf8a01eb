"""Find raw files of a partition and stream them as numbered text lines.

Raw files land under `<raw root>/<source>/<YYYY-MM-DD>/` as `.jsonl`, `.jsonl.gz`, `.jsonl.zst`
or `.jsonl.lz4`. `RawLineReader` streams them as Arrow record batches of
`(source_file, line_no, line, utf8_replaced, is_last_line)` with bounded memory: lines are split by
Arrow's CSV tokenizer (no per-row Python), decoded as UTF-8, and only a batch that holds invalid
UTF-8 is decoded row by row with replacement characters (such rows keep their record and carry
`utf8_replaced = true`). A UTF-8 BOM at the start of a file and CRLF line ends are accepted.
Blank lines are not records: they are counted, not emitted.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass, field

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from upath import UPath

RAW_SUFFIXES: dict[str, str | None] = {
    ".jsonl": None,
    ".jsonl.gz": "gzip",
    ".jsonl.zst": "zstd",
    ".jsonl.lz4": "lz4",
}
# A single record may be several MB (tool outputs); a line longer than a block is re-read by the
# slow path below instead of failing the run.
BLOCK_SIZE = 64 << 20
# JSON text never contains a raw U+001F, so a line holding one is invalid JSON anyway; the tokenizer
# reports it as a two-column row and the handler keeps it as a record.
_FIELD_DELIMITER = "\x1f"
_SLOW_PATH_BATCH = 64

LINE_SCHEMA = pa.schema(
    [
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("line_no", pa.int64(), nullable=False),
        pa.field("line", pa.string(), nullable=False),
        pa.field("utf8_replaced", pa.bool_(), nullable=False),
        pa.field("is_last_line", pa.bool_(), nullable=False),
    ]
)


def partition_dir(raw_root: str, source: str, partition: str) -> UPath:
    """Return the landing folder of one source and ingest date."""
    return UPath(raw_root) / source / partition


def list_raw_files(
    raw_root: str, source: str, partition: str, suffixes: tuple[str, ...] = tuple(RAW_SUFFIXES)
) -> list[str]:
    """Return the raw files of a partition with one of `suffixes`, sorted by name (recursive)."""
    folder = partition_dir(raw_root, source, partition)
    if not folder.exists():
        return []
    found = [p for p in folder.rglob("*") if p.is_file() and p.name.endswith(suffixes)]
    return sorted(str(p) for p in found)


def list_partitions(raw_root: str, source: str) -> list[str]:
    """Return the ingest dates (YYYY-MM-DD folder names) that hold raw files for a source."""
    folder = UPath(raw_root) / source
    if not folder.exists():
        return []
    names = [p.name for p in folder.iterdir() if p.is_dir()]
    return sorted(n for n in names if len(n) == 10 and n[4] == "-" and n[7] == "-")


def compression_of(path: str) -> str | None:
    """Return the Arrow codec for a raw file name, or None for plain JSONL."""
    for suffix, codec in sorted(RAW_SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if path.endswith(suffix):
            return codec
    raise ValueError(f"not a raw JSONL file: {path}")


@dataclass
class ReadStats:
    """What a reader saw: files, records (non-blank lines), blank lines and decoded bytes."""

    files: int = 0
    records: int = 0
    blank_lines: int = 0
    utf8_replaced: int = 0
    per_file: dict[str, int] = field(default_factory=dict)


class RawLineReader:
    """Stream the lines of raw JSONL files as Arrow batches of `LINE_SCHEMA`."""

    def __init__(self, paths: list[str], root: str | None = None) -> None:
        """Read `paths` in the given order; `source_file` is given relative to `root` if set."""
        self.paths = paths
        self.root = root.rstrip("/") + "/" if root else None
        self.stats = ReadStats()

    def display_name(self, path: str) -> str:
        """Return `path` as recorded in `source_file` (relative to the raw root when known)."""
        if self.root and path.startswith(self.root):
            return path[len(self.root) :]
        return path

    def reader(self) -> pa.RecordBatchReader:
        """Return a record batch reader (DuckDB and Polars scan it without materializing)."""
        return pa.RecordBatchReader.from_batches(LINE_SCHEMA, self.batches())

    def batches(self) -> Iterator[pa.RecordBatch]:
        """Yield the batches of every file in turn."""
        for path in self.paths:
            self.stats.files += 1
            before = self.stats.records
            yield from self._file_batches(path)
            self.stats.per_file[self.display_name(path)] = self.stats.records - before

    def _file_batches(self, path: str) -> Iterator[pa.RecordBatch]:
        pending: pa.RecordBatch | None = None
        for batch in self._decoded(path):
            if batch.num_rows == 0:
                continue
            if pending is not None:
                yield _with_last_flag(pending, last=False)
            pending = batch
        if pending is not None:
            yield _with_last_flag(pending, last=True)

    def _decoded(self, path: str) -> Iterator[pa.RecordBatch]:
        emitted = 0
        try:
            for line_no, raw in self._tokenized(path):
                emitted = int(line_no[-1].as_py()) if len(line_no) else emitted
                yield self._to_batch(path, line_no, raw)
        except pa.ArrowInvalid as exc:
            if "Empty CSV file" in str(exc):
                return  # an empty file (e.g. just created by a writer) holds no records
            if "straddling" not in str(exc) and "block" not in str(exc):
                raise
            yield from self._slow_path(path, after_line=emitted)

    def _tokenized(self, path: str) -> Iterator[tuple[pa.Array, pa.Array]]:
        """Yield (line numbers, raw bytes) per block, in file order, blank lines included."""
        split_rows: list[tuple[int, str]] = []

        def keep_split_row(row: pacsv.InvalidRow) -> str:
            split_rows.append((row.number, row.text))
            return "skip"

        next_line = 1
        with fsspec.open(path, "rb") as handle:
            csv_reader = pacsv.open_csv(
                pa.input_stream(handle, compression=compression_of(path)),
                read_options=pacsv.ReadOptions(
                    column_names=["line"], block_size=BLOCK_SIZE, use_threads=False
                ),
                parse_options=pacsv.ParseOptions(
                    delimiter=_FIELD_DELIMITER,
                    quote_char=False,
                    escape_char=False,
                    newlines_in_values=False,
                    ignore_empty_lines=False,
                    invalid_row_handler=keep_split_row,
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types={"line": pa.binary()},
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
            for chunk in csv_reader:
                lines = chunk.column(0)
                total = len(lines) + len(split_rows)
                numbers = np.arange(next_line, next_line + total, dtype=np.int64)
                if split_rows:
                    # the handler took these rows out of the block; put them back in place
                    taken = np.array([n for n, _ in split_rows], dtype=np.int64)
                    numbers = np.concatenate([numbers[~np.isin(numbers, taken)], taken])
                    texts = pa.array([t.encode("utf-8") for _, t in split_rows], pa.binary())
                    lines = pa.concat_arrays([lines, texts])
                    order = np.argsort(numbers, kind="stable")
                    numbers, lines = numbers[order], lines.take(pa.array(order))
                    split_rows.clear()
                next_line += total
                yield pa.array(numbers, pa.int64()), lines

    def _to_batch(self, path: str, line_no: pa.Array, raw: pa.Array) -> pa.RecordBatch:
        try:
            text = raw.cast(pa.string())
            replaced = pa.array([False] * len(text), pa.bool_())
        except pa.ArrowInvalid:
            # rare: only batches holding invalid UTF-8 pay for per-row decoding
            values = raw.to_pylist()
            decoded = [v.decode("utf-8", "replace") for v in values]
            flags = [d.encode("utf-8") != v for d, v in zip(decoded, values, strict=True)]
            text, replaced = pa.array(decoded, pa.string()), pa.array(flags, pa.bool_())
        keep = pc.invert(pc.equal(pc.utf8_trim_whitespace(text), ""))
        kept = int(pc.sum(keep).as_py() or 0)
        self.stats.blank_lines += len(text) - kept
        self.stats.records += kept
        self.stats.utf8_replaced += int(pc.sum(pc.and_(keep, replaced)).as_py() or 0)
        return pa.RecordBatch.from_arrays(
            [
                pa.array([self.display_name(path)] * kept, pa.string()),
                pc.filter(line_no, keep),
                pc.filter(text, keep),
                pc.filter(replaced, keep),
                pa.array([False] * kept, pa.bool_()),
            ],
            schema=LINE_SCHEMA,
        )

    def _slow_path(self, path: str, after_line: int) -> Iterator[pa.RecordBatch]:
        """Read a file whose single line outgrew a block, line by line, after `after_line`."""
        numbers: list[int] = []
        raws: list[bytes] = []
        with fsspec.open(path, "rb") as handle:
            stream = io.BufferedReader(pa.input_stream(handle, compression=compression_of(path)))
            for line_no, raw in enumerate(stream, start=1):
                if line_no <= after_line:
                    continue
                body = raw.rstrip(b"\r\n")
                if line_no == 1 and body.startswith(b"\xef\xbb\xbf"):
                    body = body[3:]
                numbers.append(line_no)
                raws.append(body)
                if len(raws) >= _SLOW_PATH_BATCH:
                    yield self._to_batch(path, pa.array(numbers, pa.int64()), pa.array(raws))
                    numbers, raws = [], []
        if raws:
            yield self._to_batch(path, pa.array(numbers, pa.int64()), pa.array(raws, pa.binary()))


def _with_last_flag(batch: pa.RecordBatch, *, last: bool) -> pa.RecordBatch:
    if not last:
        return batch
    flags = [False] * (batch.num_rows - 1) + [True]
    return batch.set_column(4, LINE_SCHEMA.field("is_last_line"), pa.array(flags, pa.bool_()))
