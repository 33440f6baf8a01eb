"""Escalations contracts: the raw interaction record and the canonical example row.

See docs/sources/escalations.md#raw-contract.

Raw input is JSONL, one escalation per line: SAM's (the small model's) attempt at a query and
Claude's (the large model's) answer. `Interaction` is the source of truth for what a valid line is;
the ingest hot path checks the same fields, types and ranges in DuckDB with a statement generated
from its fields (`lib.contract_sql`), and `tests/unit/escalations/test_contract.py` proves the two
agree.

Ids. A record's `id` is the producer's `id` when present. Otherwise it is the seed's
`SHA256(query + timestamp)[:16]`: the first 16 hex digits of SHA-256 over the UTF-8 bytes of the
query immediately followed (no separator) by the timestamp text, where the timestamp text is
the `timestamp` field exactly as written when the record has one, else `str(float(created_at))`
(Python's shortest round-trip float text, e.g. `1795076100.0`, `1795076100.25`; DuckDB's DOUBLE →
VARCHAR cast gives the same text). Two records with the same id in one partition are the same
escalation logged twice: the first by (source file, line) is kept, the others are quarantined as
`duplicate_id`.

Time. `created_at` (unix seconds) is the event time when present, else `timestamp` (ISO 8601,
`YYYY-MM-DD[T ]HH:MM[:SS[.ffffff]]` with an optional `Z` or `±HH[:]MM` offset; no offset means UTC).
Both must be valid when both are given.

Classification (`domain`, `subdomain`, `task_type`, `complexity`, `reasoning_type`) may be
pre-labelled by the producer as top-level fields; labels win over distill's heuristics.
Any other field is kept, as JSON, in the bronze `extra` column.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Annotated, Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from distill_assets.lib.contract_sql import TERSE, parse_statement
from distill_assets.lib.json_fields import Choice, Integer, IsoSeconds, Number, OneOf, Text
from distill_assets.lib.rawcontract import RawContract
from distill_assets.lib.seen import Dedup

# an id (given, or derived from the query and time) is unique within a partition: the first
# record in (source_file, line_no) order is kept, later ones are quarantined
DEDUP = Dedup(reason="duplicate_id", detail="id {key} first seen at {first}")

ID_HEX_DIGITS = 16
# Largest accepted `created_at`: 9999-12-31T23:59:59Z (catches milliseconds sent as seconds).
MAX_UNIX_SECONDS = 253_402_300_800
# ASCII digits only ([0-9], not \d) so Python `re` and DuckDB's RE2 accept the same strings.
_ISO_OFFSET = r"(?:Z|[+-][0-9]{2}:?[0-9]{2})"
ISO_OFFSET_PATTERN = _ISO_OFFSET + "$"
ISO_TIMESTAMP_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?"
    + _ISO_OFFSET
    + "?$"
)

Domain = Literal["code", "reasoning", "creative", "factual", "planning", "analysis"]
ReasoningType = Literal[
    "chain_of_thought", "tool_use", "correction", "direct", "multi_step", "meta_cognitive"
]
TrainingFormat = Literal["instruction", "preference", "cot", "correction"]


def derived_id(query: str, timestamp_text: str) -> str:
    """Return the seed's `SHA256(query + timestamp)[:16]` for one record."""
    digest = hashlib.sha256((query + timestamp_text).encode("utf-8")).hexdigest()
    return digest[:ID_HEX_DIGITS]


def parse_iso_timestamp(text: str) -> float:
    """Return unix seconds of an ISO 8601 timestamp in the accepted form (naive means UTC)."""
    if not re.fullmatch(ISO_TIMESTAMP_PATTERN, text):
        raise ValueError(f"not an ISO 8601 date-time: {text!r}")
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


class Interaction(BaseModel):
    """One raw escalation line (the interaction plus optional pre-labels).

    See docs/sources/escalations.md#raw-contract.
    """

    model_config = ConfigDict(extra="allow", strict=True)

    # the fields in the order they are checked: a record's quarantine reason is its first failing
    # field's `missing_<field>` or `invalid_<field>` (created_at and timestamp: `_timestamp`)
    query: Annotated[str, Text(blank="missing")] = Field(description="the user's query")
    claude_response: Annotated[str, Text(blank="missing")] = Field(
        description="Claude's full answer"
    )
    created_at: Annotated[float | None, Number(), OneOf("timestamp")] = Field(
        default=None, ge=0, lt=MAX_UNIX_SECONDS, description="unix seconds"
    )
    timestamp: Annotated[
        str | None, IsoSeconds(ISO_TIMESTAMP_PATTERN, ISO_OFFSET_PATTERN), OneOf("timestamp")
    ] = Field(default=None, description="ISO 8601 time, if no created_at")
    sam_confidence: Annotated[float | None, Number()] = Field(default=None, ge=0.0, le=1.0)
    id: Annotated[str | None, Text(blank="invalid")] = Field(
        default=None, description="producer id; else SHA256(query+timestamp)"
    )
    session_id: Annotated[str | None, Text()] = Field(
        default=None, description="groups queries of one session"
    )
    query_context: Annotated[str | None, Text()] = Field(
        default=None, description="conversation/project context"
    )
    sam_attempt: Annotated[str | None, Text()] = Field(
        default=None, description="SAM's answer (null on error)"
    )
    sam_reasoning: Annotated[str | None, Text()] = Field(
        default=None, description="SAM's chain of thought"
    )
    domain: Annotated[Domain | None, Choice()] = Field(
        default=None, description="pre-labelled domain"
    )
    subdomain: Annotated[str | None, Text()] = Field(
        default=None, description="pre-labelled subdomain"
    )
    task_type: Annotated[str | None, Text()] = Field(
        default=None, description="pre-labelled task type"
    )
    complexity: Annotated[int | None, Integer()] = Field(
        default=None, ge=1, le=10, description="pre-labelled 1-10"
    )
    reasoning_type: Annotated[ReasoningType | None, Choice()] = Field(
        default=None, description="pre-labelled type"
    )

    @field_validator("id", "query", "claude_response")
    @classmethod
    def _not_blank(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("timestamp")
    @classmethod
    def _iso(cls, value: str | None) -> str | None:
        if value is not None:
            parse_iso_timestamp(value)
        return value

    @model_validator(mode="after")
    def _has_time(self) -> Interaction:
        if self.created_at is None and self.timestamp is None:
            raise ValueError("needs created_at (unix seconds) or timestamp (ISO 8601)")
        return self

    @property
    def timestamp_text(self) -> str:
        """The timestamp text hashed into a derived id (see the module docstring)."""
        return self.timestamp if self.timestamp is not None else str(float(self.created_at or 0))

    @property
    def escalation_id(self) -> str:
        """The producer's id, else the seed's derived id."""
        return self.id if self.id is not None else derived_id(self.query, self.timestamp_text)

    @property
    def event_time(self) -> float:
        """Unix seconds: `created_at`, else the parsed `timestamp`."""
        if self.created_at is not None:
            return float(self.created_at)
        return parse_iso_timestamp(self.timestamp or "")


# Bronze `escalations/records`: one row per accepted raw line.
RECORD_SCHEMA = pl.Schema(
    {
        "source_file": pl.String(),
        "line_no": pl.Int64(),
        "utf8_replaced": pl.Boolean(),
        "id": pl.String(),
        "id_derived": pl.Boolean(),
        "session_id": pl.String(),
        "created_at": pl.Float64(),
        "timestamp": pl.String(),
        "query": pl.String(),
        "query_context": pl.String(),
        "sam_attempt": pl.String(),
        "sam_confidence": pl.Float64(),
        "sam_reasoning": pl.String(),
        "claude_response": pl.String(),
        "domain": pl.String(),
        "subdomain": pl.String(),
        "task_type": pl.String(),
        "complexity": pl.Int64(),
        "reasoning_type": pl.String(),
        "extra": pl.String(),
    }
)


class ReasoningStep(BaseModel):
    """One numbered step of Claude's answer: its verb, header text and the explanation after it."""

    step_num: int
    action: str | None = None
    content: str
    reasoning: str | None = None


class ToolUse(BaseModel):
    """A tool the answer uses (fence language or CLI name), described by the rules' tables."""

    tool: str
    purpose: str | None = None
    input_pattern: str | None = None
    output_handling: str | None = None


class SamError(BaseModel):
    """What SAM got wrong, typed by the rules' SAM error rule set."""

    error_type: str
    what_sam_said: str | None = None
    what_was_wrong: str | None = None
    correct_answer: str | None = None


class Corrections(BaseModel):
    """The seed's `corrections` object."""

    sam_errors: list[SamError]
    improvements: list[str]


class Principle(BaseModel):
    """A generalizable rule the answer states (rules: principles) or the legacy system stored."""

    principle: str
    context: str | None = None
    importance: float | None = None


class DistillationExample(BaseModel):
    """A row of `escalations/distillation_examples`: the seed's canonical table plus provenance."""

    id: str
    source: Literal["escalations"]
    source_ref: str = Field(description="<raw file>:<line>, or <db file>#<table>/<id>")
    session_id: str | None
    created_at: float
    query: str
    query_context: str | None
    sam_attempt: str | None
    sam_confidence: float | None = Field(ge=0.0, le=1.0)
    sam_reasoning: str | None
    claude_response: str
    reasoning_type: ReasoningType
    reasoning_steps: list[ReasoningStep]
    tool_usage: list[ToolUse]
    corrections: Corrections | None
    principles: list[Principle] | None
    domain: Domain
    subdomain: str | None
    task_type: str
    complexity: int = Field(ge=1, le=10)
    quality_score: float = Field(ge=0.0, le=1.0)
    quality_flags: list[str]
    human_reviewed: Literal[-1, 0, 1]
    reviewer_notes: str | None
    training_ready: Literal[0, 1]
    training_format: TrainingFormat
    export_count: int
    last_exported_at: float | None
    prelabelled: list[str] = Field(description="classification fields the producer labelled")
    detected_reasoning_type: ReasoningType
    indicator_hits: dict[str, int] = Field(description="matching patterns per indicator list")
    token_count: int
    query_overlap: float | None = Field(description="share of the query's terms the answer uses")
    answer_evidence: int = Field(description="points of answer structure (rules: answer-ness)")
    answer_rejection: str | None = Field(
        description="why the reply is not an answer (rules: ANSWER_REJECTIONS), or null"
    )
    source_file: str
    line_no: int


# The original SQLite schema, verbatim (docs/sources/escalations.md#distillation-database):
# `distilled/distillation.db` is written with exactly this, so the existing application reads it
# unchanged.
SEED_SQLITE_DDL = """
CREATE TABLE distillation_examples (
    id TEXT PRIMARY KEY,
    session_id TEXT,
    created_at REAL NOT NULL,
    query TEXT NOT NULL,
    query_context TEXT,
    sam_attempt TEXT,
    sam_confidence REAL,
    sam_reasoning TEXT,
    claude_response TEXT NOT NULL,
    reasoning_type TEXT NOT NULL,
    reasoning_steps TEXT,
    tool_usage TEXT,
    corrections TEXT,
    principles TEXT,
    domain TEXT NOT NULL,
    subdomain TEXT,
    task_type TEXT,
    complexity INTEGER,
    quality_score REAL,
    quality_flags TEXT,
    human_reviewed INTEGER DEFAULT 0,
    reviewer_notes TEXT,
    training_ready INTEGER DEFAULT 0,
    training_format TEXT,
    export_count INTEGER DEFAULT 0,
    last_exported_at REAL
);
CREATE INDEX idx_domain ON distillation_examples(domain);
CREATE INDEX idx_quality ON distillation_examples(quality_score);
CREATE INDEX idx_training_ready ON distillation_examples(training_ready);
CREATE INDEX idx_created ON distillation_examples(created_at);
CREATE INDEX idx_human_reviewed ON distillation_examples(human_reviewed);
"""
SEED_SQLITE_COLUMNS: tuple[str, ...] = (
    "id", "session_id", "created_at", "query", "query_context", "sam_attempt", "sam_confidence",
    "sam_reasoning", "claude_response", "reasoning_type", "reasoning_steps", "tool_usage",
    "corrections", "principles", "domain", "subdomain", "task_type", "complexity",
    "quality_score", "quality_flags", "human_reviewed", "reviewer_notes", "training_ready",
    "training_format", "export_count", "last_exported_at",
)  # fmt: skip
SEED_SQLITE_JSON_COLUMNS: tuple[str, ...] = (
    "reasoning_steps",
    "tool_usage",
    "corrections",
    "principles",
    "quality_flags",
)


def _parse(fast: bool = False) -> str:
    """Return the parse statement of this contract (`fast`: its fast parse)."""
    return parse_statement(
        Interaction,
        "escalations",
        tuple(RECORD_SCHEMA.names()),
        key=("id",),
        details=TERSE,
        derived=(
            (
                "id",
                "coalesce({id.value}, left(sha256({query.value} || "
                "coalesce({timestamp.output}, CAST({created_at.value} AS VARCHAR))), 16))",
            ),
            ("id_derived", "{id.value} IS NULL"),
            ("created_at", "coalesce({created_at.value}, {timestamp.value})"),
        ),
        extra_default=None,
        fast=fast,
    )


# the bronze ingest of this contract (defs.ingest.ingest_partition): its parse is generated from
# `Interaction`; bronze adds the record's id (the producer's, else the seed's derived id, as
# `derived_id` computes it: DuckDB's DOUBLE → VARCHAR cast gives Python's float text) and its
# event time (`created_at`, else the parsed `timestamp`)
RAW = RawContract(
    source="escalations",
    table="records",
    parse=_parse,
    fast_parse=lambda: _parse(fast=True),
    dedup=DEDUP,
)
