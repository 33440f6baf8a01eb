"""tf.train.Example encoding and TFRecord framing without TensorFlow (`lib/tfexample.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from distill_assets.lib import tfexample


def test_examples_round_trip_every_kind_with_exact_values() -> None:
    record = tfexample.example(
        {
            "z/ints": tfexample.feature(tfexample.INT64S, [-1, 0, 300, 2**40]),
            "a/floats": tfexample.feature(tfexample.FLOATS, [0.5, -2.0]),
            "m/bytes": tfexample.feature(tfexample.BYTES, [b"", "é".encode()]),
            "empty": tfexample.feature(tfexample.FLOATS, []),
        }
    )
    assert tfexample.parse_example(record) == {
        "a/floats": [0.5, -2.0],
        "empty": [],
        "m/bytes": [b"", "é".encode()],
        "z/ints": [-1, 0, 300, 2**40],
    }


def test_the_same_features_give_the_same_bytes_in_any_order() -> None:
    one = tfexample.feature(tfexample.INT64S, [1])
    two = tfexample.feature(tfexample.BYTES, [b"x"])
    assert tfexample.example({"b": one, "a": two}) == tfexample.example({"a": two, "b": one})
    # the wire bytes of Feature{int64_list{value: [1]}}: field 3, length 3, packed field 1
    assert one == bytes([0x1A, 0x03, 0x0A, 0x01, 0x01])


def test_framing_is_tensorflows_and_a_flipped_byte_is_caught(tmp_path: Path) -> None:
    record = tfexample.example({"x": tfexample.feature(tfexample.INT64S, [7])})
    framed = tfexample.frame(record)
    assert len(framed) == 8 + 4 + len(record) + 4
    assert framed[:8] == len(record).to_bytes(8, "little")
    path = tmp_path / "one.tfrecord"
    path.write_bytes(framed * 2)
    assert tfexample.read_records(path) == [record, record]
    path.write_bytes(framed[:-5] + bytes([framed[-5] ^ 1]) + framed[-4:])
    with pytest.raises(ValueError, match="bad CRC"):
        tfexample.read_records(path)
