"""Raw contract of the revisions source: one validator verdict per JSONL line.

See docs/sources/revisions.md#raw-contract.

The validation loop logs every verdict of its validator: a turn (`turn_id`) is synthesized, the
validator answers REVISE (with hints and a focus), the response is re-synthesized with the hints,
and so on until APPROVE or FAIL. `RevisionValidation` documents one such line and is the only
statement of the contract: the ingest's parse, which applies the same rules to whole partitions at
once, is generated from its fields (`lib.contract_sql`; tests hold the two to agreement), and
`VALIDATIONS_SCHEMA` is the bronze table that statement writes.

Normalisations (the same in the model and the SQL):
- `turn_id`: a non-blank string (trimmed) or an integer (kept as its decimal text).
- `ts`: unix seconds (a JSON number in [0, 4102444800), i.e. before 2100, so millisecond stamps are
  rejected), or an ISO-8601 string; a string without a UTC offset is read as UTC.
- `iteration`: a JSON integer ≥ 1 (the seed counts iterations from 1).
- `decision`: REVISE | APPROVE | FAIL, case-insensitive, stored upper-case.
- `response`: a string that is not blank (a blank or absent response is `missing_response`).
- `query`: optional string (the loop may log it on the first iteration only).
- `revision_hints`: a list of strings or a single string (one hint), or absent/null (no hints);
  hints are trimmed and blank ones dropped.
- `revision_focus`: optional string (e.g. `formatting`), trimmed, blank means none.
- any other field is kept, as a JSON object, in the bronze `extra` column.

A line failing one of these rules is quarantined with the first failing reason of
`QUARANTINE_REASONS` (`torn_last_line` instead of `invalid_json` on a file's last line). Two
accepted lines with the same (turn_id, iteration) in one partition: the first in (source_file,
line_no) order is kept, the other is quarantined as `duplicate_validation` (its detail says whether
it repeats or conflicts with the kept line).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from distill_assets.lib.contract_sql import LINE_REASONS, field_reasons, parse_statement
from distill_assets.lib.json_fields import (
    Choice,
    Integer,
    Text,
    TextList,
    TextOrInteger,
    UnixOrIsoSeconds,
)
from distill_assets.lib.rawcontract import RawContract
from distill_assets.lib.seen import Dedup

# one validation per (turn_id, iteration) within a partition: the first in (source_file, line_no)
# order is kept; a later one is a repeat (same line) or a conflict (another line)
DEDUP = Dedup(
    reason="duplicate_validation",
    detail="repeats {first} (first occurrence kept)",
    conflict_detail="conflicts with {first} (first occurrence kept)",
)

TS_UPPER_BOUND = 4_102_444_800.0  # 2100-01-01T00:00:00Z: larger numbers are milliseconds or junk
_ISO_OFFSET = re.compile(r"[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|z|[+-]\d{2}(:?\d{2})?)$")


class Decision(StrEnum):
    """The validator's verdict on one iteration."""

    REVISE = "REVISE"
    APPROVE = "APPROVE"
    FAIL = "FAIL"


class RevisionValidation(BaseModel):
    """One validator verdict of the revision loop (one JSONL line)."""

    model_config = ConfigDict(extra="allow", strict=True)

    # the fields in the order they are checked: a record's quarantine reason is its first
    # failing field's `missing_<field>` or `invalid_<field>` (lib.contract_sql)
    turn_id: Annotated[str, TextOrInteger()] = Field(
        description="the user turn the loop is answering; groups its iterations"
    )
    ts: Annotated[float, UnixOrIsoSeconds(TS_UPPER_BOUND, _ISO_OFFSET.pattern)] = Field(
        description="when the validator decided, unix seconds (UTC)"
    )
    iteration: Annotated[StrictInt, Integer()] = Field(
        ge=1, description="1 for the first synthesis, then +1 per retry"
    )
    decision: Annotated[Decision, Choice(upper=True)] = Field(description="REVISE | APPROVE | FAIL")
    response: Annotated[str, Text(blank="missing")] = Field(
        description="the synthesized response the validator judged"
    )
    query: Annotated[str | None, Text()] = Field(
        default=None, description="the user's query (prompt of the pair)"
    )
    revision_hints: Annotated[list[str], TextList()] = Field(
        default_factory=list, description="what the validator asked to change (REVISE)"
    )
    revision_focus: Annotated[str | None, Text(trim=True, blank="none")] = Field(
        default=None, description="the aspect the hints target, e.g. formatting, accuracy"
    )

    @field_validator("turn_id", mode="before")
    @classmethod
    def _turn_id(cls, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError("turn_id must be a string or an integer")
        text = str(value).strip()
        if not text:
            raise ValueError("turn_id is blank")
        return text

    @field_validator("ts", mode="before")
    @classmethod
    def _ts(cls, value: Any) -> float:
        if isinstance(value, str):
            parsed = datetime.fromisoformat(value.replace("z", "Z"))
            if parsed.tzinfo is None or not _ISO_OFFSET.search(value):
                parsed = parsed.replace(tzinfo=UTC)
            seconds = parsed.timestamp()
        elif isinstance(value, int | float) and not isinstance(value, bool):
            seconds = float(value)
        else:
            raise ValueError("ts must be unix seconds or an ISO-8601 string")
        if not math.isfinite(seconds) or not 0 <= seconds < TS_UPPER_BOUND:
            raise ValueError("ts is out of range (unix seconds before 2100)")
        return seconds

    @field_validator("decision", mode="before")
    @classmethod
    def _decision(cls, value: Any) -> str:
        if not isinstance(value, str):
            raise ValueError("decision must be a string")
        return value.strip().upper()

    @field_validator("response")
    @classmethod
    def _response(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("response is blank")
        return value

    @field_validator("revision_hints", mode="before")
    @classmethod
    def _hints(cls, value: Any) -> list[str]:
        if value is None:
            return []
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(h, str) for h in items):
            raise ValueError("revision_hints must be a string or a list of strings")
        return [h.strip() for h in items if h.strip()]

    @field_validator("revision_focus", mode="before")
    @classmethod
    def _focus(cls, value: Any) -> str | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError("revision_focus must be a string")
        return value.strip() or None


# The bronze table `revisions/validations`: one row per accepted raw line (the raw text itself is
# kept only for quarantined lines; `extra` holds an accepted line's unknown fields).
VALIDATIONS_SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "source": pl.String(),
        "source_ref": pl.String(),
        "source_file": pl.String(),
        "line_no": pl.Int64(),
        "utf8_replaced": pl.Boolean(),
        "turn_id": pl.String(),
        "ts": pl.Float64(),
        "iteration": pl.Int64(),
        "decision": pl.String(),
        "query": pl.String(),
        "response": pl.String(),
        "revision_hints": pl.List(pl.String()),
        "revision_focus": pl.String(),
        "extra": pl.String(),
    }
)

# every quarantine reason code the revisions ingest can give (one per raw line), in the order
# they are tested
QUARANTINE_REASONS: tuple[str, ...] = (
    *LINE_REASONS,
    *field_reasons(RevisionValidation),
    DEDUP.reason,
)


def _parse(fast: bool = False) -> str:
    """Return the parse statement of this contract (`fast`: its fast parse)."""
    return parse_statement(
        RevisionValidation,
        "revisions",
        tuple(VALIDATIONS_SCHEMA.names()),
        key=("turn_id", "iteration"),
        fast=fast,
    )


# the bronze ingest of this contract (defs.ingest.ingest_partition): its parse is generated from
# `RevisionValidation`; one validation per (turn_id, iteration) within a partition
RAW = RawContract(
    source="revisions",
    table="validations",
    parse=_parse,
    fast_parse=lambda: _parse(fast=True),
    dedup=DEDUP,
)
