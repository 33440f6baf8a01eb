"""bench._typed_readers: what each typed reader does with a bad line, and the projections.

The behaviour table is what `docs/performance.md#fast-path` relies on to say which quarantine
reasons a typed reader misses; it is asserted cell by cell, so an engine upgrade that changes a
reader's behaviour shows here.
"""

import pytest

from bench import _typed_readers as typed
from distill_assets.contracts import escalations, revisions, telemetry

# case: (read_json native, JSON, JSON with ignore_errors, json_transform_strict MAP,
# pyarrow.json, polars)
EXPECTED = {
    "clean": (
        "(1, 'x')",
        "('1', '\"x\"')",
        "('1', '\"x\"')",
        "{'n': '1', 's': '\"x\"'}",
        "(1, 'x')",
        "(1, 'x')",
    ),
    "string for an integer": (
        "(5, 'x')",
        "('\"5\"', '\"x\"')",
        "('\"5\"', '\"x\"')",
        "{'n': '\"5\"', 's': '\"x\"'}",
        "error",
        "error",
    ),
    "number for a string": (
        "(1, '5')",
        "('1', '5')",
        "('1', '5')",
        "{'n': '1', 's': '5'}",
        "error",
        "(1, '5')",
    ),
    "2.0 for an integer": (
        "(2, 'x')",
        "('2.0', '\"x\"')",
        "('2.0', '\"x\"')",
        "{'n': '2.0', 's': '\"x\"'}",
        "error",
        "error",
    ),
    "true for an integer": (
        "(1, 'x')",
        "('true', '\"x\"')",
        "('true', '\"x\"')",
        "{'n': 'true', 's': '\"x\"'}",
        "error",
        "error",
    ),
    "object for a string": (
        "(1, '{\"k\":1}')",
        "('1', '{\"k\":1}')",
        "('1', '{\"k\":1}')",
        "{'n': '1', 's': '{\"k\":1}'}",
        "error",
        "(1, '{\"k\": 1}')",
    ),
    "field absent": (
        "(None, 'x')",
        "(None, '\"x\"')",
        "(None, '\"x\"')",
        "{'s': '\"x\"'}",
        "(None, 'x')",
        "(None, 'x')",
    ),
    "repeated key": ("error", "error", "('1', '\"x\"')", "NULL", "error", "(1, 'x')"),
    "repeated nested key": (
        "(1, 'x')",
        "('1', '\"x\"')",
        "('1', '\"x\"')",
        "{'n': '1', 's': '\"x\"', 'o': '{\"k\":1,\"k\":2}'}",
        "error",
        "(1, 'x')",
    ),
    "unknown field": (
        "(1, 'x')",
        "('1', '\"x\"')",
        "('1', '\"x\"')",
        "{'n': '1', 's': '\"x\"', 'z': '3'}",
        "error",
        "(1, 'x')",
    ),
    "not an object": ("error", "error", "NULL", "NULL", "error", "error"),
    "invalid JSON": ("error", "error", "NULL", "NULL", "error", "error"),
}


def test_each_reader_on_each_kind_of_bad_line() -> None:
    got = {row["case"]: tuple(row[name] for name in typed.READERS) for row in typed.behaviour()}
    assert got == EXPECTED


def test_an_arrow_schema_exists_only_for_escalations() -> None:
    schema = typed.arrow_schema("escalations", ["sam_model"])
    assert not isinstance(schema, str)
    assert schema.field("created_at").type == "double"
    assert schema.field("complexity").type == "int64"
    assert schema.names[-1] == "sam_model"
    assert typed.arrow_schema("revisions", []) == "turn_id (TextOrInteger) has no single Arrow type"
    assert (
        typed.arrow_schema("telemetry", [])
        == "server_ts (UnixOrIsoSeconds) has no single Arrow type"
    )


@pytest.mark.parametrize("raw", [escalations.RAW, revisions.RAW, telemetry.RAW])
def test_the_variants_remove_exactly_the_repeated_key_tests(raw) -> None:
    fast = raw.fast_parse()
    found = typed.variants(raw.source, fast)
    top = "len(keys) <> len(list_distinct(keys))"
    assert found[typed.FAST_PARSE] == fast
    assert top in fast
    assert top not in found[typed.NO_TOP]
    assert len(found[typed.NO_TOP]) == len(fast) - len(top + " OR ")
    assert "has_nested_duplicate_key" not in found[typed.NO_DUPLICATES]
    assert found[typed.PARSES].endswith("FROM parsed")
    assert "typed AS (" not in found[typed.PARSES]


def test_projections_add_the_measured_parts_per_repeat() -> None:
    cpu = {
        "COPY": [1.0],
        typed.READER: [0.1],
        typed.SINK: [0.3],
        typed.FAST_PARSE: [3.0],
        typed.PARSES: [0.6],
        typed.NO_TOP: [2.5],
        typed.IGNORING: [0.5],
        typed.KEYS: [0.2],
        typed._pieces(1_000): [0.7],
        typed._failed(1_000): [0.4],
        typed._pieces(10_000): [0.4],
        typed._failed(10_000): [1.5],
    }
    out = typed.projected(cpu, {1_000: 0.05, 10_000: 0.3})
    # read + keys + (fast − parses) + reader + sink
    assert out[typed.PER_LINE] == pytest.approx([0.5 + 0.2 + 2.4 + 0.4])
    # pieces + clean share × (keys + no_top − parses) + failing pieces' parse + reader + sink
    assert out[typed._per_piece(1_000)] == pytest.approx([0.7 + 0.95 * 2.1 + 0.4 + 0.4])
    assert out[typed._per_piece(10_000)] == pytest.approx([0.4 + 0.7 * 2.1 + 1.5 + 0.4])
