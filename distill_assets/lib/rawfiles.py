r"""Find raw files of a partition and stream them as numbered text lines.

Raw files land under `<raw root>/<source>/<YYYY-MM-DD>/` as `.jsonl`, `.jsonl.gz`, `.jsonl.zst`
or `.jsonl.lz4`. `RawLineReader` streams them as Arrow record batches of
`(source_file, line_no, line, utf8_replaced, is_last_line)` with bounded memory and no per-row
Python: a file is read in blocks, the `\n` line ends are found with NumPy and each block's lines
become one zero-copy Arrow array (offsets into the block). Line numbers are 1-based and count every
line; a UTF-8 BOM at the start of a file and `\r\n` line ends are accepted; lines have no length
limit (a line longer than a block is carried into the next read); only a block holding invalid
UTF-8 is decoded row by row, with U+FFFD (such rows keep their record and carry
`utf8_replaced = true`). Lines end at `\n` only (the JSON Lines rule), so a stray `\r` inside a
line stays part of it. Blank lines are not records: they are counted, not emitted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from upath import UPath

RAW_SUFFIXES: dict[str, str | None] = {
    ".jsonl": None,
    ".jsonl.gz": "gzip",
    ".jsonl.zst": "zstd",
    ".jsonl.lz4": "lz4",
}
BLOCK_BYTES = 32 << 20
_BOM = b"\xef\xbb\xbf"
_NEWLINE = 10
# bytes that can start a whitespace-only line (a blank line is only possible if its first byte is
# one of these; such rare lines are checked exactly)
_SPACE_STARTS = np.array([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xC2, 0xE1, 0xE2, 0xE3], np.uint8)

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
            pending: pa.RecordBatch | None = None
            for batch in self._file_batches(path):
                if batch.num_rows == 0:
                    continue
                if pending is not None:
                    yield pending
                pending = batch
            if pending is not None:
                flags = np.zeros(pending.num_rows, dtype=bool)
                flags[-1] = True
                yield pending.set_column(4, LINE_SCHEMA.field("is_last_line"), pa.array(flags))
            self.stats.per_file[self.display_name(path)] = self.stats.records - before

    def _file_batches(self, path: str) -> Iterator[pa.RecordBatch]:
        name = self.display_name(path)
        next_line = 1
        carry = b""
        first = True
        with _open(path) as stream:
            while True:
                chunk = stream.read_buffer(BLOCK_BYTES)
                data = carry + chunk.to_pybytes() if carry else chunk
                if first and len(data):
                    data = _strip_bom(data)
                    first = False
                if not len(chunk):
                    if len(data):
                        yield self._to_batch(name, bytes(data) + b"\n", next_line)[0]
                    return
                raw = np.frombuffer(data, dtype=np.uint8)
                cut = _last_newline(raw)
                if cut < 0:
                    carry = bytes(data)
                    continue
                carry = bytes(memoryview(data)[cut + 1 :])
                batch, lines = self._to_batch(name, memoryview(data)[: cut + 1], next_line)
                next_line += lines
                yield batch

    def _to_batch(
        self, name: str, block: bytes | memoryview, first_line: int
    ) -> tuple[pa.RecordBatch, int]:
        r"""Turn a block of complete `\n`-terminated lines into a batch of records.

        Returns the batch and the number of lines the block held (blank ones included).
        """
        raw = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero(raw == _NEWLINE)
        starts = np.empty(len(ends), dtype=np.int64)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        offsets = np.append(starts, len(block))
        # each element is a line with its terminator; the terminator is trimmed after decoding
        lines = pa.Array.from_buffers(
            pa.large_binary(), len(ends), [None, pa.py_buffer(offsets), pa.py_buffer(block)]
        )
        text, replaced = _decode(lines)
        text = pc.utf8_rtrim(text, characters="\r\n")
        keep = ~self._blank(raw, starts, ends, text)
        kept = int(keep.sum())
        self.stats.blank_lines += len(ends) - kept
        self.stats.records += kept
        numbers = np.arange(first_line, first_line + len(ends), dtype=np.int64)
        if kept < len(ends):
            mask = pa.array(keep)
            text, replaced, numbers = text.filter(mask), replaced.filter(mask), numbers[keep]
        self.stats.utf8_replaced += int(pc.sum(replaced).as_py() or 0)
        batch = pa.RecordBatch.from_arrays(
            [
                pa.DictionaryArray.from_arrays(
                    pa.array(np.zeros(kept, dtype=np.int32)), pa.array([name])
                ).dictionary_decode(),
                pa.array(numbers),
                text.cast(pa.string()),
                replaced,
                pa.array(np.zeros(kept, dtype=bool)),
            ],
            schema=LINE_SCHEMA,
        )
        return batch, len(ends)

    @staticmethod
    def _blank(raw: np.ndarray, starts: np.ndarray, ends: np.ndarray, text: pa.Array) -> np.ndarray:
        """Whitespace-only lines; only lines starting with a (possible) space byte are checked."""
        maybe = (starts == ends) | np.isin(raw[np.minimum(starts, len(raw) - 1)], _SPACE_STARTS)
        blank = np.zeros(len(ends), dtype=bool)
        if maybe.any():
            candidates = np.flatnonzero(maybe)
            trimmed = pc.utf8_trim_whitespace(text.take(pa.array(candidates)))
            blank[candidates] = pc.equal(trimmed, "").to_numpy(zero_copy_only=False)
        return blank


def _open(path: str) -> pa.NativeFile:
    """Open a raw file as an Arrow stream (native I/O for local files, fsspec otherwise)."""
    codec = compression_of(path)
    location = UPath(path)
    if location.protocol in ("", "file", "local"):
        return pa.input_stream(location.path, compression=codec)
    return pa.input_stream(fsspec.open(path, "rb").open(), compression=codec)


def _strip_bom(data: bytes | pa.Buffer) -> bytes | pa.Buffer:
    if bytes(memoryview(data)[:3]) == _BOM:
        return memoryview(data)[3:].tobytes()
    return data


def _last_newline(raw: np.ndarray) -> int:
    r"""Return the position of the last `\n` in `raw`, or -1 (searching backwards in steps)."""
    step = 1 << 16
    for end in range(len(raw), 0, -step):
        hits = np.flatnonzero(raw[max(0, end - step) : end] == _NEWLINE)
        if len(hits):
            return max(0, end - step) + int(hits[-1])
    return -1


def _decode(lines: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Decode UTF-8 vectorized; only lines that hold invalid UTF-8 are decoded one by one.

    A slice that fails validation is halved until the failing lines are isolated, so a block
    with k bad lines costs about 2·log2(n)·k vectorized validations plus k Python decodes.
    """
    try:
        return lines.cast(pa.large_string()), pa.array(np.zeros(len(lines), dtype=bool))
    except pa.ArrowInvalid:
        if len(lines) == 1:
            value = lines[0].as_py()
            decoded = value.decode("utf-8", "replace")
            return pa.array([decoded], pa.large_string()), pa.array([True])
    half = len(lines) // 2
    head, head_flags = _decode(lines.slice(0, half))
    tail, tail_flags = _decode(lines.slice(half))
    return pa.concat_arrays([head, tail]), pa.concat_arrays([head_flags, tail_flags])
