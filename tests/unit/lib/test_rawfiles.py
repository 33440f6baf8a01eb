"""The raw line reader on awkward files: exact line numbers, text, flags and counts."""

from __future__ import annotations

import gzip
import zlib
from datetime import date
from pathlib import Path

import pyarrow as pa
import pytest

from distill_assets.lib import rawfiles
from distill_assets.lib.rawfiles import (
    RawLineReader,
    list_partitions,
    list_raw_files,
    skipped_folders,
)

# name -> (bytes, [(line_no, line, utf8_replaced, is_last_line)], (records, blank, replaced))
CASES: dict[str, tuple[bytes, list[tuple[int, str, bool, bool]], tuple[int, int, int]]] = {
    "bom_crlf.jsonl": (
        b'\xef\xbb\xbf{"a": 1}\r\n{"b": 2}\r\n',
        [(1, '{"a": 1}', False, False), (2, '{"b": 2}', False, True)],
        (2, 0, 0),
    ),
    "blank.jsonl": (
        b'\n  \n{"a": 1}\n\t\n\xc2\xa0\n{"b": 2}\n\n',
        [(3, '{"a": 1}', False, False), (6, '{"b": 2}', False, True)],
        (2, 5, 0),
    ),
    "no_newline.jsonl": (
        b'{"a": 1}\n{"b": 2}',
        [(1, '{"a": 1}', False, False), (2, '{"b": 2}', False, True)],
        (2, 0, 0),
    ),
    "utf8.jsonl": (
        b'{"a": "\xff\xfe"}\n{"b": "caf\xc3\xa9"}\n',
        [(1, '{"a": "\ufffd\ufffd"}', True, False), (2, '{"b": "café"}', False, True)],
        (2, 0, 1),
    ),
    "only_blank.jsonl": (b"\n\n   \n", [], (0, 3, 0)),
    "empty.jsonl": (b"", [], (0, 0, 0)),
    "leading_space.jsonl": (b'  {"a": 1}\n', [(1, '  {"a": 1}', False, True)], (1, 0, 0)),
    "zipped.jsonl.gz": (
        gzip.compress(b'{"a": 1}\n\n{"b": 2}\n', mtime=0),
        [(1, '{"a": 1}', False, False), (3, '{"b": 2}', False, True)],
        (2, 1, 0),
    ),
}


def read_all(reader: RawLineReader) -> pa.Table:
    return pa.Table.from_batches(list(reader.batches()), schema=reader.reader().schema)


@pytest.mark.parametrize("name", sorted(CASES))
def test_awkward_files(tmp_path: Path, name: str) -> None:
    data, expected, counts = CASES[name]
    (tmp_path / name).write_bytes(data)
    reader = RawLineReader([str(tmp_path / name)], root=str(tmp_path))
    rows = read_all(reader).to_pylist()
    assert [(r["line_no"], r["line"], r["utf8_replaced"], r["is_last_line"]) for r in rows] == (
        expected
    )
    assert {r["source_file"] for r in rows} <= {name}
    stats = reader.stats
    assert (stats.records, stats.blank_lines, stats.utf8_replaced) == counts


@pytest.mark.parametrize("codec,suffix", [("zstd", ".jsonl.zst"), ("lz4", ".jsonl.lz4")])
def test_zstd_and_lz4_streams(tmp_path: Path, codec: str, suffix: str) -> None:
    path = tmp_path / f"a{suffix}"
    with pa.CompressedOutputStream(str(path), codec) as out:
        out.write(b'{"a": 1}\n\n{"b": 2}\n')
    table = read_all(RawLineReader([str(path)]))
    assert table["line"].to_pylist() == ['{"a": 1}', '{"b": 2}']
    assert table["line_no"].to_pylist() == [1, 3]


def test_lines_longer_than_a_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rawfiles, "BLOCK_BYTES", 16)
    long_line = '{"output": "' + "x" * 100 + '"}'
    (tmp_path / "a.jsonl").write_text(f'{long_line}\n\n{{"b": 2}}\n{long_line}')
    reader = RawLineReader([str(tmp_path / "a.jsonl")])
    table = read_all(reader)
    assert table["line"].to_pylist() == [long_line, '{"b": 2}', long_line]
    assert table["line_no"].to_pylist() == [1, 3, 4]
    assert table["is_last_line"].to_pylist() == [False, False, True]
    assert (reader.stats.records, reader.stats.blank_lines) == (3, 1)


def test_several_files_keep_their_own_numbering(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text('{"x": 1}\n{"x": 2}\n')
    reader = RawLineReader(sorted(str(p) for p in tmp_path.iterdir()), root=str(tmp_path))
    table = read_all(reader)
    assert table.select(["source_file", "line_no", "is_last_line"]).to_pylist() == [
        {"source_file": "a.jsonl", "line_no": 1, "is_last_line": False},
        {"source_file": "a.jsonl", "line_no": 2, "is_last_line": True},
        {"source_file": "b.jsonl", "line_no": 1, "is_last_line": False},
        {"source_file": "b.jsonl", "line_no": 2, "is_last_line": True},
    ]
    assert reader.stats.per_file == {"a.jsonl": 2, "b.jsonl": 2}


def test_listing_partitions_and_files(tmp_path: Path) -> None:
    day = tmp_path / "traces" / "2026-11-19"
    (day / "nested").mkdir(parents=True)
    for name in ("b.jsonl", "a.jsonl.gz", "nested/c.jsonl.zst", "notes.txt"):
        (day / name).write_bytes(b"")
    (tmp_path / "traces" / "not-a-date").mkdir()
    for name in ("2026-13-45", "2026_11_21", "2026-11-30", "2026-1-05"):
        (tmp_path / "traces" / name).mkdir()
    assert list_partitions(str(tmp_path), "traces") == ["2026-11-19", "2026-11-30"]
    assert list_partitions(str(tmp_path), "traces", date(2026, 11, 20)) == ["2026-11-19"]
    assert skipped_folders(str(tmp_path), "traces", date(2026, 11, 20)) == {
        "2026-1-05": "not_a_date",
        "2026-11-30": "future_date",
        "2026-13-45": "not_a_date",
        "2026_11_21": "not_a_date",
        "not-a-date": "not_a_date",
    }
    assert [
        Path(p).relative_to(day).as_posix()
        for p in list_raw_files(str(tmp_path), "traces", "2026-11-19")
    ] == ["a.jsonl.gz", "b.jsonl", "nested/c.jsonl.zst", "notes.txt"]
    assert [
        Path(p).name
        for p in list_raw_files(str(tmp_path), "traces", "2026-11-19", (".jsonl", ".jsonl.gz"))
    ] == ["a.jsonl.gz", "b.jsonl"]
    assert list_raw_files(str(tmp_path), "traces", "2026-11-20") == []


def _problems(reader: RawLineReader) -> list[tuple[str, int, str]]:
    return [(p.source_file, p.line_no, p.reason) for p in reader.stats.problems]


def _corrupt(data: bytes) -> bytes:
    """Overwrite bytes in the middle of a compressed stream (its check then fails)."""
    middle = len(data) // 2
    return data[:middle] + b"\xff" * 8 + data[middle + 8 :]


def test_unreadable_files_become_problems_and_the_others_are_read(tmp_path: Path) -> None:
    good = b'{"a": 1}\n{"b": 2}\n'
    files = {
        "a_plain_named_gz.jsonl.gz": b'{"a": 1}\n',
        "b_gzip_named_plain.jsonl": gzip.compress(good, mtime=0),
        "c_corrupt.jsonl.gz": _corrupt(gzip.compress(good * 1000, mtime=0)),
        "d_export.json": b'[{"a": 1}]',
        "e_old.jsonl.bz2": b"BZh91AY&SY",
        "f_good.jsonl": good,
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    reader = RawLineReader(sorted(str(tmp_path / n) for n in files), root=str(tmp_path))
    table = read_all(reader)
    assert _problems(reader) == [
        ("a_plain_named_gz.jsonl.gz", 1, "undecodable_file"),
        ("b_gzip_named_plain.jsonl", 1, "undecodable_file"),
        (
            "c_corrupt.jsonl.gz",
            table["source_file"].to_pylist().count("c_corrupt.jsonl.gz") + 1,
            "damaged_frame",
        ),
        ("d_export.json", 0, "unsupported_file"),
        ("e_old.jsonl.bz2", 0, "unsupported_file"),
    ]
    assert reader.stats.problems[1].detail == (
        "ValueError: gzip data in a file named as plain JSON Lines"
    )
    good_rows = [r["line"] for r in table.to_pylist() if r["source_file"] == "f_good.jsonl"]
    assert good_rows == ['{"a": 1}', '{"b": 2}']
    # every record is a line or a problem
    assert reader.stats.records == table.num_rows + len(reader.stats.problems)


@pytest.mark.parametrize("block", [16, 64, 1 << 20])
def test_records_over_the_limit_are_skipped_as_too_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(rawfiles, "BLOCK_BYTES", block)
    huge = '{"text": "' + "y" * 500 + '"}'
    (tmp_path / "a.jsonl").write_text(f'{{"a": 1}}\n{huge}\n{{"b": 2}}\n{huge}')
    reader = RawLineReader([str(tmp_path / "a.jsonl")], root=str(tmp_path), max_record_bytes=100)
    table = read_all(reader)
    assert table["line"].to_pylist() == ['{"a": 1}', '{"b": 2}']
    assert table["line_no"].to_pylist() == [1, 3]
    assert _problems(reader) == [("a.jsonl", 2, "too_large"), ("a.jsonl", 4, "too_large")]
    assert reader.stats.problems[0].detail == "record of 512 bytes over the 100-byte limit"
    assert reader.stats.problems[0].raw_line == huge
    assert (reader.stats.records, reader.stats.blank_lines) == (4, 0)


# a 40-line file (line 5 blank) of 20 to 61 bytes a line: 1,596 bytes, 7 blocks of 256 bytes
# (line 31 starts at byte 1,176, in the fifth block)
DAMAGED_LINES = [
    "" if n == 5 else f'{{"n": {n}, "text": "{"x" * (n % 9 * 5)}"}}' for n in range(1, 41)
]
DAMAGED_TEXT = "".join(f"{line}\n" for line in DAMAGED_LINES).encode()
SUFFIXES = {"gzip": ".jsonl.gz", "zstd": ".jsonl.zst", "lz4": ".jsonl.lz4"}


def _compressed(data: bytes, codec: str) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, codec) as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


def _damaged_at(cut: int, codec: str) -> bytes:
    """A file that decompresses to exactly `DAMAGED_TEXT[:cut]`, then is truncated.

    The text up to `cut` is one complete stream (gzip member, zstd or LZ4 frame); it is followed
    by the first 4 bytes of the stream of the rest, whose header is cut, so nothing after `cut`
    decompresses.
    """
    return _compressed(DAMAGED_TEXT[:cut], codec) + _compressed(DAMAGED_TEXT[cut:], codec)[:4]


def _offset(line_no: int, within: int) -> int:
    """The byte offset of `within` bytes into line `line_no` of `DAMAGED_TEXT`."""
    return sum(len(line) + 1 for line in DAMAGED_LINES[: line_no - 1]) + within


# truncation point -> (line cut by the damage, bytes of it decompressed)
TRUNCATIONS = {
    "at_the_start": (1, 0),
    "first_block_mid_line": (2, 9),
    "first_block_line_end": (4, 0),
    "first_block_after_a_blank_line": (6, 3),
    "several_blocks_mid_line": (31, 17),
    "several_blocks_line_end": (31, 0),
    # byte 1,024: the end of the fourth block, the failed read decompresses nothing
    "at_a_block_end": (26, 28),
    "last_line_unterminated": (40, len(DAMAGED_LINES[39])),
}


@pytest.mark.parametrize("point", sorted(TRUNCATIONS))
@pytest.mark.parametrize("codec", sorted(SUFFIXES))
def test_a_truncated_archive_keeps_every_line_before_the_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str, point: str
) -> None:
    monkeypatch.setattr(rawfiles, "BLOCK_BYTES", 256)
    cut_line, within = TRUNCATIONS[point]
    name = f"a{SUFFIXES[codec]}"
    (tmp_path / name).write_bytes(_damaged_at(_offset(cut_line, within), codec))
    reader = RawLineReader([str(tmp_path / name)], root=str(tmp_path))
    table = read_all(reader)
    kept = [n for n in range(1, cut_line) if n != 5]
    assert table["line_no"].to_pylist() == kept
    assert table["line"].to_pylist() == [DAMAGED_LINES[n - 1] for n in kept]
    assert table["is_last_line"].to_pylist() == [n == kept[-1] for n in kept]
    assert reader.stats.problems == [
        rawfiles.RawProblem(
            name,
            cut_line,
            "undecodable_file",
            "OSError: Truncated compressed stream",
            DAMAGED_LINES[cut_line - 1][:within],
        )
    ]
    assert (reader.stats.records, reader.stats.blank_lines) == (
        len(kept) + 1,
        int(cut_line > 5),
    )
    assert reader.stats.per_file == {name: len(kept) + 1}


@pytest.mark.parametrize("codec", sorted(SUFFIXES))
def test_the_same_file_ending_cleanly_gives_the_same_lines(tmp_path: Path, codec: str) -> None:
    cut = _offset(31, 0)
    (tmp_path / "clean").mkdir()
    (tmp_path / "damaged").mkdir()
    name = f"a{SUFFIXES[codec]}"
    (tmp_path / "clean" / name).write_bytes(_compressed(DAMAGED_TEXT[:cut], codec))
    (tmp_path / "damaged" / name).write_bytes(_damaged_at(cut, codec))
    clean, damaged = (
        RawLineReader([str(tmp_path / kind / name)], root=str(tmp_path / kind))
        for kind in ("clean", "damaged")
    )
    clean_rows, damaged_rows = read_all(clean).to_pylist(), read_all(damaged).to_pylist()
    assert len(damaged_rows) == 29
    assert damaged_rows == clean_rows
    assert (clean.stats.problems, _problems(damaged)) == ([], [(name, 31, "undecodable_file")])
    assert damaged.stats.records == clean.stats.records + 1


def test_a_line_over_the_limit_cut_by_the_damage_is_the_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rawfiles, "BLOCK_BYTES", 16)
    huge = '{"text": "' + "y" * 500 + '"}'
    text = f'{{"a": 1}}\n{huge}\n'.encode()
    (tmp_path / "a.jsonl.gz").write_bytes(
        _compressed(text[:400], "gzip") + _compressed(text[400:], "gzip")[:4]
    )
    reader = RawLineReader([str(tmp_path / "a.jsonl.gz")], root=str(tmp_path), max_record_bytes=100)
    table = read_all(reader)
    assert table["line"].to_pylist() == ['{"a": 1}']
    assert reader.stats.problems == [
        rawfiles.RawProblem(
            "a.jsonl.gz",
            2,
            "undecodable_file",
            "OSError: Truncated compressed stream",
            huge[:391],
        )
    ]
    assert reader.stats.records == 2


@pytest.mark.parametrize("codec", sorted(SUFFIXES))
def test_a_stream_truncated_in_its_data_keeps_what_decompressed(tmp_path: Path, codec: str) -> None:
    lines = [f'{{"n": {n}, "text": "{"word " * (n % 50)}"}}' for n in range(1, 20001)]
    data = _compressed("".join(f"{line}\n" for line in lines).encode(), codec)
    name = f"a{SUFFIXES[codec]}"
    (tmp_path / name).write_bytes(data[: len(data) // 2])
    reader = RawLineReader([str(tmp_path / name)], root=str(tmp_path))
    table = read_all(reader)
    kept = table.num_rows
    assert table["line_no"].to_pylist() == list(range(1, kept + 1))
    assert table["line"].to_pylist() == lines[:kept]
    [problem] = reader.stats.problems
    assert (problem.line_no, problem.reason) == (kept + 1, "undecodable_file")
    assert lines[kept].startswith(problem.raw_line)
    # half the stream decompresses to about half the lines (every whole codec block before the cut)
    assert len(lines) // 3 < kept < len(lines) // 3 * 2
    if codec == "gzip":
        # exactly what zlib (the reference decoder) decompresses from the same bytes
        text = zlib.decompressobj(31).decompress(data[: len(data) // 2])
        assert kept == text.count(b"\n")
        assert problem.raw_line == text[text.rfind(b"\n") + 1 :].decode()


def test_a_corrupt_archive_keeps_only_original_lines_before_the_damage(tmp_path: Path) -> None:
    lines = [f'{{"n": {n}, "text": "{"word " * (n % 50)}"}}' for n in range(1, 20001)]
    # zlib decodes the damaged member to the end (from line 10,005 on, 7,422 garbled lines parse
    # as JSON), then fails its CRC: the lines before the first one that is not JSON, less the
    # last 256 KiB of them, are kept, and each is the original line
    text = "".join(f"{line}\n" for line in lines).encode()
    data = _corrupt(_compressed(text, "gzip"))
    (tmp_path / "a.jsonl.gz").write_bytes(data)
    reader = RawLineReader([str(tmp_path / "a.jsonl.gz")], root=str(tmp_path))
    kept = read_all(reader)["line"].cast(pa.string()).to_pylist()
    assert len(kept) == 8221
    assert kept == lines[:8221]
    lost = len(text) - sum(len(line) + 1 for line in kept)
    assert reader.stats.problems == [
        rawfiles.RawProblem(
            "a.jsonl.gz",
            8222,
            "damaged_frame",
            "gzip frame at compressed byte 0 is damaged (error: Error -3 while decompressing "
            f"data: incorrect data check); {len(data)} compressed bytes skipped, about {lost} "
            "bytes lost",
        )
    ]


def test_symlink_loops_and_links_to_folders_are_reported_not_skipped(tmp_path: Path) -> None:
    day = tmp_path / "traces" / "2026-11-19"
    (day / "sub").mkdir(parents=True)
    (day / "ok.jsonl").write_text('{"a": 1}\n')
    (day / "x.jsonl").symlink_to(day / "y.jsonl")
    (day / "y.jsonl").symlink_to(day / "x.jsonl")
    (day / "sub" / "up").symlink_to(day)
    (day / "elsewhere").symlink_to(tmp_path)  # a folder holding the link: a loop too
    (tmp_path / "other").mkdir()
    (day / "to_other").symlink_to(tmp_path / "other")
    (day / "gone.jsonl").symlink_to(tmp_path / "missing.jsonl")
    files = rawfiles.list_raw_files(str(tmp_path), "traces", "2026-11-19")
    reader = RawLineReader(files, root=str(tmp_path))
    assert read_all(reader).num_rows == 1
    assert [(p.source_file, p.line_no, p.reason) for p in reader.stats.problems] == [
        ("traces/2026-11-19/elsewhere", 0, "symlink_loop"),
        ("traces/2026-11-19/gone.jsonl", 0, "unsupported_file"),
        ("traces/2026-11-19/sub/up", 0, "symlink_loop"),
        ("traces/2026-11-19/to_other", 0, "unsupported_file"),
        ("traces/2026-11-19/x.jsonl", 0, "symlink_loop"),
        ("traces/2026-11-19/y.jsonl", 0, "symlink_loop"),
    ]
