"""Decompress raw archives frame by frame, recovering every intact frame around damage.

A `.jsonl.gz` is a series of gzip members, a `.jsonl.zst` of zstd frames, a `.jsonl.lz4` of lz4
frames; each is decoded on its own (`zlib`, `zstandard`, `lz4.frame`, all C decoders fed in
pieces of `FEED_BYTES`). What a frame decodes is held until the frame ends and its checksum
verifies (gzip: always CRC-32; zstd and lz4: when the frame header says it carries a content
checksum), then released; a frame larger than `HOLD_BYTES` releases its output in pieces of that
size before it is verified (memory stays bounded).

When a frame fails, what it held after the damage is dropped — a decoder can emit garbage
between the damage and the point it detects it: after a decoder error, the lines decoded before
the last `AT_RISK_BYTES` are kept; after a checksum mismatch (the damage may be anywhere) the
whole frame's held output goes. `frames` yields one `Damage` (its detail names the codec, the
compressed offset and the bytes lost); the decoder then
resynchronizes at the next frame magic after the failed frame's start and carries on, so every
intact member, frame and the lines before the damaged one are kept. The bytes a damaged frame
would have given are its declared size (gzip's ISIZE trailer before the next member, a zstd or
lz4 header's content size) minus what it released, else estimated from the compressed bytes
skipped at the file's ratio so far. A file that ends inside a frame keeps what that frame decoded
(truncation garbles nothing) and then raises `OSError(TRUNCATED)`.

A frame without a checksum cannot be verified (`checksum_verified` is false for its file): its
complete lines are validated as JSON (DuckDB `json_valid`, vectorized) and, if any is invalid,
the whole frame is suspect — one flipped bit can alter other lines without breaking them — and is
dropped like a damaged one (`frames_suspect`).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import pyarrow as pa

FEED_BYTES = 64 << 10
HOLD_BYTES = 32 << 20
# what a decoder may have emitted between damage and its error (a deflate block or two, a zstd
# block is at most 128 KiB): dropped with the damaged frame
AT_RISK_BYTES = 256 << 10
SAMPLE_BYTES = 64 << 10
GZIP_MAGIC = b"\x1f\x8b\x08"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LZ4_MAGIC = b"\x04\x22\x4d\x18"
# frame header descriptor bit of zstd (Content_Checksum_flag) and lz4 (C.Checksum)
_CHECKSUM_BIT = 0x04
_LZ4_CONTENT_SIZE_BIT = 0x08


# how a file that ends inside a frame is reported (as Arrow's decoders did)
TRUNCATED = "Truncated compressed stream"


@dataclass(frozen=True)
class Damage:
    """A frame that failed to decode or verify: dropped, the decoder resynchronized after it."""

    detail: str
    bytes_lost: int
    reason: str = "damaged_frame"


@dataclass
class FileIntegrity:
    """What reading one raw file found about its compression (one `raw_files` row)."""

    codec: str
    bytes: int = 0
    frames: int = 0
    frames_damaged: int = 0
    checksum_present: bool = False
    checksum_verified: bool = False
    bytes_decoded: int = 0
    bytes_lost: int = 0
    # the start of the first dropped frame's output: its line length estimates lost lines when no
    # line of the file was recovered
    sample: bytes = b""
    frames_suspect: int = 0
    truncated: bool = False
    # not a raw file, or not readable at all (no frame at its start, unsupported, a symlink loop)
    unreadable: bool = False

    @property
    def status(self) -> str:
        """Return `damaged`, `suspect`, `truncated`, `unreadable`, `unverified` or `ok`.

        `damaged`: frames lost; `suspect`: frames without a checksum dropped for invalid lines;
        `unverified`: frames without a checksum (a flipped bit could pass unseen). A plain
        file has no frames to verify: `ok`.
        """
        if self.frames_damaged:
            return "damaged"
        if self.frames_suspect:
            return "suspect"
        if self.truncated:
            return "truncated"
        if self.unreadable:
            return "unreadable"
        if self.codec == "none":
            return "ok"
        return "ok" if self.checksum_verified else "unverified"


def _checksum_mismatch(exc: BaseException) -> bool:
    """Whether a decoder error is a checksum mismatch (the damage may be anywhere in the frame)."""
    return "check" in str(exc).lower()


@dataclass(frozen=True)
class _Codec:
    magic: bytes
    new: Callable[[], Any]
    errors: tuple[type[BaseException], ...]
    has_checksum: Callable[[bytes], bool]
    declared_size: Callable[[bytes], int | None]


def _zstd_codec() -> _Codec:
    import zstandard

    def declared(header: bytes) -> int | None:
        try:
            size = zstandard.get_frame_parameters(header).content_size
        except zstandard.ZstdError:
            return None
        return size if size > 0 else None

    return _Codec(
        ZSTD_MAGIC,
        lambda: zstandard.ZstdDecompressor().decompressobj(),
        (zstandard.ZstdError,),
        lambda header: len(header) > 4 and bool(header[4] & _CHECKSUM_BIT),
        declared,
    )


def _lz4_codec() -> _Codec:
    import lz4.frame

    def declared(header: bytes) -> int | None:
        if len(header) < 14 or not header[4] & _LZ4_CONTENT_SIZE_BIT:
            return None
        return int(struct.unpack_from("<Q", header, 6)[0])

    return _Codec(
        LZ4_MAGIC,
        lz4.frame.LZ4FrameDecompressor,
        (RuntimeError,),
        lambda header: len(header) > 4 and bool(header[4] & _CHECKSUM_BIT),
        declared,
    )


def _gzip_codec() -> _Codec:
    return _Codec(
        GZIP_MAGIC,
        lambda: zlib.decompressobj(wbits=31),
        (zlib.error,),
        lambda _header: True,
        lambda _header: None,
    )


CODECS: dict[str, Callable[[], _Codec]] = {
    "gzip": _gzip_codec,
    "zstd": _zstd_codec,
    "lz4": _lz4_codec,
}


class FrameReader:
    """Decode a compressed raw file frame by frame (see the module docstring)."""

    def __init__(self, stream: BinaryIO, codec: str) -> None:
        """Read compressed bytes from `stream` (closed by the caller)."""
        self.codec = CODECS[codec]()
        self.integrity = FileIntegrity(codec, checksum_present=True, checksum_verified=True)
        self._stream = stream
        self._buffer = b""  # compressed bytes from the current frame's start
        self._eof = False
        self._trailer: int | None = None
        self._at_line_start = True
        self._frame_offset = 0

    def _fill(self, size: int) -> bool:
        """Read until the buffer holds `size` bytes or the file ends; whether it holds them."""
        while len(self._buffer) < size and not self._eof:
            piece = self._stream.read(FEED_BYTES)
            if not piece:
                self._eof = True
            self.integrity.bytes += len(piece)
            self._buffer += piece
        return len(self._buffer) >= size

    def _resync(self, start: int) -> int:
        """Drop the buffer before the next frame magic at or after `start`; return bytes dropped.

        Also keeps the 4 bytes before that magic (or before the end of the file) as `_trailer`:
        a gzip member's ISIZE.
        """
        dropped = 0
        while True:
            found = self._buffer.find(self.codec.magic, start)
            if found < 0 and self._eof:
                found = len(self._buffer)
            if found >= 0:
                tail = self._buffer[max(found - 4, 0) : found]
                self._trailer = struct.unpack("<I", tail)[0] if len(tail) == 4 else None
                self._buffer = self._buffer[found:]
                return dropped + found
            keep = len(self.codec.magic) + 3
            cut = max(len(self._buffer) - keep, start)
            dropped += cut
            self._buffer = self._buffer[cut:]
            start = 0
            self._fill(len(self._buffer) + FEED_BYTES)

    def frames(self) -> Iterator[bytes | Damage]:
        """Yield decompressed pieces and `Damage` markers; raise `OSError` at a cut end."""
        self._fill(len(self.codec.magic))
        if not self._buffer.startswith(self.codec.magic):
            raise ValueError(f"not {self.integrity.codec} data (no frame magic at the start)")
        while self._fill(len(self.codec.magic)) or self._buffer:
            if not self._buffer.startswith(self.codec.magic):
                skipped = self._resync(0)
                self.integrity.bytes_lost += skipped
                yield Damage(f"{skipped} bytes between frames are not a frame", skipped)
                continue
            yield from self._frame()

    def _frame(self) -> Iterator[bytes | Damage]:
        self._fill(18)
        header = self._buffer[:18]
        self._frame_offset = self.integrity.bytes - len(self._buffer)
        checksum = self.codec.has_checksum(header)
        declared = self.codec.declared_size(header)
        decoder = self.codec.new()
        held: list[bytes] = []
        held_bytes = released = fed = 0
        self.integrity.frames += 1
        self.integrity.checksum_present &= checksum
        try:
            while not decoder.eof:
                if fed >= len(self._buffer) and not self._fill(fed + 1):
                    break
                if fed > 2 * FEED_BYTES:
                    # keep a window before the feed point for resynchronizing (bounded memory)
                    self._buffer = self._buffer[fed - FEED_BYTES :]
                    fed = FEED_BYTES
                piece = self._buffer[fed : fed + FEED_BYTES]
                fed += len(piece)
                out = decoder.decompress(piece)
                if out:
                    held.append(out)
                    held_bytes += len(out)
                if held_bytes >= HOLD_BYTES:
                    yield b"".join(held)
                    released += held_bytes
                    held, held_bytes = [], 0
        except self.codec.errors as exc:
            output = b"".join(held)
            # a decoder error is raised near the damage; a checksum mismatch only at the end, so
            # there the damage is located by the first line that is not JSON
            end = first_invalid_line(output) if _checksum_mismatch(exc) else held_bytes
            kept = output.rfind(b"\n", 0, max(end - AT_RISK_BYTES, 0)) + 1
            if kept:
                yield output[:kept]
                released += kept
            self.integrity.bytes_decoded += released
            yield self._dropped(
                f"is damaged ({_error_text(exc)})", output[kept:], declared, released
            )
            return
        if not decoder.eof:
            self.integrity.truncated = True
            if held:
                yield b"".join(held)
            self.integrity.bytes_decoded += released + held_bytes
            self._buffer = b""
            raise OSError(TRUNCATED)
        self._buffer = (decoder.unused_data or b"") + self._buffer[fed:]
        yield from self._verified(b"".join(held), checksum, released)

    def _verified(self, output: bytes, checksum: bool, released: int) -> Iterator[bytes | Damage]:
        """Release a decoded frame's held output, unless it has no checksum and invalid lines."""
        if not checksum:
            self.integrity.checksum_verified = False
            invalid = invalid_lines(output, complete_start=self._at_line_start)
            if invalid:
                self.integrity.frames_suspect += 1
                yield self._dropped(
                    f"has no checksum and decoded {invalid} invalid line(s): suspect",
                    output,
                    None,
                    released,
                    resync=False,
                )
                return
        if output:
            yield output
            self._at_line_start = output.endswith(b"\n")
        self.integrity.bytes_decoded += released + len(output)

    def _dropped(
        self,
        why: str,
        output: bytes,
        declared: int | None,
        released: int,
        resync: bool = True,
    ) -> Damage:
        """Drop a frame's held `output` (and resynchronize after it); return what was lost.

        The frame's size is `declared`, else a gzip member's ISIZE trailer, else the output
        decoded plus the compressed bytes skipped at the file's ratio so far.
        """
        if resync:
            self.integrity.frames_damaged += 1
            self.integrity.checksum_verified = False
        offset = self._frame_offset
        skipped = self._resync(1) if resync else 0
        size = declared
        if size is None and self.integrity.codec == "gzip" and skipped >= 8:
            size = self._trailer
        if size is None or size < released + len(output):
            ratio = self.integrity.bytes_decoded / max(self.integrity.bytes - skipped, 1) or 1.0
            size = released + len(output) + int(skipped * ratio)
        lost = size - released
        self.integrity.bytes_lost += lost
        self.integrity.sample = self.integrity.sample or output[:SAMPLE_BYTES]
        self._at_line_start = False
        return Damage(
            f"{self.integrity.codec} frame at compressed byte {offset} {why}; {skipped} "
            f"compressed bytes skipped, about {lost} bytes lost",
            lost,
            "damaged_frame" if resync else "suspect_frame",
        )


def _error_text(exc: BaseException) -> str:
    first = str(exc).splitlines()[0] if str(exc) else "error"
    return f"{type(exc).__name__}: {first}"


def first_invalid_line(output: bytes) -> int:
    """Return where the first line of `output` that is not valid JSON starts (its length if none).

    Lines are checked in DuckDB (`json_valid`, vectorized); the first line is checked too (a
    frame may start mid-line: then nothing before the damage is kept, which loses nothing valid).
    """
    import duckdb

    lines = output.split(b"\n")
    texts = pa.array([line.decode("utf-8", "replace") for line in lines], pa.string())
    # the line numbers are a column: `row_number() OVER ()` has no defined order
    numbered = pa.table({"i": pa.array(range(len(lines)), pa.int64()), "line": texts})
    with duckdb.connect() as con:
        con.register("frame_lines", numbered)
        found = con.execute(
            "SELECT min(i) FROM frame_lines WHERE trim(line) <> '' AND NOT json_valid(line)"
        ).fetchone()
    index = found[0] if found else None
    if index is None:
        return len(output)
    return sum(len(line) + 1 for line in lines[: int(index)])


def invalid_lines(output: bytes, complete_start: bool) -> int:
    """Return how many complete lines of a frame's output are not valid JSON (DuckDB, vectorized).

    The first line is left out unless the frame starts at a line start (it continues the
    previous frame's last line), and so is a last line without its newline.
    """
    import duckdb

    lines = output.split(b"\n")[:-1]
    if lines and not complete_start:
        lines = lines[1:]
    texts = [line.decode("utf-8", "replace") for line in lines if line.strip()]
    if not texts:
        return 0
    table = pa.table({"line": pa.array(texts, pa.string())})
    with duckdb.connect() as con:
        con.register("frame_lines", table)
        found = con.execute("SELECT count(*) FILTER (NOT json_valid(line)) FROM frame_lines")
        return int(found.fetchone()[0])  # type: ignore[index]
