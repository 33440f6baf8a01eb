"""The JSON Lines reader gives exactly the shared reader's batches on awkward files."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pytest

from distill_assets.defs.traces import lines
from distill_assets.defs.traces.lines import JsonlLineReader
from distill_assets.lib.rawfiles import RawLineReader

FILES: dict[str, bytes] = {
    "bom_crlf.jsonl": b'\xef\xbb\xbf{"a": 1}\r\n{"b": 2}\r\n',
    "blank.jsonl": b'\n  \n{"a": 1}\n\t\n\xc2\xa0\n{"b": 2}\n\n',
    "no_newline.jsonl": b'{"a": 1}\n{"b": 2}',
    "utf8.jsonl": b'{"a": "\xff\xfe"}\n{"b": "caf\xc3\xa9"}\n',
    "only_blank.jsonl": b"\n\n   \n",
    "empty.jsonl": b"",
    "leading_space.jsonl": b'  {"a": 1}\n',
    "zipped.jsonl.gz": gzip.compress(b'{"a": 1}\n\n{"b": 2}\n', mtime=0),
}


def read_all(reader: RawLineReader | JsonlLineReader) -> pa.Table:
    return pa.Table.from_batches(list(reader.batches()), schema=reader.reader().schema)


@pytest.mark.parametrize("name", sorted(FILES))
def test_same_lines_as_the_shared_reader(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(FILES[name])
    paths = [str(tmp_path / name)]
    shared, fast = (
        RawLineReader(paths, root=str(tmp_path)),
        JsonlLineReader(paths, root=str(tmp_path)),
    )
    assert read_all(fast).equals(read_all(shared))
    assert fast.stats == shared.stats


def test_lines_longer_than_a_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines, "BLOCK_BYTES", 16)
    long_line = '{"output": "' + "x" * 100 + '"}'
    (tmp_path / "a.jsonl").write_text(f'{long_line}\n\n{{"b": 2}}\n{long_line}')
    reader = JsonlLineReader([str(tmp_path / "a.jsonl")])
    table = read_all(reader)
    assert table["line"].to_pylist() == [long_line, '{"b": 2}', long_line]
    assert table["line_no"].to_pylist() == [1, 3, 4]
    assert table["is_last_line"].to_pylist() == [False, False, True]
    assert (reader.stats.records, reader.stats.blank_lines) == (3, 1)


def test_several_files_keep_their_own_numbering(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text('{"x": 1}\n{"x": 2}\n')
    reader = JsonlLineReader(sorted(str(p) for p in tmp_path.iterdir()), root=str(tmp_path))
    table = read_all(reader)
    assert table.select(["source_file", "line_no", "is_last_line"]).to_pylist() == [
        {"source_file": "a.jsonl", "line_no": 1, "is_last_line": False},
        {"source_file": "a.jsonl", "line_no": 2, "is_last_line": True},
        {"source_file": "b.jsonl", "line_no": 1, "is_last_line": False},
        {"source_file": "b.jsonl", "line_no": 2, "is_last_line": True},
    ]
    assert reader.stats.per_file == {"a.jsonl": 2, "b.jsonl": 2}
