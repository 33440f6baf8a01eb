"""`tf.train.Example` records in TFRecord files, without TensorFlow or generated protobuf classes.

Encoding follows protobuf's wire format for `tensorflow/core/example/{example,feature}.proto`:
Example.features = 1; Features.feature = 1, a map whose entries hold key = 1 and value = 2;
Feature.bytes_list = 1 | float_list = 2 | int64_list = 3, each list's `value` = 1 (numbers packed:
float32 little-endian, int64 as varints, negatives in ten bytes). Map entries are written in the
byte order of their keys, as protobuf's deterministic serialization does, so the same features
always give the same bytes. Records are framed as TensorFlow's TFRecord writer frames them: length
(uint64 LE), its masked CRC-32C, the data, the data's masked CRC-32C.

Columnar: a call encodes one feature (or example, or framing) for many rows at once with numpy
and Arrow compute (varints of a whole column, length-delimited fields by element-wise
concatenation, a row's list as a view of consecutive values), not a Python loop per value; only
the CRC-32C is computed a record at a time.

No generated classes on purpose: packages that ship their own `example_pb2` (e.g. `tfrecord`)
register `tensorflow.BytesList` & co. in protobuf's global descriptor pool, and a process that
also imports TensorFlow then fails with "duplicate symbol 'tensorflow.BytesList'".
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import crc32c
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BYTES, FLOATS, INT64S = 1, 2, 3  # the Feature field of each list kind
Value = bytes | float | int
_BINARY = pa.large_binary()
_EMPTY = pa.scalar(b"", _BINARY)


def _column(data: np.ndarray, lengths: np.ndarray) -> pa.LargeBinaryArray:
    """Return the binary column whose values are `data` cut into consecutive `lengths`."""
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    buffers = [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data, np.uint8))]
    return pa.LargeBinaryArray.from_buffers(_BINARY, len(lengths), buffers)


def _offsets(column: pa.LargeBinaryArray) -> np.ndarray:
    """Return the byte offsets of `column`'s values in its data buffer (len(column) + 1)."""
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)
    return offsets[column.offset : column.offset + len(column) + 1]


def _grouped(column: pa.LargeBinaryArray, groups: np.ndarray) -> pa.LargeBinaryArray:
    """Concatenate consecutive values: group i is values groups[i] to groups[i + 1] (no copy)."""
    bounds = np.ascontiguousarray(_offsets(column)[groups])
    buffers = [None, pa.py_buffer(bounds), column.buffers()[2]]
    return pa.LargeBinaryArray.from_buffers(_BINARY, len(groups) - 1, buffers)


def _varints(
    values: np.ndarray, tag: int | None = None, present: np.ndarray | None = None
) -> pa.LargeBinaryArray:
    """Return each value's varint bytes (int64 as two's complement), after `tag` when given.

    Rows where `present` is false get no bytes at all.
    """
    unsigned = np.ascontiguousarray(values, dtype=np.int64).view(np.uint64)
    counts = np.ones(len(unsigned), dtype=np.int64)
    for shift in range(7, 64, 7):
        counts += unsigned >= np.uint64(1 << shift)
    width = int(counts.max(initial=1))
    lead = 0 if tag is None else 1
    digits = np.empty((len(unsigned), lead + width), dtype=np.uint8)
    if tag is not None:
        digits[:, 0] = tag
    for byte in range(width):
        seven = (unsigned >> np.uint64(7 * byte)) & np.uint64(0x7F)
        digits[:, lead + byte] = seven | np.where(byte < counts - 1, 0x80, 0).astype(np.uint64)
    lengths = counts + lead if present is None else np.where(present, counts + lead, 0)
    return _column(digits[np.arange(lead + width) < lengths[:, None]], lengths)


@dataclass(frozen=True)
class Fields:
    """Per-row protobuf bytes not concatenated yet: row i is the parts' row i one after another.

    A part is a binary column (one value per row) or one value for every row; `lengths` is each
    row's total. Wrapping in a length-delimited field only adds a part (the headers, computed
    from `lengths`): the bytes are copied once, by `joined`.
    """

    parts: tuple[pa.LargeBinaryArray | pa.Scalar, ...]
    lengths: np.ndarray

    @classmethod
    def of(cls, column: pa.LargeBinaryArray) -> Fields:
        """Return the fields of a binary column's values as they are."""
        return cls((column,), np.diff(_offsets(column)))

    def delimited(self, number: int, present: np.ndarray | None = None) -> Fields:
        """Wrap each row in a length-delimited field `number` (none where `present` is false)."""
        headers = _varints(self.lengths, tag=number << 3 | 2, present=present)
        return Fields((headers, *self.parts), self.lengths + np.diff(_offsets(headers)))

    def after(self, prefix: bytes) -> Fields:
        """Return `prefix` followed by these fields, in every row."""
        return Fields((pa.scalar(prefix, _BINARY), *self.parts), self.lengths + len(prefix))

    def joined(self) -> pa.LargeBinaryArray:
        """Return each row's bytes as one binary column."""
        if len(self.parts) == 1 and isinstance(self.parts[0], pa.Array):
            return self.parts[0]
        return pc.binary_join_element_wise(*self.parts, _EMPTY)


def _concat(fields: list[Fields]) -> Fields:
    parts = tuple(part for f in fields for part in f.parts)
    return Fields(parts, np.sum([f.lengths for f in fields], axis=0))


def _feature(kind: int, packed: pa.LargeBinaryArray, groups: np.ndarray) -> Fields:
    """Return `tf.train.Feature`s of a packed list kind; an empty list has no value field."""
    values = Fields.of(packed)
    return values.delimited(1, present=np.diff(groups) > 0).delimited(kind)


def int64_lists(values: np.ndarray, groups: np.ndarray) -> Fields:
    """Return one `tf.train.Feature` (int64_list) per group of `values`.

    Group i holds values[groups[i]:groups[i + 1]] (`groups`: len(features) + 1 increasing
    indexes, the first 0 and the last len(values)), packed as varints.
    """
    return _feature(INT64S, _grouped(_varints(values), groups), groups)


def float_lists(values: np.ndarray, groups: np.ndarray) -> Fields:
    """Return one `tf.train.Feature` (float_list) per group of `values`, packed float32 LE."""
    data = np.ascontiguousarray(values, dtype="<f4").view(np.uint8)
    return _feature(FLOATS, _column(data, np.diff(groups) * 4), groups)


def bytes_lists(values: pa.Array, groups: np.ndarray) -> Fields:
    """Return one `tf.train.Feature` (bytes_list) per group of `values` (binary or UTF-8)."""
    if values.null_count:
        raise ValueError(f"a bytes feature has {values.null_count} null value(s)")
    items = Fields.of(values.cast(_BINARY)).delimited(1).joined()
    return Fields.of(_grouped(items, groups)).delimited(BYTES)


def examples(features: Mapping[str, Fields]) -> pa.LargeBinaryArray:
    """Return serialized `tf.train.Example`s, one per row of the `features` columns.

    Map entries are written in the byte order of their keys (protobuf's deterministic order).
    """
    entries = [
        features[key].delimited(2).after(_field(1, key.encode())).delimited(1)
        for key in sorted(features, key=str.encode)
    ]
    return _concat(entries).delimited(1).joined()


def _field(number: int, payload: bytes) -> bytes:
    """Return one length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    return _column_bytes(_varints(np.array([value], dtype=np.int64)))


def _column_bytes(column: pa.LargeBinaryArray) -> bytes:
    """Return a column's values one after another (one copy of its span of the data buffer)."""
    offsets = _offsets(column)
    return memoryview(column.buffers()[2])[offsets[0] : offsets[-1]].tobytes()


def _masked_crcs(crcs: np.ndarray) -> np.ndarray:
    crcs = crcs.astype(np.uint32)
    return (((crcs >> np.uint32(15)) | (crcs << np.uint32(17))) + np.uint32(0xA282EAD8)).astype(
        "<u4"
    )


def _masked_crc(data: bytes) -> bytes:
    return _masked_crcs(np.array([crc32c.crc32c(data)])).tobytes()


def framed(records: pa.LargeBinaryArray) -> bytes:
    """Return `records` framed as TensorFlow's TFRecord writer frames them, one after another.

    A record is its length (uint64 LE), the length's masked CRC-32C, the data, and the data's
    masked CRC-32C.
    """
    offsets = _offsets(records)
    lengths = np.diff(offsets).astype("<u8")
    data = memoryview(records.buffers()[2])
    heads = lengths.view(np.uint8).reshape(-1, 8)
    length_crcs = np.fromiter(
        (crc32c.crc32c(row.tobytes()) for row in heads), dtype=np.uint32, count=len(lengths)
    )
    record_crcs = np.fromiter(
        (crc32c.crc32c(data[a:b]) for a, b in itertools.pairwise(offsets)),
        dtype=np.uint32,
        count=len(lengths),
    )
    heads = np.hstack([heads, _masked_crcs(length_crcs).view(np.uint8).reshape(-1, 4)])
    tails = _masked_crcs(record_crcs).view(np.uint8)
    joined = pc.binary_join_element_wise(
        _column(heads.reshape(-1), np.full(len(lengths), 12)),
        records,
        _column(tails, np.full(len(lengths), 4)),
        _EMPTY,
    )
    return _column_bytes(joined)


def read_records(path: Path) -> list[bytes]:
    """Return the records of a TFRecord file, checking every framing CRC."""
    data, offset, records = path.read_bytes(), 0, []
    while offset < len(data):
        length = data[offset : offset + 8]
        (size,) = struct.unpack("<Q", length)
        record = data[offset + 12 : offset + 12 + size]
        crcs = data[offset + 8 : offset + 12], data[offset + 12 + size : offset + 16 + size]
        if crcs != (_masked_crc(length), _masked_crc(record)):
            raise ValueError(f"{path}: bad CRC in the record at byte {offset}")
        records.append(record)
        offset += 16 + size
    return records


def _read_varint(data: bytes, offset: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[offset]
        value |= (byte & 0x7F) << shift
        offset, shift = offset + 1, shift + 7
        if byte < 0x80:
            return value, offset


def _fields(data: bytes) -> list[tuple[int, bytes]]:
    """Parse a message of length-delimited fields into (field number, payload) pairs."""
    out, offset = [], 0
    while offset < len(data):
        tag, offset = _read_varint(data, offset)
        size, offset = _read_varint(data, offset)
        out.append((tag >> 3, data[offset : offset + size]))
        offset += size
    return out


def _values(kind: int, payload: bytes) -> list[Value]:
    fields = _fields(payload)
    if kind == BYTES:
        return [value for _, value in fields]
    packed = b"".join(value for _, value in fields)
    if kind == FLOATS:
        return list(struct.unpack(f"<{len(packed) // 4}f", packed))
    values: list[Value] = []
    offset = 0
    while offset < len(packed):
        value, offset = _read_varint(packed, offset)
        values.append(value - (1 << 64) if value >= 1 << 63 else value)
    return values


def parse_example(record: bytes) -> dict[str, list[Value]]:
    """Return a serialized Example (as `example` writes them) as {key: list of values}."""
    parsed = {}
    for _, entry in _fields(_fields(record)[0][1]) if record else []:
        parts = dict(_fields(entry))
        kind, payload = _fields(parts[2])[0]
        parsed[parts[1].decode()] = _values(kind, payload)
    return parsed
