r"""Find raw files of a partition and stream them as numbered text lines.

Raw files land under `<raw root>/<source>/<YYYY-MM-DD>/` as `.jsonl`, `.jsonl.gz`, `.jsonl.zst`
or `.jsonl.lz4`. `RawLineReader` streams them as Arrow record batches of
`(source_file, line_no, line, utf8_replaced, is_last_line)` with bounded memory and no per-row
Python: a file is read in blocks, the `\n` line ends are found with NumPy, a block is validated
as UTF-8 in one call, and its lines become one zero-copy Arrow `string_view` array (views into
the block, without their `\n` or `\r\n`; DuckDB scans it as VARCHAR). Line numbers are 1-based
and count every line; a UTF-8 BOM at the start of a file and `\r\n` line ends are accepted;
lines have no length limit (a line longer than a block is carried into the next read); a block
holding invalid UTF-8 is decoded once with U+FFFD replacements (its rows keep their record;
those that held invalid bytes carry `utf8_replaced = true`). Lines end at `\n` only (the JSON
Lines rule), so a stray `\r` inside a line stays part of it. Blank lines are not records: they
are counted, not emitted.

Compressed files are decoded frame by frame by `lib/recover.py`; what each file's compression
showed (codec, frames, checksums present and verified, bytes lost, status) is in
`stats.integrity` (`integrity_table`: the `raw_files` rows).

No file stops a partition. What cannot be read becomes a `RawProblem` (in `stats.problems`, one
record each, to be written to quarantine with `problem_table`) and the other files are read
normally:
- `unsupported_file`: a file whose name has none of `RAW_SUFFIXES` (`.json`, `.bz2`, notes…);
- `undecodable_file`: a file that cannot be opened or decompressed (plain text named `.gz`,
  compressed bytes in a plain `.jsonl`, unreadable) or that ends inside a compressed frame
  (truncated); lines read before the error stay records, the problem is numbered after them. A
  truncated archive keeps every complete line decompressed before its end, exactly as if the
  file had ended there cleanly, and its problem holds the first `QUARANTINED_PREFIX_BYTES` of the
  line the end cut (if any) as its raw line;
- `damaged_frame`: a gzip member or zstd/lz4 frame that fails to decode or to verify its
  checksum inside an archive (`lib/recover.py`): the frame's output is dropped (a decoder can
  emit garbage before it detects damage), one problem row stands for it (its detail: offset,
  compressed bytes skipped, bytes lost) with the first bytes of the line it cut, and reading
  resumes at the next intact frame, so every intact member or frame and every line before the
  damaged frame stay records;
- `suspect_frame`: a zstd/lz4 frame without a checksum that decoded invalid JSON lines: the
  whole frame is dropped the same way (its other lines may be altered too);
- `symlink_loop`: a symbolic link that never resolves to a file (`a -> b -> a`) or points at a
  folder holding it (line 0); a dangling link or a link to another folder is an
  `unsupported_file`;
- `too_large`: a line over `rules.raw.MAX_RECORD_BYTES`, skipped without holding it in memory
  (its first bytes are kept as the quarantined raw line).
"""

from __future__ import annotations

import errno
import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import date
from typing import BinaryIO

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from upath import UPath

from distill_assets.lib.lake import is_remote
from distill_assets.lib.recover import Damage, FileIntegrity, FrameReader
from distill_assets.rules.raw import MAX_RECORD_BYTES, QUARANTINED_PREFIX_BYTES

RAW_SUFFIXES: dict[str, str | None] = {
    ".jsonl": None,
    ".jsonl.gz": "gzip",
    ".jsonl.zst": "zstd",
    ".jsonl.lz4": "lz4",
}
BLOCK_BYTES = 32 << 20
# a block holding invalid UTF-8 is validated again in pieces of about this size (whole lines),
# and only the invalid pieces are decoded with replacements
_REPAIR_PIECE_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"
_NEWLINE = 10
_CARRIAGE_RETURN = 13
# Arrow string views hold up to 12 bytes inline, else a 4-byte prefix of the string
_INLINE_BYTES = 12
_PREFIX_BYTES = 4
# bytes that can start a whitespace-only line (a blank line is only possible if its first byte is
# one of these; such rare lines are checked exactly)
_SPACE_STARTS = np.array([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xC2, 0xE1, 0xE2, 0xE3], np.uint8)

UNSUPPORTED_FILE = "unsupported_file"
UNDECODABLE_FILE = "undecodable_file"
TOO_LARGE = "too_large"
SYMLINK_LOOP = "symlink_loop"
# leading bytes of compressed or archive formats: such a file named plain `.jsonl` is undecodable
_MAGIC = {
    b"\x1f\x8b": "gzip",
    b"\x28\xb5\x2f\xfd": "zstd",
    b"\x04\x22\x4d\x18": "lz4",
    b"BZh": "bzip2",
    b"\xfd7zXZ\x00": "xz",
    b"PK\x03\x04": "zip",
}
# what opening or decompressing a raw file can raise
_READ_ERRORS = (OSError, pa.ArrowException, ValueError, EOFError)
PROBLEM_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("source_file", pa.string()),
        ("line_no", pa.int64()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("raw_line", pa.string()),
    ]
)

LINE_SCHEMA = pa.schema(
    [
        pa.field("source_file", pa.string(), nullable=False),
        pa.field("line_no", pa.int64(), nullable=False),
        pa.field("line", pa.string_view(), nullable=False),
        pa.field("utf8_replaced", pa.bool_(), nullable=False),
        pa.field("is_last_line", pa.bool_(), nullable=False),
    ]
)


def partition_dir(raw_root: str, source: str, partition: str) -> UPath:
    """Return the landing folder of one source and ingest date."""
    return UPath(raw_root) / source / partition


def list_raw_files(
    raw_root: str,
    source: str,
    partition: str,
    suffixes: tuple[str, ...] | None = None,
    exclude: tuple[str, ...] = (),
) -> list[str]:
    """Return the files of a partition, sorted by name (recursive).

    Every file by default (the reader turns unsupported ones into quarantine rows, so none is
    skipped silently); only those with one of `suffixes` if given; never those ending in one of
    `exclude` (files another reader of the source owns, e.g. escalations' legacy `.db`).
    """
    files = raw_files_in(partition_dir(raw_root, source, partition), suffixes)
    return [path for path in files if not path.endswith(exclude)] if exclude else files


def raw_files_in(
    folder: str | UPath, suffixes: tuple[str, ...] | None = tuple(RAW_SUFFIXES)
) -> list[str]:
    """Return the files under `folder` with one of `suffixes` (None: all), sorted by path text.

    Path-text order is the order readers take files in, so rows read from them are in
    (`source_file`, `line_no`) order.
    """
    folder = UPath(folder)
    if not folder.exists():
        return []
    # symlinks that are not files (loops, dangling, to folders) are listed too: the reader
    # reports them (`symlink_loop`, `unsupported_file`) instead of skipping them silently
    found = [
        p
        for p in folder.rglob("*")
        if (p.is_file() and (not suffixes or p.name.endswith(suffixes)))
        or (not p.is_file() and p.is_symlink())
    ]
    return sorted(str(p) for p in found)


def partition_date_problem(name: str, last: date | None = None) -> str | None:
    """Why a raw folder name is not an ingestible date: `not_a_date`, `future_date` or None.

    A valid name is an ISO date `YYYY-MM-DD`; with `last` given, a date after it is in the future.
    """
    try:
        day = date.fromisoformat(name)
    except ValueError:
        return "not_a_date"
    if len(name) != 10 or name != day.isoformat():
        return "not_a_date"
    if last is not None and day > last:
        return "future_date"
    return None


def list_partitions(raw_root: str, source: str, last: date | None = None) -> list[str]:
    """Return the ingest dates (valid `YYYY-MM-DD` folder names, up to `last`) of a source."""
    return sorted(
        name for name in _folder_names(raw_root, source) if not partition_date_problem(name, last)
    )


def skipped_folders(raw_root: str, source: str, last: date | None = None) -> dict[str, str]:
    """Return the raw folders of a source that are not ingested, with why (see above)."""
    return {
        name: problem
        for name in sorted(_folder_names(raw_root, source))
        if (problem := partition_date_problem(name, last))
    }


def _folder_names(raw_root: str, source: str) -> list[str]:
    folder = UPath(raw_root) / source
    if not folder.exists():
        return []
    return [p.name for p in folder.iterdir() if p.is_dir()]


def is_supported(path: str) -> bool:
    """Whether a file name has one of `RAW_SUFFIXES`."""
    return path.endswith(tuple(RAW_SUFFIXES))


def compression_of(path: str) -> str | None:
    """Return the Arrow codec for a raw file name, or None for plain JSONL."""
    for suffix, codec in sorted(RAW_SUFFIXES.items(), key=lambda kv: -len(kv[0])):
        if path.endswith(suffix):
            return codec
    raise ValueError(f"not a raw JSONL file: {path}")


@dataclass(frozen=True)
class RawProblem:
    """A raw file or record the reader could not turn into lines (see the module docstring)."""

    source_file: str
    line_no: int
    reason: str
    detail: str
    raw_line: str = ""


@dataclass
class ReadStats:
    """What a reader saw: files, records (non-blank lines and problems), blank lines, problems."""

    files: int = 0
    records: int = 0
    blank_lines: int = 0
    utf8_replaced: int = 0
    per_file: dict[str, int] = field(default_factory=dict)
    problems: list[RawProblem] = field(default_factory=list)
    integrity: dict[str, FileIntegrity] = field(default_factory=dict)


INTEGRITY_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("codec", pa.string()),
        ("bytes", pa.int64()),
        ("frames", pa.int64()),
        ("frames_damaged", pa.int64()),
        ("checksum_present", pa.bool_()),
        ("checksum_verified", pa.bool_()),
        ("lines_recovered", pa.int64()),
        ("bytes_lost", pa.int64()),
        ("lines_lost_estimated", pa.int64()),
        ("status", pa.string()),
    ]
)


def integrity_table(stats: ReadStats) -> pa.Table:
    """Return one `raw_files` row per file read (`INTEGRITY_SCHEMA`).

    `lines_recovered` counts the file's records (lines and problem rows); lines lost are the
    bytes lost at the file's mean bytes per recovered line (else per line of the start of the
    first dropped frame's output).
    """
    rows = []
    for name, found in sorted(stats.integrity.items()):
        lines = stats.per_file.get(name, 0)
        text_lines = lines - sum(p.source_file == name for p in stats.problems)
        # lines per byte: of the lines recovered, else of the first dropped frame's start
        density = (
            text_lines / found.bytes_decoded
            if found.bytes_decoded and text_lines
            else found.sample.count(b"\n") / max(len(found.sample), 1)
        )
        rows.append(
            {
                "source_file": name,
                "codec": found.codec,
                "bytes": found.bytes,
                "frames": found.frames,
                "frames_damaged": found.frames_damaged,
                "checksum_present": found.checksum_present,
                "checksum_verified": found.checksum_verified,
                "lines_recovered": lines,
                "bytes_lost": found.bytes_lost,
                "lines_lost_estimated": round(found.bytes_lost * density),
                "status": found.status,
            }
        )
    return pa.Table.from_pylist(rows, schema=INTEGRITY_SCHEMA)


def problem_table(problems: list[RawProblem], source: str) -> pa.Table:
    """Return reader problems as quarantine rows (`PROBLEM_SCHEMA`)."""
    return pa.Table.from_pylist(
        [
            {
                "source": source,
                "source_file": p.source_file,
                "line_no": p.line_no,
                "reason": p.reason,
                "detail": p.detail,
                "raw_line": p.raw_line,
            }
            for p in problems
        ],
        schema=PROBLEM_SCHEMA,
    )


class RawLineReader:
    """Stream the lines of raw JSONL files as Arrow batches of `LINE_SCHEMA`."""

    def __init__(
        self, paths: list[str], root: str | None = None, max_record_bytes: int = MAX_RECORD_BYTES
    ) -> None:
        """Read `paths` in the given order; `source_file` is given relative to `root` if set."""
        self.paths = paths
        self.root = root.rstrip("/") + "/" if root else None
        self.max_record_bytes = max_record_bytes
        self.stats = ReadStats()
        self._next_line = 1

    def _problem(self, name: str, line_no: int, reason: str, detail: str, raw: bytes = b"") -> None:
        self.stats.problems.append(
            RawProblem(name, line_no, reason, detail, raw.decode("utf-8", "replace"))
        )
        self.stats.records += 1

    def display_name(self, path: str) -> str:
        """Return `path` as recorded in `source_file` (relative to the raw root when known)."""
        if self.root and path.startswith(self.root):
            return path[len(self.root) :]
        return path

    def reader(self) -> pa.RecordBatchReader:
        """Return a record batch reader (DuckDB and Polars scan it without materializing)."""
        return pa.RecordBatchReader.from_batches(LINE_SCHEMA, self.batches())

    def chunks(self, chunk_bytes: int, batch_rows: int) -> Iterator[pa.Table]:
        """Yield the lines as tables of about `chunk_bytes` of text, in batches of `batch_rows`.

        DuckDB scans the record batches of a registered table in parallel, so a chunk of small
        batches is parsed by all its threads. A block read is cut between lines (zero-copy
        slices), so a chunk can be much smaller than a block. At least one (possibly empty)
        table is yielded.
        """
        pending: list[pa.RecordBatch] = []
        size = 0
        empty = True
        for block in self.batches():
            for batch in pa.Table.from_batches([block]).to_batches(max_chunksize=batch_rows):
                pending.append(batch)
                size += _text_bytes(batch.column(2))
                if size >= chunk_bytes:
                    yield pa.Table.from_batches(pending, schema=LINE_SCHEMA)
                    pending, size, empty = [], 0, False
        if pending or empty:
            yield pa.Table.from_batches(pending, schema=LINE_SCHEMA)

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
        self._next_line = 1
        # replaced by the decoder's record once the file is opened
        self.stats.integrity[name] = FileIntegrity("none", unreadable=True)
        link = _symlink_problem(path)
        if link is not None:
            self._problem(name, 0, *link)
            return
        if not is_supported(path):
            suffixes = ", ".join(RAW_SUFFIXES)
            self._problem(name, 0, UNSUPPORTED_FILE, f"not a raw file type ({suffixes})")
            return
        try:
            yield from self._decoded_batches(path, name)
        except _READ_ERRORS as exc:
            self._undecodable(name, exc)

    def _undecodable(self, name: str, exc: Exception, cut_line: bytes = b"") -> None:
        """Record a file that failed to open or decompress after the lines already read."""
        detail = f"{type(exc).__name__}: {exc}".splitlines()[0]
        found = self.stats.integrity[name]
        found.unreadable = not found.truncated
        self._problem(
            name, self._next_line, UNDECODABLE_FILE, detail, cut_line[:QUARANTINED_PREFIX_BYTES]
        )

    def _decoded_batches(self, path: str, name: str) -> Iterator[pa.RecordBatch]:  # noqa: PLR0912
        carry = b""
        first = True
        skipping: _SkippedLine | None = None
        with _open(path) as stream:
            blocks = _Blocks(path, stream)
            self.stats.integrity[name] = blocks.integrity
            while True:
                try:
                    chunk = blocks.read()
                except _FrameDamaged as damaged:
                    cut = skipping.prefix if skipping else carry
                    self._problem(
                        name,
                        self._next_line,
                        damaged.damage.reason,
                        damaged.damage.detail,
                        cut[:QUARANTINED_PREFIX_BYTES],
                    )
                    self._next_line += 1
                    carry, skipping = b"", None
                    continue
                except _READ_ERRORS as exc:
                    self._undecodable(name, exc, skipping.prefix if skipping else carry)
                    return
                if skipping is not None:
                    data, done = skipping.consume(chunk)
                    if not done:
                        continue
                    self._skipped(name, skipping)
                    skipping = None
                    if not len(data):
                        if not len(chunk):
                            return
                        continue
                    chunk = data
                data = carry + chunk.to_pybytes() if carry else chunk
                if first and len(data):
                    data = _strip_bom(data)
                    first = False
                if not len(chunk):
                    if len(data):
                        yield self._to_batch(name, bytes(data) + b"\n", self._next_line)[0]
                    return
                raw = np.frombuffer(data, dtype=np.uint8)
                cut = _last_newline(raw)
                if cut < 0:
                    carry = bytes(data)
                    if len(carry) > self.max_record_bytes:
                        skipping, carry = _SkippedLine(carry), b""
                    continue
                carry = bytes(memoryview(data)[cut + 1 :])
                batch, lines = self._to_batch(name, memoryview(data)[: cut + 1], self._next_line)
                self._next_line += lines
                yield batch
                if len(carry) > self.max_record_bytes:
                    skipping, carry = _SkippedLine(carry), b""

    def _skipped(self, name: str, line: _SkippedLine) -> None:
        self._problem(
            name,
            self._next_line,
            TOO_LARGE,
            f"record of {line.size} bytes over the {self.max_record_bytes}-byte limit",
            line.prefix,
        )
        self._next_line += 1

    def _to_batch(
        self, name: str, block: bytes | memoryview, first_line: int
    ) -> tuple[pa.RecordBatch, int]:
        r"""Turn a block of complete `\n`-terminated lines into a batch of records.

        Returns the batch and the number of lines the block held (blank ones included).
        """
        raw = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero(raw == _NEWLINE)
        replaced = np.zeros(len(ends), dtype=bool)
        if not _valid_utf8(block):
            block, replaced = _repair_utf8(block, raw, ends)
            raw = np.frombuffer(block, dtype=np.uint8)
            ends = np.flatnonzero(raw == _NEWLINE)
        starts = _starts(ends)
        # a line ends before its `\n`, or before `\r\n`
        stops = ends - ((ends > starts) & (raw[ends - 1] == _CARRIAGE_RETURN))
        keep = ~_blank(block, raw, starts, stops)
        for index in np.flatnonzero(stops - starts > self.max_record_bytes):
            keep[index] = False
            line = _SkippedLine(bytes(memoryview(block)[starts[index] : stops[index]]))
            self._problem(
                name,
                first_line + int(index),
                TOO_LARGE,
                f"record of {line.size} bytes over the {self.max_record_bytes}-byte limit",
                line.prefix,
            )
        kept = int(keep.sum())
        self.stats.blank_lines += (
            len(ends) - kept - int((stops - starts > self.max_record_bytes).sum())
        )
        self.stats.records += kept
        numbers = np.arange(first_line, first_line + len(ends), dtype=np.int64)
        if kept < len(ends):
            starts, stops, replaced, numbers = (
                starts[keep],
                stops[keep],
                replaced[keep],
                numbers[keep],
            )
        self.stats.utf8_replaced += int(replaced.sum())
        batch = pa.RecordBatch.from_arrays(
            [
                pa.DictionaryArray.from_arrays(
                    pa.array(np.zeros(kept, dtype=np.int32)), pa.array([name])
                ).dictionary_decode(),
                pa.array(numbers),
                _string_views(block, raw, starts, stops),
                pa.array(replaced),
                pa.array(np.zeros(kept, dtype=bool)),
            ],
            schema=LINE_SCHEMA,
        )
        return batch, len(ends)


class _FrameDamaged(Exception):
    """A damaged frame was dropped between the blocks read before and after it."""

    def __init__(self, damage: Damage) -> None:
        super().__init__(damage.detail)
        self.damage = damage


class _Blocks:
    """Read the (decompressed) bytes of a raw file in blocks.

    A plain file is read in blocks of `BLOCK_BYTES`; one starting like a compressed or archive
    file raises on the first read. A compressed file gives what `FrameReader` releases; a damaged
    frame raises `_FrameDamaged` between the blocks before and after it, a truncated file an
    `OSError` after its last block.
    """

    def __init__(self, path: str, stream: BinaryIO) -> None:
        """Read `stream`, opened from `path`."""
        codec = compression_of(path)
        self.integrity = FileIntegrity(codec or "none")
        self._stream = stream
        self._frames: Iterator[bytes | Damage] | None = None
        if codec is not None:
            reader = FrameReader(stream, codec)
            self.integrity = reader.integrity
            self._frames = reader.frames()
        self._done = 0

    def read(self) -> pa.Buffer:
        """Return the next block (empty at the end of the file)."""
        if self._frames is None:
            block = pa.py_buffer(self._stream.read(BLOCK_BYTES))
            if not self._done:
                _check_magic(block)
            self.integrity.bytes += len(block)
            self._done += 1
            return block
        piece = next(self._frames, b"")
        if isinstance(piece, Damage):
            raise _FrameDamaged(piece)
        return pa.py_buffer(piece)


class _SkippedLine:
    """A line over the record limit: its size and first bytes, the rest dropped as it is read."""

    def __init__(self, start: bytes) -> None:
        self.prefix = start[:QUARANTINED_PREFIX_BYTES]
        self.size = len(start)

    def consume(self, chunk: pa.Buffer) -> tuple[pa.Buffer, bool]:
        """Skip the line's bytes in `chunk`; return what follows its end and whether it ended."""
        raw = np.frombuffer(chunk, dtype=np.uint8)
        ends = np.flatnonzero(raw == _NEWLINE) if len(raw) else np.empty(0, dtype=np.int64)
        end = int(ends[0]) if len(ends) else len(raw)
        missing = QUARANTINED_PREFIX_BYTES - len(self.prefix)
        if missing > 0:
            self.prefix += raw[: min(end, missing)].tobytes()
        self.size += end
        if not len(ends):
            return chunk, not len(raw)
        return chunk.slice(end + 1), True


def take_lines(column: pa.Array, rows: np.ndarray) -> pa.Array:
    """Select `rows` of a string-view array (the reader's `line`) by gathering its 16-byte views.

    Arrow has no take kernel for views; the text buffers are shared, not copied.
    """
    _, views, *texts = column.buffers()
    picked = np.frombuffer(views, dtype=np.uint8).reshape(-1, 16)[column.offset :][rows]
    bitmap = None
    if column.null_count:
        valid = pc.is_valid(column).to_numpy(zero_copy_only=False)[rows]
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.string_view(), len(rows), [bitmap, pa.py_buffer(picked), *texts]
    )


def _symlink_problem(path: str) -> tuple[str, str] | None:
    """Return (reason, detail) for a symlink that is not a readable file, else None.

    A link that never resolves (`a -> b -> a`) or resolves to a folder holding it is a loop; a
    dangling link or one to another folder is unsupported (its files would not be read).
    """
    location = UPath(path)
    if is_remote(location) or not os.path.islink(location.path):
        return None
    try:
        target = os.path.realpath(location.path, strict=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return SYMLINK_LOOP, "symbolic link loop: it never resolves to a file"
        return UNSUPPORTED_FILE, f"dangling symbolic link ({exc.strerror})"
    if os.path.isdir(target):
        holder = os.path.realpath(os.path.dirname(location.path))
        if os.path.commonpath([target, holder]) == target:
            return SYMLINK_LOOP, "symbolic link loop: it points at a folder holding it"
        return UNSUPPORTED_FILE, "symbolic link to a folder: its files are not read"
    return None


def _check_magic(chunk: pa.Buffer) -> None:
    """Raise if the first block of a plain JSONL file starts like a compressed or archive file."""
    head = chunk.slice(0, min(8, len(chunk))).to_pybytes()
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            raise ValueError(f"{kind} data in a file named as plain JSON Lines")


def _open(path: str) -> BinaryIO:
    """Open a raw file's (compressed) bytes (local files directly, fsspec otherwise)."""
    location = UPath(path)
    if not is_remote(location):
        return open(location.path, "rb")
    return fsspec.open(path, "rb").open()


def _strip_bom(data: bytes | pa.Buffer) -> bytes | pa.Buffer:
    if bytes(memoryview(data)[:3]) == _BOM:
        return memoryview(data)[3:].tobytes()
    return data


def _last_newline(raw: np.ndarray) -> int:
    r"""Return the position of the last `\n` in `raw`, or -1."""
    return _search_back(raw, lambda piece: piece == _NEWLINE)


def _search_back(raw: np.ndarray, matches: Callable[[np.ndarray], np.ndarray]) -> int:
    """Return the last position where `matches` holds in `raw`, or -1 (searching in steps)."""
    step = 1 << 16
    for end in range(len(raw), 0, -step):
        hits = np.flatnonzero(matches(raw[max(0, end - step) : end]))
        if len(hits):
            return max(0, end - step) + int(hits[-1])
    return -1


def _starts(ends: np.ndarray) -> np.ndarray:
    r"""Return where each line starts, given the positions of the `\n` that end them."""
    starts = np.empty(len(ends), dtype=np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    return starts


def _valid_utf8(block: bytes | memoryview) -> bool:
    """Whether a block is valid UTF-8 (one vectorized validation of the whole block)."""
    whole = pa.Array.from_buffers(
        pa.large_binary(), 1, [None, pa.py_buffer(np.array([0, len(block)])), pa.py_buffer(block)]
    )
    try:
        whole.cast(pa.large_string())
    except pa.ArrowInvalid:
        return False
    return True


def _string_views(
    block: bytes | memoryview, raw: np.ndarray, starts: np.ndarray, stops: np.ndarray
) -> pa.Array:
    """Return the lines `block[start:stop]` as a zero-copy Arrow `string_view` array.

    Each view is 16 bytes (Arrow columnar format): the length, then for up to 12 bytes the bytes
    themselves, else a 4-byte prefix, buffer 0 and the offset into the block.
    """
    lengths = (stops - starts).astype(np.int32)
    views = np.zeros((len(starts), 4), dtype=np.int32)
    views[:, 0] = lengths
    views[:, 3] = np.where(lengths > _INLINE_BYTES, starts, 0)
    inline = np.where(lengths > _INLINE_BYTES, _PREFIX_BYTES, lengths)
    positions = np.arange(_INLINE_BYTES)
    copied = positions[None, :] < inline[:, None]
    gathered = raw[np.minimum(starts[:, None] + positions[None, :], max(len(raw) - 1, 0))]
    as_bytes = views.view(np.uint8)
    as_bytes[:, 4:] = np.where(copied, gathered, as_bytes[:, 4:])
    return pa.Array.from_buffers(
        pa.string_view(), len(starts), [None, pa.py_buffer(views), pa.py_buffer(block)]
    )


def _text_bytes(lines: pa.Array) -> int:
    """Return the bytes of text a string-view array holds (the length in each 16-byte view)."""
    views = np.frombuffer(lines.buffers()[1], dtype=np.int32).reshape(-1, 4)
    return int(views[lines.offset : lines.offset + len(lines), 0].sum())


def _blank(
    block: bytes | memoryview, raw: np.ndarray, starts: np.ndarray, stops: np.ndarray
) -> np.ndarray:
    """Whitespace-only lines; only lines starting with a (possible) space byte are checked."""
    maybe = (starts == stops) | np.isin(raw[np.minimum(starts, len(raw) - 1)], _SPACE_STARTS)
    blank = np.zeros(len(starts), dtype=bool)
    if maybe.any():
        candidates = np.flatnonzero(maybe)
        text = _string_views(block, raw, starts[candidates], stops[candidates])
        trimmed = pc.utf8_trim_whitespace(text.cast(pa.string()))
        blank[candidates] = pc.equal(trimmed, "").to_numpy(zero_copy_only=False)
    return blank


def _repair_utf8(
    block: bytes | memoryview, raw: np.ndarray, ends: np.ndarray
) -> tuple[bytes, np.ndarray]:
    r"""Decode the invalid UTF-8 of a block once, with U+FFFD for every invalid sequence.

    The block is validated in pieces of about `_REPAIR_PIECE_BYTES` whole lines and only the
    invalid pieces are decoded. Returns the repaired block (the same lines: an invalid sequence
    never swallows a `\n`) and which lines were repaired: those holding more U+FFFD after than
    before (each replacement adds one; a U+FFFD already in the input stays as it was).
    """
    view = memoryview(block)
    cuts = np.unique(ends[np.searchsorted(ends, np.arange(0, len(raw), _REPAIR_PIECE_BYTES)[1:])])
    bounds = [0, *(int(c) + 1 for c in cuts if c + 1 < len(raw)), len(raw)]
    parts: list[bytes | memoryview] = []
    replaced = np.zeros(len(ends), dtype=bool)
    for start, stop in itertools.pairwise(bounds):
        piece = view[start:stop]
        if _valid_utf8(piece):
            parts.append(piece)
            continue
        repaired = bytes(piece).decode("utf-8", "replace").encode("utf-8")
        parts.append(repaired)
        lines = slice(np.searchsorted(ends, start), np.searchsorted(ends, stop))
        before = _replacement_chars_per_line(raw[start:stop], ends[lines] - start)
        fixed = np.frombuffer(repaired, dtype=np.uint8)
        after = _replacement_chars_per_line(fixed, np.flatnonzero(fixed == _NEWLINE))
        replaced[lines] = after > before
    return b"".join(parts), replaced


def _replacement_chars_per_line(raw: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Count the U+FFFD (`EF BF BD`) of each line of a block."""
    hits = np.flatnonzero((raw[:-2] == 0xEF) & (raw[1:-1] == 0xBF) & (raw[2:] == 0xBD))
    return np.bincount(np.searchsorted(ends, hits), minlength=len(ends))[: len(ends)]
