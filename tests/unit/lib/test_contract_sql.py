"""The parse statement generated from a pydantic contract: reasons, values, bronze columns."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Literal

import pyarrow as pa
import pytest
from pydantic import BaseModel, Field

from distill_assets.lib.contract_sql import TERSE, field_reasons, parse_statement
from distill_assets.lib.json_fields import (
    Choice,
    Integer,
    IsoSeconds,
    Number,
    OneOf,
    Text,
    TextList,
    TextOrInteger,
    UnixOrIsoSeconds,
)
from distill_assets.lib.payload_sql import PayloadUnion, payload_reasons
from distill_assets.lib.sql import connect


class Colour(StrEnum):
    """A test enum."""

    RED = "RED"
    BLUE = "BLUE"


class Sample(BaseModel):
    """A contract with one field of every kind."""

    key: Annotated[str, TextOrInteger()]
    at: Annotated[float, UnixOrIsoSeconds(100.0, "Z$")]
    count: Annotated[int, Integer()] = Field(ge=2)
    colour: Annotated[Colour, Choice(upper=True)]
    body: Annotated[str, Text(blank="missing")]
    note: Annotated[str | None, Text(trim=True, blank="none")] = None
    tags: Annotated[list[str], TextList()] = Field(default_factory=list)


BRONZE = ("id", "source", "key", "at", "count", "colour", "body", "note", "tags", "extra")
GOOD = {"key": " k1 ", "at": 5, "count": 2, "colour": " red ", "body": "b"}


class Timed(BaseModel):
    """A contract with a group of which one field is required, and terse details."""

    name: Annotated[str | None, Text(blank="invalid")] = None
    seconds: Annotated[float | None, Number(), OneOf("time")] = Field(default=None, ge=0, lt=10)
    iso: Annotated[
        str | None, IsoSeconds(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]+Z?$", "Z$"), OneOf("time")
    ] = None
    size: Annotated[Literal["s", "m"] | None, Choice()] = None


TIMED = parse_statement(
    Timed,
    "timed",
    ("name", "stamp", "seconds", "iso", "size", "extra"),
    key=("stamp",),
    details=TERSE,
    derived=(("stamp", "coalesce({seconds.value}, {iso.value})"),),
    extra_default=None,
)


def parse(*records: object, statement: str | None = None) -> list[dict[str, object]]:
    """Run a generated statement on one JSON line per record (a str is the line itself)."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    raw = pa.table(
        {
            "source_file": ["a.jsonl"] * len(lines),
            "line_no": list(range(1, len(lines) + 1)),
            "line": lines,
            "utf8_replaced": [False] * len(lines),
            "is_last_line": [False] * (len(lines) - 1) + [True],
        }
    )
    con = connect(private=True)
    con.execute("SET preserve_insertion_order = true")
    con.register("raw_lines", raw)
    statement = statement or parse_statement(Sample, "test", BRONZE, key=("key", "count"))
    rows = con.execute(
        statement, {"extra_sequence": [], "extra_structure": '{"-":"JSON"}'}
    ).to_arrow_table()
    con.close()
    return rows.to_pylist()


def test_reasons_are_tested_field_by_field_in_model_order() -> None:
    assert field_reasons(Sample) == (
        "missing_key",
        "invalid_key",
        "missing_at",
        "invalid_at",
        "missing_count",
        "invalid_count",
        "missing_colour",
        "invalid_colour",
        "missing_body",
        "invalid_body",
        "invalid_note",
        "invalid_tags",
    )


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"key": None}, "missing_key"),
        ({"key": "  "}, "missing_key"),
        ({"key": True}, "invalid_key"),
        ({"at": None}, "missing_at"),
        ({"at": 100}, "invalid_at"),
        ({"at": "soon"}, "invalid_at"),
        ({"count": 1}, "invalid_count"),
        ({"count": "2"}, "invalid_count"),
        ({"colour": "green"}, "invalid_colour"),
        ({"body": " "}, "missing_body"),
        ({"body": 3}, "invalid_body"),
        ({"note": ["x"]}, "invalid_note"),
        ({"tags": ["a", 1]}, "invalid_tags"),
        # the first failing field wins
        ({"count": 0, "body": 3}, "invalid_count"),
    ],
)
def test_each_field_gets_its_exact_reason(change: dict[str, object], reason: str) -> None:
    record = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    (row,) = parse(record, GOOD)[:1]
    assert row["quarantine_reason"] == reason
    assert row["dedup_key"] is None


def test_line_reasons_and_details() -> None:
    rows = parse("[1]", "{", {**GOOD, "count": 7.5}, "{")
    assert [r["quarantine_reason"] for r in rows] == [
        "not_an_object",
        "invalid_json",
        "invalid_count",
        "torn_last_line",
    ]
    assert rows[0]["quarantine_detail"] == "JSON array where an object was expected"
    assert rows[2]["quarantine_detail"] == "count = 7.5"


def test_accepted_values_are_normalised_and_in_bronze_order() -> None:
    (row,) = parse({**GOOD, "note": "  ", "tags": " one ", "more": 1})
    assert list(row) == [
        *BRONZE,
        "extra_keys",
        "quarantine_reason",
        "quarantine_detail",
        "dedup_key",
    ]
    assert row["quarantine_reason"] is None
    assert (row["source"], row["key"], row["at"], row["count"]) == ("test", "k1", 5.0, 2)
    assert (row["colour"], row["body"], row["note"], row["tags"]) == ("RED", "b", None, ["one"])
    assert (row["extra"], row["extra_keys"]) == ('{"more":1}', ["more"])
    assert row["dedup_key"] == "k1\x1f2"


def test_a_field_without_a_json_kind_is_refused() -> None:
    class Bare(BaseModel):
        name: str

    with pytest.raises(TypeError, match=r"Bare\.name needs exactly one JsonField"):
        parse_statement(Bare, "test", ("name",))


def test_a_group_is_checked_as_one_and_terse_details_show_the_first_bad_member() -> None:
    assert field_reasons(Timed) == ("invalid_name", "missing_time", "invalid_time", "invalid_size")
    rows = parse(
        {"name": " "},
        {"seconds": 1},
        {"seconds": 10, "iso": "later"},
        {"seconds": 1, "iso": "later"},
        {"iso": "2026-11-19T08:15:00Z", "size": "xl"},
        {"iso": "2026-11-19T08:15:00", "size": "m", "more": [1]},
        "[1]",
        statement=TIMED,
    )
    assert [(r["quarantine_reason"], r["quarantine_detail"]) for r in rows] == [
        ("invalid_name", 'name = " "'),
        (None, None),
        ("invalid_time", "seconds = 10"),
        ("invalid_time", 'iso = "later"'),
        ("invalid_size", 'size = "xl"'),
        (None, None),
        ("not_an_object", "json array"),
    ]
    assert (rows[1]["stamp"], rows[1]["extra"], rows[1]["dedup_key"]) == (1.0, None, 1.0)
    assert (rows[5]["stamp"], rows[5]["iso"], rows[5]["size"]) == (
        1795076100.0,
        "2026-11-19T08:15:00",
        "m",
    )
    assert rows[5]["extra"] == '{"more":[1]}'
    (missing,) = parse({"size": "s"}, statement=TIMED)
    assert (missing["quarantine_reason"], missing["quarantine_detail"]) == ("missing_time", None)


class Inner(BaseModel):
    """A nested payload model."""

    size: Annotated[int, Field(ge=0)]


class Item(BaseModel):
    """A list item: required strings only."""

    code: str


class Shape(BaseModel):
    """A payload model with one field of every derived kind."""

    name: str
    inner: Inner
    items: list[Item] = Field(min_length=2)
    tags: list[str] = Field(default_factory=list)
    scores: dict[str, float]
    level: Literal["low", "high"] | None = None
    share: float = Field(ge=0, le=1)
    on: bool = False


def test_payload_reasons_are_derived_from_the_field_types_in_order() -> None:
    union = PayloadUnion(key="type", field="payload", models=(("shape", Shape),))
    assert payload_reasons(union) == {
        "shape": (
            "missing_name",
            "invalid_name",
            "missing_inner",
            "invalid_inner",
            "missing_inner_size",
            "invalid_inner_size",
            "missing_items",
            "invalid_items",
            "invalid_tags",
            "missing_scores",
            "invalid_scores",
            "invalid_level",
            "missing_share",
            "invalid_share",
            "invalid_on",
        )
    }


def test_a_payload_type_the_generator_does_not_know_is_refused() -> None:
    class Odd(BaseModel):
        tags: set[str]

    union = PayloadUnion(key="type", field="payload", models=(("odd", Odd),))
    with pytest.raises(TypeError, match=r"\$\.tags: unsupported type"):
        payload_reasons(union)
