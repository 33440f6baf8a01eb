"""Raw contract of game telemetry: one JSON envelope per line.

See docs/sources/telemetry.md#raw-contract.

`{event_id, event_type, player_id, server_ts, client_ts, payload, schema_version, session_id}`;
the payload's fields depend on `event_type` (models below). The models are the only statement of
the contract: the ingest's checks, which apply the same rules to whole partitions at once, are
generated from them (`lib.contract_sql` for the envelope, each field's `Annotated` kind;
`lib.payload_sql` for the payloads, from their field types, as `validate_payload` checks them in
strict mode; a test mutates each field and holds the two to agreement). A record's quarantine
reason is its first failing check: the envelope's fields in model order, then its payload's
(`Essential` dialogue fields first). Unknown envelope fields are kept in bronze's `extra` JSON
column; unknown payload fields stay in the payload (a payload `location` object `{region, x, y}`
is generalised past bronze, `rules/telemetry_privacy.py`).

Timestamps are unix seconds (int or float) or ISO 8601 strings; a string without a UTC offset is
read as UTC. A timestamp must fall in [2000-01-01, 2100-01-01).

Privacy: `player_id` never reaches the lake. Ingest replaces it with `player_key`, the hex
HMAC-SHA256 of the id under a secret key (`defs/telemetry/resources.PlayerIdHasher`), and replaces
every occurrence of the raw id in the other kept text (event_id, session_id, payload, extra, and a
quarantined record's raw line) by that key. Payloads must therefore not carry *other* players' raw
ids (peer predictions name a pairing, not the peer).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from distill_assets.lib.contract_sql import Details, parse_statement
from distill_assets.lib.json_fields import (
    Choice,
    JsonText,
    Object,
    Reason,
    Text,
    UnixOrIsoSeconds,
)
from distill_assets.lib.payload_sql import Essential, PayloadUnion
from distill_assets.lib.rawcontract import RawContract
from distill_assets.lib.seen import Dedup
from distill_assets.lib.sql import load_sql

# an event_id is unique within a partition: the first event in (source_file, line_no) order is kept
DEDUP = Dedup(reason="duplicate_event_id", detail="first kept at {first}")

EVENT_TYPES: tuple[str, ...] = (
    "dialogue_turn",
    "decision",
    "outcome",
    "trajectory_step",
    "episode_end",
    "reasoning",
    "gold_standard_result",
    "peer_prediction",
    "consent",
    "deletion_request",
)
SPEAKERS: tuple[str, ...] = ("player", "npc")
SKILL_TIERS: tuple[str, ...] = ("Novice", "Apprentice", "Journeyman", "Master")
AMBIGUITY_LEVELS: tuple[str, ...] = ("Low", "Medium", "High", "Critical")
# Plausible event times (unix seconds): [2000-01-01, 2100-01-01).
TIMESTAMP_MIN = 946_684_800.0
TIMESTAMP_MAX = 4_102_444_800.0
# an ISO-8601 string matching this carries its UTC offset (else it is read as UTC)
_ISO_OFFSET = r"[T ]\d\d:\d\d(:\d\d(\.\d+)?)?\s*([zZ]|[+-]\d\d(:?\d\d)?)$"

Timestamp = float | datetime
# how the ingest reads an event time: unix seconds or ISO 8601, in [TIMESTAMP_MIN, TIMESTAMP_MAX);
# a bad server_ts or client_ts is `invalid_timestamp`
_TIME = UnixOrIsoSeconds(TIMESTAMP_MAX, _ISO_OFFSET, lower=TIMESTAMP_MIN)
_BAD_TIME = Reason(invalid="invalid_timestamp", detail="'{name}: ' || {text}")


class _Open(BaseModel):
    """Unknown fields are allowed and kept."""

    model_config = ConfigDict(extra="allow")


class TelemetryEvent(_Open):
    """One raw telemetry envelope (one JSONL line); the ingest checks the fields in this order.

    Blank `event_id`, `event_type` or `player_id` counts as absent; `schema_version` and
    `session_id` are kept as written, whatever their JSON type.
    """

    event_id: Annotated[str, Text(blank="missing")] = Field(
        min_length=1, description="unique per event; the first one wins per day"
    )
    event_type: Annotated[
        Literal[EVENT_TYPES],
        Choice(blank_missing=True),
        Reason(invalid="unknown_event_type", detail="'{name}: ' || coalesce({text}, '?')"),
    ] = Field(description="selects the payload model")
    player_id: Annotated[str, Text(blank="missing")] = Field(
        min_length=1, description="raw player id; replaced at ingest"
    )
    server_ts: Annotated[Timestamp, _TIME, _BAD_TIME] = Field(
        description="server receive time; the event time"
    )
    client_ts: Annotated[Timestamp | None, _TIME, _BAD_TIME] = Field(
        default=None, description="client clock (untrusted)"
    )
    payload: Annotated[dict, Object()] = Field(
        description="event-type specific fields (see PAYLOAD_MODELS)"
    )
    schema_version: Annotated[str | int | None, JsonText()] = Field(
        default=None, description="client schema version"
    )
    session_id: Annotated[str | None, JsonText()] = Field(default=None, description="game session")


class DialogueTurnPayload(_Open):
    """`dialogue_turn`: one line of a player-NPC conversation.

    See docs/sources/telemetry.md#dialogues. The fields the dialogues need are `Essential`:
    checked first, in this order, with their own reasons (`lib.payload_sql.Essential`).
    """

    conversation_id: Annotated[str, Essential()] = Field(min_length=1)
    speaker: Annotated[Literal[SPEAKERS], Essential()]
    text: Annotated[str, Essential()] = Field(min_length=1)
    turn_index: Annotated[NonNegativeInt, Essential()] = Field(
        description="order of the turn in its conversation"
    )
    npc_id: str | None = None
    npc_name: str | None = None
    npc_persona: str | None = Field(
        default=None, description="the NPC's persona and context (the SFT system message)"
    )
    quest_id: str | None = None
    game_genre: str | None = Field(default=None, description="e.g. RPG_Survival_Ancient")
    player_skill_tier: Literal[SKILL_TIERS] | None = None
    ambiguity_level: Literal[AMBIGUITY_LEVELS] | None = None
    social_context: str | None = Field(default=None, description="e.g. Trade_Negotiation_Tappu")
    karma_state: int | None = Field(default=None, description="player karma at the time")
    profession: str | None = Field(default=None, description="player's primary profession")


class DecisionOption(_Open):
    """One option offered in a decision."""

    option_id: str
    text: str


class DecisionPayload(_Open):
    """`decision`: a choice between alternatives (docs/sources/telemetry.md#decisions-and-pairs)."""

    scenario_id: str
    game_state_hash: str
    prompt: str
    options: list[DecisionOption] = Field(min_length=2)
    chosen_option: str = Field(description="option_id of the chosen option")
    reasoning: str | None = None
    ambiguity_score: float = Field(ge=0.0, le=1.0)
    ai_policy_probs: dict[str, float] = Field(description="AI policy probability per option_id")
    is_gold_standard: bool = False


class OutcomePayload(_Open):
    """`outcome`: the result of a decision or an episode."""

    decision_event_id: str | None = None
    episode_id: str | None = None
    outcome: str
    label: str = Field(description="Success | Partial | Failure (or a game-specific label)")
    reward: float
    karma_delta: int = 0
    option_id: str | None = Field(
        default=None,
        description="the decision option this outcome reports; an option other than the chosen "
        "one makes it a counterfactual outcome (what the alternative would have given)",
    )


class Observation(_Open):
    """What the player saw at a trajectory step."""

    game_state: dict
    inventory: list[str] = Field(default_factory=list)
    skill_state: dict[str, int] = Field(default_factory=dict)
    natural_language_instruction: str | None = None


class Action(_Open):
    """What the player did at a trajectory step (continuous values, tokenized later)."""

    action_type: str
    action_details: dict[str, float]


class TrajectoryStepPayload(_Open):
    """`trajectory_step`: one step of an action sequence (docs/sources/telemetry.md#episodes)."""

    episode_id: str
    step_index: NonNegativeInt
    observation: Observation
    action: Action
    reward: float


class EpisodeEndPayload(_Open):
    """`episode_end`: the end of a trajectory episode."""

    episode_id: str
    success: bool
    task_description: str
    total_steps: NonNegativeInt | None = None
    competence_score: float | None = Field(default=None, description="if the game computed one")


class ReasoningPayload(_Open):
    """`reasoning`: an explicit reasoning trace (docs/sources/telemetry.md#reasoning)."""

    reasoning_id: str | None = None
    scenario_id: str | None = None
    context: str
    thought_process: list[str] = Field(min_length=1)
    conclusion: str
    outcome: str | None = None


class GoldStandardResultPayload(_Open):
    """`gold_standard_result`: a known-answer task hidden in gameplay.

    See docs/sources/telemetry.md#trust.
    """

    task_id: str
    scenario_id: str | None = None
    expected: str
    answer: str
    passed: bool


class PeerPredictionPayload(_Open):
    """`peer_prediction`: a blind pairing on the same scenario (docs/sources/telemetry.md#trust)."""

    pairing_id: str
    scenario_id: str
    choice: str
    peer_choice: str | None = None
    matched: bool | None = None


class ConsentPayload(_Open):
    """`consent`: the player's opt-in (or withdrawal) per data type (docs/privacy.md#consent)."""

    granted: bool
    scopes: list[str] = Field(description="data types consented to, e.g. sft, dpo, rlds, cot")
    policy_version: str | None = None


class DeletionRequestPayload(_Open):
    """`deletion_request`: the player asks for their data to be removed."""

    request_id: str
    scope: str = Field(default="all", description="all | a data type")
    reason: str | None = None


PAYLOAD_MODELS: dict[str, type[BaseModel]] = {
    "dialogue_turn": DialogueTurnPayload,
    "decision": DecisionPayload,
    "outcome": OutcomePayload,
    "trajectory_step": TrajectoryStepPayload,
    "episode_end": EpisodeEndPayload,
    "reasoning": ReasoningPayload,
    "gold_standard_result": GoldStandardResultPayload,
    "peer_prediction": PeerPredictionPayload,
    "consent": ConsentPayload,
    "deletion_request": DeletionRequestPayload,
}
# the payload of an envelope, by event type: every field is checked as `missing_<field>` /
# `invalid_<field>` (nested fields with `_`: `invalid_observation_game_state`); dialogue turns,
# the most frequent, are read by one json_transform of the payload
PAYLOADS = PayloadUnion(
    key="event_type",
    field="payload",
    models=tuple(PAYLOAD_MODELS.items()),
    transformed=("dialogue_turn",),
)
# how the ingest words its quarantine details (the envelope's; the payloads' name their field)
DETAILS = Details(
    invalid_json=None,
    torn_last_line=None,
    not_an_object="'top-level JSON ' || lower(doc_type)",
    missing=None,
    invalid="'{name} is ' || lower({type})",
)


def validate_payload(event_type: str, payload: dict) -> BaseModel:
    """Validate one payload against its model in strict mode (raises on a contract breach).

    Strict: a JSON number is not a string, a string is not a number or a boolean, `2.0` is not an
    integer - exactly what the ingest SQL accepts, since JSON carries the types.
    """
    return PAYLOAD_MODELS[event_type].model_validate(payload, strict=True)


def validate_event(record: dict) -> TelemetryEvent:
    """Validate one envelope and its payload against the models (raises on a contract breach)."""
    event = TelemetryEvent.model_validate(record)
    validate_payload(event.event_type, event.payload)
    return event


def _parse(fast: bool = False) -> str:
    """Return the parse statement of this contract (`fast`: its fast parse)."""
    return parse_statement(
        TelemetryEvent,
        "telemetry",
        (),
        details=DETAILS,
        union=PAYLOADS,
        then=load_sql("telemetry/select_redacted_events"),
        fast=fast,
    )


# the bronze ingest of this contract (defs.ingest.ingest_partition, with the asset's parameters):
# the parse is generated from `TelemetryEvent` and `PAYLOADS`, then redacts the player id
# (sql/telemetry/select_redacted_events.sql) of every kept text and of the lines it quarantines;
# the line rewrite redacts those of the records it accepted that the ingest quarantines as repeats
RAW = RawContract(
    source="telemetry",
    table="events",
    parse=_parse,
    fast_parse=lambda: _parse(fast=True),
    dedup=DEDUP,
    line_rewrite="telemetry/select_repeated_lines",
)
