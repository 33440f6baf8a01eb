"""`tf.train.Example` records in TFRecord files, without TensorFlow or generated protobuf classes.

Encoding follows protobuf's wire format for `tensorflow/core/example/{example,feature}.proto`:
Example.features = 1; Features.feature = 1, a map whose entries hold key = 1 and value = 2;
Feature.bytes_list = 1 | float_list = 2 | int64_list = 3, each list's `value` = 1 (numbers packed:
float32 little-endian, int64 as varints, negatives in ten bytes). Map entries are written in the
byte order of their keys, as protobuf's deterministic serialization does, so the same features
always give the same bytes. Records are framed as TensorFlow's TFRecord writer frames them: length
(uint64 LE), its masked CRC-32C, the data, the data's masked CRC-32C.

No generated classes on purpose: packages that ship their own `example_pb2` (e.g. `tfrecord`)
register `tensorflow.BytesList` & co. in protobuf's global descriptor pool, and a process that
also imports TensorFlow then fails with "duplicate symbol 'tensorflow.BytesList'".
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from pathlib import Path

import crc32c

BYTES, FLOATS, INT64S = 1, 2, 3  # the Feature field of each list kind
Value = bytes | float | int


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """Return a length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def feature(kind: int, values: list[Value]) -> bytes:
    """Return a serialized `tf.train.Feature` of `kind` (BYTES, FLOATS, INT64S) holding `values`."""
    if kind == BYTES:
        return _field(BYTES, b"".join(_field(1, value) for value in values))  # type: ignore[arg-type]
    if kind == FLOATS:
        packed = struct.pack(f"<{len(values)}f", *values)
    else:
        packed = b"".join(_varint(int(value)) for value in values)
    return _field(kind, _field(1, packed) if values else b"")


def example(features: Mapping[str, bytes]) -> bytes:
    """Return a serialized `tf.train.Example` of serialized features, keys in byte order."""
    entries = b"".join(
        _field(1, _field(1, key.encode()) + _field(2, features[key]))
        for key in sorted(features, key=str.encode)
    )
    return _field(1, entries)


def _masked_crc(data: bytes) -> bytes:
    crc = crc32c.crc32c(data)
    return struct.pack("<I", (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF)


def frame(record: bytes) -> bytes:
    """Frame a record as TensorFlow's TFRecord writer does (length, masked CRC-32Cs)."""
    length = struct.pack("<Q", len(record))
    return length + _masked_crc(length) + record + _masked_crc(record)


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
