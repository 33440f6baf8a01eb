"""Raw contract of agent traces: the JSONL the llm-repo-agent trace writer appends.

One event per line: `{"ts": float, "kind": str, "payload": {...}, "run_id": str, "meta": {...}}`.
`meta` repeats on every line of a run (`task_id`?, `repo`, `goal`, `test_cmd`, `model`,
`provider`). The original format (docs/sources/traces.md#raw-contract) calls the event kind
`type`; the writer says `kind`; both are accepted.
Several agents may append interleaved runs to one file. Step events carry `payload.t` and pair by
`(run_id, t)`; `run_start`, `tests`, `final` and `run_end` carry no `t`.

The models document the contract and validate single events (tests, the CLI's error messages);
the bulk validation is generated from the same models (`lib.contract_sql.extract_statement`:
each checked field carries its `lib.json_paths` kind, read by path so that a large line is
parsed once and nothing of it copied) and quarantines a line with one of `QUARANTINE_REASONS`,
the first failing in `TraceEvent`'s field order, then the step payloads' fields. Bronze keeps
each event verbatim (`event`, the JSON text of the line) beside the parsed envelope columns
(`sql/traces/select_event_columns.sql`), so unknown fields are kept as written; unknown kinds are
kept as is.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from distill_assets.lib.contract_sql import Details, extract_statement
from distill_assets.lib.json_paths import (
    PathFirstHas,
    PathInteger,
    PathNumber,
    PathObject,
    PathText,
)
from distill_assets.lib.payload_sql import PayloadUnion
from distill_assets.lib.rawcontract import RawContract
from distill_assets.lib.sql import load_sql

# kinds whose payload must carry an integer step number `t` (the events steps are built from)
STEP_KINDS: tuple[str, ...] = ("llm_request", "llm_action", "llm_parse_error", "tool_result")
QUARANTINE_REASONS: dict[str, str] = {
    "torn_last_line": "the last line of a file is not valid JSON (a write cut short)",
    "invalid_json": "a line that is not valid JSON",
    "not_an_object": "valid JSON that is not an object",
    "duplicate_key": "an object (at any depth) repeats a key",
    "missing_kind": "neither `kind` nor its alias `type`",
    "invalid_kind": "`kind`/`type` is not a non-empty string",
    "conflicting_kind": "`kind` and `type` both present and different",
    "missing_run_id": "no `run_id`",
    "invalid_run_id": "`run_id` is not a non-empty string",
    "missing_ts": "no `ts`",
    "invalid_ts": "`ts` is not a number",
    "missing_payload": "no `payload`",
    "invalid_payload": "`payload` is not an object",
    "invalid_meta": "`meta` is present but not an object",
    "missing_t": "a step event (`STEP_KINDS`) without an integer `payload.t`",
    "invalid_messages": "an `llm_request` whose `payload.messages` is not a non-empty array of"
    " messages",
}


class ToolFunction(BaseModel):
    """The function of an assistant tool call; `arguments` is a JSON string."""

    name: str
    arguments: str


class ToolCall(BaseModel):
    """One tool call of an assistant message (OpenAI chat-completions shape)."""

    id: str | None = None
    type: str = "function"
    function: ToolFunction


class ChatMessage(BaseModel):
    r"""A message of `llm_request.payload.messages`.

    `[0]` is the system prompt, `[1]` the user `GOAL:\n<goal>`; then assistant messages with
    `tool_calls` and no `content`, `tool` messages with `tool_call_id`, and after a reflection a
    system `DRIVER NOTE:\n…` message between an assistant tool call and its tool message.
    """

    model_config = ConfigDict(extra="allow")

    role: str = Field(description="system | user | assistant | tool")
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class TraceMeta(BaseModel):
    """Run metadata repeated on every line."""

    model_config = ConfigDict(extra="allow")

    task_id: str | None = None
    repo: str | None = None
    goal: str | None = None
    test_cmd: str | list[str] | None = None
    model: str | None = None
    provider: str | None = None


class ToolObservation(BaseModel):
    """`tool_result.payload.obs`: the tool's outcome (output capped by the agent)."""

    model_config = ConfigDict(extra="allow")

    ok: bool
    output: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)


class StepPayload(BaseModel):
    """Fields every step event's payload has."""

    model_config = ConfigDict(extra="allow")

    t: Annotated[
        int,
        PathInteger(reason="missing_t", detail="{key} || ' payload has no integer t'"),
    ]


class LlmRequestPayload(StepPayload):
    """`llm_request`: the whole chat sent to the model at step `t`."""

    messages: Annotated[
        list[ChatMessage],
        PathFirstHas(
            "role",
            reason="invalid_messages",
            detail="'messages is not a non-empty array of messages'",
        ),
    ]


class LlmActionPayload(StepPayload):
    """`llm_action`: the model's raw output and the parsed action.

    `action` is `{"type":"tool_call","name",…,"args":{…},"thought"?}` or
    `{"type":"final","summary",…,"changes":[…]}`.
    """

    raw: Any = None
    action: dict[str, Any]


class LlmParseErrorPayload(StepPayload):
    """`llm_parse_error`: the output at step `t` did not parse; the run stops there."""

    error: str
    raw: Any = None


class ToolResultPayload(StepPayload):
    """`tool_result`: the tool run for the action of step `t`."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    obs: ToolObservation


class TestOutcome(BaseModel):
    """A test run's outcome (`tests` payload, `run_end.state.last_test`)."""

    __test__ = False
    model_config = ConfigDict(extra="allow")

    ok: bool
    output: str = ""


class RunState(BaseModel):
    """`run_end.payload.state`: the run summary; `last_test` is null when no tests ran."""

    model_config = ConfigDict(extra="allow")

    last_test: TestOutcome | None = None
    files_touched: list[str] = Field(default_factory=list)


class RunEndPayload(BaseModel):
    """`run_end`: how the run ended."""

    model_config = ConfigDict(extra="allow")

    run_id: str | None = None
    summary: str | None = None
    state: RunState = Field(default_factory=RunState)


class TraceEvent(BaseModel):
    """One trace line. `type` is accepted as an alias of `kind`; extra fields are kept.

    The ingest checks the fields in this order. A payload with a `t` is an object, and so is a
    meta with `task_id`, `model` or `goal` (read anyway): only the others are typed.
    """

    model_config = ConfigDict(extra="allow")

    kind: Annotated[str, PathText(alias="type")] = Field(min_length=1)
    run_id: Annotated[str, PathText()] = Field(min_length=1)
    ts: Annotated[float, PathNumber()]
    payload: Annotated[dict[str, Any], PathObject(("t",))]
    meta: Annotated[
        TraceMeta, PathObject(("task_id", "model", "goal"), required=False, nullable=True)
    ] = Field(default_factory=TraceMeta)

    @model_validator(mode="before")
    @classmethod
    def _kind_alias(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "type" not in data:
            return data
        if "kind" in data and data["kind"] != data["type"]:
            raise ValueError("kind and type disagree")
        return {**{k: v for k, v in data.items() if k != "type"}, "kind": data["type"]}

    @model_validator(mode="after")
    def _step_has_t(self) -> TraceEvent:
        t = self.payload.get("t")
        if self.kind in STEP_KINDS and (not isinstance(t, int) or isinstance(t, bool)):
            raise ValueError("a step event needs an integer payload.t")
        messages = self.payload.get("messages")
        if self.kind == "llm_request" and not (
            isinstance(messages, list)
            and messages
            and isinstance(messages[0], dict)
            and "role" in messages[0]
        ):
            raise ValueError("llm_request.payload.messages must be a non-empty array of messages")
        return self


# the step events' payloads, by kind: their path fields (`t`, `messages`) are checked after the
# envelope's
STEP_PAYLOADS = PayloadUnion(
    key="kind",
    field="payload",
    models=(
        ("llm_request", LlmRequestPayload),
        ("llm_action", LlmActionPayload),
        ("llm_parse_error", LlmParseErrorPayload),
        ("tool_result", ToolResultPayload),
    ),
)
DETAILS = Details(
    invalid_json="'line is not valid JSON'",
    torn_last_line="'last line of the file is not valid JSON'",
    not_an_object="'top-level JSON value is ' || lower(json_type(line))",
    missing=None,
    invalid="",
)

BRONZE_COLUMNS: dict[str, str] = {
    "source_file": "raw file, relative to the raw root",
    "line_no": "1-based line number in the raw file",
    "ts": "event time (unix seconds)",
    "kind": "event kind (`kind`, else its alias `type`)",
    "run_id": "run the event belongs to",
    "t": "step number (`payload.t`), null for run-level events",
    "task_id": "`meta.task_id` (null when the writer did not set it)",
    "model": "`meta.model`",
    "goal": "the run's goal: run_start `payload.goal`, else `meta.goal`",
    "action": "llm_action: `payload.action.type` (tool_call | final)",
    "tool": "llm_action: `payload.action.name`; tool_result: `payload.tool`",
    "args": "llm_action: `payload.action.args` (JSON object, as the model gave them)",
    "ok": "the outcome the event reports: tool_result `obs.ok`, tests `ok`, run_end "
    "`state.last_test.ok`, final `final.test_result.ok` (null when there is none)",
    "event": "the event as written (JSON text of the line, unknown fields included)",
    "utf8_replaced": "the raw line held invalid UTF-8, decoded with U+FFFD",
}
# the bronze ingest of this contract (defs.ingest.ingest_partition): bronze `traces/events` has the
# `BRONZE_COLUMNS`, of which the event as written (`event`) is the raw line; no key is unique
# within a partition
RAW = RawContract(
    source="traces",
    table="events",
    parse=lambda: extract_statement(
        TraceEvent, DETAILS, STEP_PAYLOADS, load_sql("traces/select_event_columns")
    ),
    bronze_line="event",
    bronze_columns=tuple(BRONZE_COLUMNS),
    chunk_bytes=48 << 20,
    # LZ4 for the event text: it compresses about as fast as zstd level 1 and decompresses ~3x
    # faster, and the extraction reads the llm_request text of a partition twice
    bronze_compression="lz4",
    # columns with few distinct values per row group are dictionary-encoded; events are not
    dictionary=("source_file", "kind", "run_id", "task_id", "model", "goal", "action", "tool"),
)
