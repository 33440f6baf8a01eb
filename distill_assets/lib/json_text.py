"""JSON text of Polars frames, byte for byte what Python's `json.dumps(..., sort_keys=True)` writes.

Vectorized: Polars encodes each column's values (floats as Python's `repr`, the few outside
the range where Polars already writes them so one at a time per distinct value), the rows are
assembled with string expressions and the characters `ensure_ascii` escapes (non-ASCII and
DEL) are escaped over a whole batch's bytes at once with numpy. A file of any size is thus
written batch by batch (`write_json_array`, `write_json_lines`), with no Python object per row
and memory for one batch, atomically (a temporary name, then a rename).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import polars as pl

_VALUE = "v"
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# floats Polars writes as Python's `repr` does (beyond it, Polars chooses another notation)
_REPR_LOW, _REPR_HIGH = 1e-4, 1e16


def _scalar_texts(values: pl.Series) -> pl.Series:
    """Return the JSON text of each value of a scalar series (non-ASCII left raw)."""
    dtype = values.dtype
    if dtype == pl.String:
        frame = values.alias(_VALUE).to_frame()
        encoded = frame.select(pl.struct(_VALUE).struct.json_encode()).to_series()
        return encoded.str.strip_prefix(f'{{"{_VALUE}":').str.strip_suffix("}")
    if dtype == pl.Boolean:
        return values.replace_strict({True: "true", False: "false"}, return_dtype=pl.String)
    if dtype.is_integer():
        return values.cast(pl.String)
    if dtype.is_float():
        return _float_texts(values.cast(pl.Float64))
    raise TypeError(f"no JSON text for a column of type {dtype}")


def _float_texts(values: pl.Series) -> pl.Series:
    """Return `json.dumps` of each float: Polars' text where it is Python's, else Python's own."""
    magnitude = values.abs()
    polars_form = (magnitude == 0) | ((magnitude >= _REPR_LOW) & (magnitude < _REPR_HIGH))
    others = values.filter(polars_form.not_() & values.is_not_null()).unique()
    python = {v: json.dumps(v) for v in others.to_list()}
    frame = pl.DataFrame({_VALUE: values, "polars": polars_form})
    return frame.select(
        pl.when(pl.col(_VALUE).is_null())
        .then(pl.lit(None, dtype=pl.String))
        .when("polars")
        .then(pl.col(_VALUE).cast(pl.String))
        .otherwise(pl.col(_VALUE).replace_strict(python, default=None, return_dtype=pl.String))
    ).to_series()


def _value_texts(values: pl.Series, indent: str | None, level: int) -> pl.Series:
    """Return the JSON text of each value (null: `null`); a list's items at nesting `level`."""
    if not isinstance(values.dtype, pl.List):
        return _scalar_texts(values).fill_null("null")
    rows = values.to_frame(_VALUE).with_row_index("_row")
    items = rows.explode(_VALUE)
    texts = items.with_columns(_scalar_texts(items.get_column(_VALUE)).fill_null("null"))
    if indent is None:
        separator, opening, closing = ", ", "[", "]"
    else:
        inner = "\n" + indent * (level + 1)
        separator, opening, closing = "," + inner, "[" + inner, "\n" + indent * level + "]"
    joined = texts.group_by("_row").agg(pl.col(_VALUE).str.join(separator))
    return (
        rows.select("_row", values.list.len().alias("_length"))
        .join(joined, on="_row", how="left", maintain_order="left")
        .select(
            pl.when(pl.col("_length").is_null())
            .then(pl.lit("null"))
            .when(pl.col("_length") == 0)
            .then(pl.lit("[]"))
            .otherwise(pl.concat_str(pl.lit(opening), _VALUE, pl.lit(closing)))
        )
        .to_series()
    )


def json_objects(frame: pl.DataFrame, *, indent: int | None = None, level: int = 0) -> pl.Series:
    """Return each row as the text `json.dumps(row, sort_keys=True, indent=indent)` gives it.

    `level`: how deeply the object is nested in the document (1 for an item of a top-level
    array), which sets the indentation of its keys and closing brace. Columns are strings,
    numbers, booleans or lists of them. Non-ASCII characters are left as they are: `ascii_escaped`
    escapes them as `ensure_ascii` does.
    """
    pad = None if indent is None else " " * indent
    names = sorted(frame.columns)
    texts = [_value_texts(frame.get_column(name), pad, level + 1).alias(name) for name in names]
    if pad is None:
        separator, opening, closing = ", ", "{", "}"
    else:
        inner = "\n" + pad * (level + 1)
        separator, opening, closing = "," + inner, "{" + inner, "\n" + pad * level + "}"
    members: list[pl.Expr | str] = []
    for position, name in enumerate(names):
        members += [pl.lit((separator if position else "") + json.dumps(name) + ": "), name]
    assembled = pl.concat_str(pl.lit(opening), *members, pl.lit(closing))
    return pl.DataFrame(texts).select(assembled).to_series()


def ascii_escaped(data: bytes) -> bytes:
    r"""Return UTF-8 JSON text with every non-ASCII character and DEL escaped (`\uXXXX`).

    What `json.dumps` writes with `ensure_ascii` (its default): a character beyond U+FFFF as a
    surrogate pair, hex digits in lower case. Such characters only occur inside JSON strings,
    where an escape means the same character, so the text is rewritten without parsing it.
    """
    if data.isascii() and b"\x7f" not in data:
        return data
    raw = np.frombuffer(data, dtype=np.uint8)
    starts = np.flatnonzero((raw >= 0xC0) | (raw == 0x7F))
    padded = np.concatenate([raw, np.zeros(3, dtype=np.uint8)]).astype(np.uint32)
    lead = padded[starts]
    following = [padded[starts + k] & 0x3F for k in (1, 2, 3)]
    width = np.select([lead < 0x80, lead < 0xE0, lead < 0xF0], [1, 2, 3], 4)
    code = np.select(
        [width == 1, width == 2, width == 3],
        [
            lead,
            ((lead & 0x1F) << 6) | following[0],
            ((lead & 0x0F) << 12) | (following[0] << 6) | following[1],
        ],
        ((lead & 0x07) << 18) | (following[0] << 12) | (following[1] << 6) | following[2],
    )
    astral = code >= 0x10000
    escaped = np.where(astral, 12, 6)
    counts = np.where(raw >= 0x80, 0, 1).astype(np.int64)
    counts[starts] = escaped
    out = np.repeat(raw, counts)
    shift = escaped - width
    at = starts + np.cumsum(shift) - shift  # where each escape starts in `out`
    offset = np.where(astral, code - 0x10000, 0)
    high = np.where(astral, 0xD800 + (offset >> 10), code)
    low = 0xDC00 + (offset & 0x3FF)
    for units, place in ((high, at), (low[astral], at[astral] + 6)):
        text = np.empty((len(units), 6), dtype=np.uint8)
        text[:, 0], text[:, 1] = ord("\\"), ord("u")
        for digit in range(4):
            text[:, 2 + digit] = _HEX[(units >> (12 - 4 * digit)) & 0xF]
        out[place[:, None] + np.arange(6)] = text
    return out.tobytes()


def _write_atomic(path: Path, pieces: Iterable[bytes]) -> None:
    """Write `pieces` to `path` through a temporary sibling renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("wb") as handle:
        for piece in pieces:
            handle.write(piece)
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(path)


def _batch_bytes(frame: pl.DataFrame, *, indent: int | None, level: int, joiner: str) -> bytes:
    """Return the rows of `frame` as JSON objects joined by `joiner`, ASCII-escaped."""
    objects = json_objects(frame, indent=indent, level=level)
    return ascii_escaped(objects.str.join(joiner).item().encode("utf-8"))


def write_json_array(path: Path, batches: Iterable[pl.DataFrame], *, indent: int = 2) -> int:
    """Write the rows of `batches` as `json.dumps(rows, indent=indent, sort_keys=True)` + newline.

    Returns the number of rows; the file is replaced atomically once complete.
    """
    pad = " " * indent
    rows = 0

    def pieces() -> Iterable[bytes]:
        nonlocal rows
        for batch in batches:
            if batch.height:
                yield (b"[\n" if rows == 0 else b",\n") + pad.encode()
                yield _batch_bytes(batch, indent=indent, level=1, joiner=",\n" + pad)
                rows += batch.height
        yield b"[]\n" if rows == 0 else b"\n]\n"

    _write_atomic(path, pieces())
    return rows


def write_json_lines(path: Path, batches: Iterable[pl.DataFrame]) -> int:
    """Write each row of `batches` as a line `json.dumps(row, sort_keys=True)`; return the rows.

    The file is replaced atomically once complete.
    """
    rows = 0

    def pieces() -> Iterable[bytes]:
        nonlocal rows
        for batch in batches:
            if batch.height:
                yield _batch_bytes(batch, indent=None, level=0, joiner="\n") + b"\n"
                rows += batch.height

    _write_atomic(path, pieces())
    return rows
