"""`lib.json_text`: files byte-identical to `json.dumps(..., sort_keys=True)`, in batches."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from distill_assets.lib.json_text import ascii_escaped, write_json_array, write_json_lines

SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "text": pl.String(),
        "flags": pl.List(pl.String()),
        "score": pl.Float64(),
        "count": pl.Int64(),
        "ok": pl.Boolean(),
    }
)
ROWS = [
    # escapes, quotes, backslashes, control characters, DEL, slash
    ("e1", 'a"b\\c/d\x00\x01\x08\x0c\x1f\x7f\t\n\r', [",", 'b"', "é"], 0.85, 3, True),
    # non-ASCII of every width, line separators, a character beyond U+FFFF (surrogate pair)
    ("é☃😀\u2028", "𝄞 中文 \ud7ff\ue000\uffff \x80\xff", [], 1e-05, None, None),
    # nulls, empty strings, floats Python writes in exponent form or as NaN
    ("e3", None, None, float("nan"), -1, False),
    ("e4", "", [""], 1e16, 0, True),
    ("e5", "plain", ["only"], None, 5, False),
    ("e6", "x", ["a", "b", "c"], 0.30000000000000004, 7, True),
    ("e7", "y", ["ü"], 123456789012345.6, 8, True),
    ("e8", "z", ["z"], float("inf"), 9, True),
]


def frame() -> pl.DataFrame:
    return pl.DataFrame(ROWS, schema=SCHEMA, orient="row")


def test_array_file_is_byte_identical_to_json_dumps_indent_2(tmp_path: Path) -> None:
    rows = frame()
    path = tmp_path / "batch.json"

    written = write_json_array(path, [rows.head(3), rows.head(0), rows.slice(3, 1), rows.tail(4)])

    assert written == 8
    expected = json.dumps(rows.to_dicts(), indent=2, sort_keys=True) + "\n"
    assert path.read_bytes() == expected.encode("ascii")
    assert [r["id"] for r in json.loads(path.read_text())] == [r[0] for r in ROWS]


def test_lines_file_is_byte_identical_to_json_dumps_per_line(tmp_path: Path) -> None:
    rows = frame()
    path = tmp_path / "reviewed.jsonl"

    assert write_json_lines(path, [rows.head(1), rows.tail(7)]) == 8

    expected = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows.to_dicts())
    assert path.read_bytes() == expected.encode("ascii")


def test_no_rows_is_an_empty_array_and_no_partial_file_is_left(tmp_path: Path) -> None:
    path = tmp_path / "batch.json"

    assert write_json_array(path, [frame().head(0)]) == 0

    assert path.read_text() == "[]\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["batch.json"]


def test_ascii_escaped_equals_ensure_ascii_over_every_kind_of_character() -> None:
    # every 97th code point of the BMP but the surrogates, then beyond it
    chars = [chr(c) for c in range(0, 0x110000, 97) if not 0xD800 <= c < 0xE000]
    text = "".join(chars)

    raw = json.dumps(text, ensure_ascii=False).encode("utf-8")

    assert ascii_escaped(raw) == json.dumps(text).encode("ascii")
    assert ascii_escaped(b'{"a": "plain"}') == b'{"a": "plain"}'
