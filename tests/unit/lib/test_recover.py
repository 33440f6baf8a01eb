"""Damaged archives: every intact gzip member and zstd/lz4 frame is recovered, losses counted."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import lz4.frame
import pytest
import zstandard

from distill_assets.lib.rawfiles import RawLineReader, integrity_table

FRAMES, PER_FRAME = 6, 1200


def lines(first: int, count: int) -> bytes:
    """Valid JSON lines of one length (218 bytes with the newline) and little redundancy."""
    return "".join(
        f'{{"n": "{i:05d}", "text": "{hashlib.sha256(str(i).encode()).hexdigest() * 3}"}}\n'
        for i in range(first, first + count)
    ).encode()


LINE_BYTES = len(lines(0, 1))


def compress(codec: str, data: bytes, checksum: bool = True) -> bytes:
    if codec == "gzip":
        return gzip.compress(data, mtime=0)
    if codec == "zstd":
        return zstandard.ZstdCompressor(write_checksum=checksum).compress(data)
    return lz4.frame.compress(data, content_checksum=checksum)


def flip(data: bytes, at: int, count: int = 16) -> bytes:
    return data[:at] + bytes(b ^ 0xFF for b in data[at : at + count]) + data[at + count :]


def read(path: Path) -> tuple[int, RawLineReader]:
    reader = RawLineReader([str(path)], root=str(path.parent))
    return sum(batch.num_rows for batch in reader.batches()), reader


@pytest.mark.parametrize(("codec", "suffix"), [("gzip", "gz"), ("zstd", "zst"), ("lz4", "lz4")])
def test_every_intact_frame_around_a_damaged_one_is_recovered(
    tmp_path: Path, codec: str, suffix: str
) -> None:
    frames = [compress(codec, lines(i * PER_FRAME, PER_FRAME)) for i in range(FRAMES)]
    frames[2] = flip(frames[2], len(frames[2]) // 2)
    path = tmp_path / f"a.jsonl.{suffix}"
    path.write_bytes(b"".join(frames))
    rows, reader = read(path)
    assert rows == (FRAMES - 1) * PER_FRAME
    [problem] = reader.stats.problems
    assert (problem.line_no, problem.reason) == (2 * PER_FRAME + 1, "damaged_frame")
    offset = len(frames[0]) + len(frames[1])
    assert problem.detail.startswith(f"{codec} frame at compressed byte {offset} is damaged (")
    assert problem.detail.endswith(
        f"{len(frames[2])} compressed bytes skipped, about {PER_FRAME * LINE_BYTES} bytes lost"
    )
    [row] = integrity_table(reader.stats).to_pylist()
    assert row == {
        "source_file": f"a.jsonl.{suffix}",
        "codec": codec,
        "bytes": sum(map(len, frames)),
        "frames": FRAMES,
        "frames_damaged": 1,
        "checksum_present": True,
        "checksum_verified": False,
        "lines_recovered": (FRAMES - 1) * PER_FRAME + 1,
        "bytes_lost": PER_FRAME * LINE_BYTES,
        "lines_lost_estimated": PER_FRAME,
        "status": "damaged",
    }
    # recovered + lost adds up to what was written
    assert row["lines_recovered"] - 1 + row["lines_lost_estimated"] == FRAMES * PER_FRAME


def test_a_damaged_single_member_keeps_its_lines_before_the_damage(tmp_path: Path) -> None:
    data = gzip.compress(lines(0, FRAMES * PER_FRAME), mtime=0)
    path = tmp_path / "a.jsonl.gz"
    path.write_bytes(flip(data, len(data) // 2))
    rows, reader = read(path)
    # the CRC fails at the end: the damage is where lines stop being JSON; the lines of the
    # last 256 KiB before it are dropped with the rest of the member
    assert rows == 2402
    assert [(p.line_no, p.reason) for p in reader.stats.problems] == [(2403, "damaged_frame")]
    [row] = integrity_table(reader.stats).to_pylist()
    assert (row["lines_recovered"], row["lines_lost_estimated"]) == (2403, 4798)
    assert row["bytes_lost"] == (FRAMES * PER_FRAME - 2402) * LINE_BYTES


def test_a_frame_without_checksum_that_decodes_invalid_lines_is_quarantined_whole(
    tmp_path: Path,
) -> None:
    frames = [compress("lz4", lines(i * PER_FRAME, PER_FRAME), False) for i in range(FRAMES)]
    frame = bytearray(frames[2])
    frame[1555] ^= 0x01  # one bit: the frame still decodes, one line is no longer JSON
    path = tmp_path / "a.jsonl.lz4"
    path.write_bytes(b"".join([*frames[:2], bytes(frame), *frames[3:]]))
    rows, reader = read(path)
    assert rows == (FRAMES - 1) * PER_FRAME
    assert [(p.line_no, p.reason) for p in reader.stats.problems] == [
        (2 * PER_FRAME + 1, "suspect_frame")
    ]
    [row] = integrity_table(reader.stats).to_pylist()
    assert (row["checksum_present"], row["status"], row["lines_lost_estimated"]) == (
        False,
        "suspect",
        PER_FRAME,
    )


def test_intact_and_unverifiable_archives_are_reported(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl.zst").write_bytes(
        b"".join(compress("zstd", lines(i * 10, 10)) for i in range(3))
    )
    (tmp_path / "b.jsonl.lz4").write_bytes(compress("lz4", lines(0, 10), checksum=False))
    (tmp_path / "c.jsonl").write_bytes(lines(0, 4))
    reader = RawLineReader(sorted(str(p) for p in tmp_path.iterdir()), root=str(tmp_path))
    assert sum(batch.num_rows for batch in reader.batches()) == 44
    table = integrity_table(reader.stats).to_pylist()
    assert [
        (r["source_file"], r["codec"], r["frames"], r["checksum_present"], r["status"])
        for r in table
    ] == [
        ("a.jsonl.zst", "zstd", 3, True, "ok"),
        ("b.jsonl.lz4", "lz4", 1, False, "unverified"),
        ("c.jsonl", "none", 0, False, "ok"),
    ]
