"""tf.train.Example encoding and TFRecord framing without TensorFlow (`lib/tfexample.py`)."""

from __future__ import annotations

from pathlib import Path

import crc32c
import numpy as np
import pyarrow as pa
import pytest

from distill_assets.lib import tfexample


def _one(kind: str, values: list) -> tfexample.Fields:
    """One feature of `values` (a single example's list)."""
    groups = np.array([0, len(values)])
    if kind == "bytes":
        return tfexample.bytes_lists(pa.array(values, pa.binary()), groups)
    if kind == "floats":
        return tfexample.float_lists(np.array(values, dtype=np.float64), groups)
    return tfexample.int64_lists(np.array(values, dtype=np.int64), groups)


def test_examples_round_trip_every_kind_with_exact_values() -> None:
    records = tfexample.examples(
        {
            "z/ints": _one("ints", [-1, 0, 300, 2**40, -(2**63), 2**63 - 1]),
            "a/floats": _one("floats", [0.5, -2.0]),
            "m/bytes": _one("bytes", [b"", "é".encode()]),
            "empty": _one("floats", []),
        }
    )
    assert tfexample.parse_example(records[0].as_py()) == {
        "a/floats": [0.5, -2.0],
        "empty": [],
        "m/bytes": [b"", "é".encode()],
        "z/ints": [-1, 0, 300, 2**40, -(2**63), 2**63 - 1],
    }


def test_a_column_encodes_each_rows_list_and_empty_lists_have_no_value_field() -> None:
    groups = np.array([0, 2, 2, 5])
    ints = tfexample.int64_lists(np.array([1, 2, 3, 4, 5]), groups)
    assert ints.joined().to_pylist() == [
        bytes([0x1A, 0x04, 0x0A, 0x02, 0x01, 0x02]),
        bytes([0x1A, 0x00]),
        bytes([0x1A, 0x05, 0x0A, 0x03, 0x03, 0x04, 0x05]),
    ]
    texts = tfexample.bytes_lists(pa.array(["a", "", "bc"]), np.array([0, 0, 3]))
    assert texts.joined().to_pylist() == [
        bytes([0x0A, 0x00]),
        bytes([0x0A, 0x09, 0x0A, 0x01]) + b"a" + bytes([0x0A, 0x00, 0x0A, 0x02]) + b"bc",
    ]
    with pytest.raises(ValueError, match="1 null value"):
        tfexample.bytes_lists(pa.array(["a", None]), np.array([0, 2]))


def test_varints_take_one_to_ten_bytes_as_protobuf_writes_them() -> None:
    values = [0, 127, 128, 16_383, 16_384, 2**35, 2**63 - 1, -1]
    expected = [
        b"\x00", b"\x7f", b"\x80\x01", b"\xff\x7f", b"\x80\x80\x01", b"\x80\x80\x80\x80\x80\x01",
        b"\xff" * 8 + b"\x7f", b"\xff" * 9 + b"\x01",
    ]  # fmt: skip
    encoded = tfexample.int64_lists(np.array(values), np.arange(len(values) + 1))
    # Feature{int64_list{value: [v]}}: field 3, length, packed field 1, length, the varint
    assert [e[4:] for e in encoded.joined().to_pylist()] == expected


def test_the_same_features_give_the_same_bytes_in_any_order() -> None:
    one = _one("ints", [1])
    two = _one("bytes", [b"x"])
    assert tfexample.examples({"b": one, "a": two}) == tfexample.examples({"a": two, "b": one})
    # the wire bytes of Feature{int64_list{value: [1]}}: field 3, length 3, packed field 1
    assert one.joined()[0].as_py() == bytes([0x1A, 0x03, 0x0A, 0x01, 0x01])


def test_framing_is_tensorflows_and_a_flipped_byte_is_caught(tmp_path: Path) -> None:
    records = tfexample.examples({"x": _one("ints", [7])})
    record = records[0].as_py()
    framed = tfexample.framed(records)
    assert len(framed) == 8 + 4 + len(record) + 4
    assert framed[:8] == len(record).to_bytes(8, "little")
    # the masked CRC-32C of the length, as TensorFlow's TFRecord writer computes it
    crc = crc32c.crc32c(framed[:8])
    masked = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    assert framed[8:12] == masked.to_bytes(4, "little")
    path = tmp_path / "one.tfrecord"
    path.write_bytes(tfexample.framed(pa.concat_arrays([records, records])))
    assert tfexample.read_records(path) == [record, record]
    path.write_bytes(framed[:-5] + bytes([framed[-5] ^ 1]) + framed[-4:])
    with pytest.raises(ValueError, match="bad CRC"):
        tfexample.read_records(path)
