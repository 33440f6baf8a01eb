"""Raw contract of game telemetry: one JSON envelope per line.

See docs/sources/telemetry.md#raw-contract.

`{event_id, event_type, schema_version, player_id, session_id, client_ts, server_ts, payload}`;
the payload's fields depend on `event_type` (models below). The models are the source of truth:
the ingest SQL (`sql/telemetry/select_parsed_events.sql`) validates the same fields in bulk - the
envelope and every field of every payload type, as `validate_payload` does in strict mode (a test
mutates each field and holds the two to agreement) - and its bind parameters (event types,
speakers, skill tiers, ambiguity levels, envelope field names, timestamp bounds) are taken from
this module. Unknown envelope fields are kept in bronze's `extra` JSON column; unknown payload
fields stay in the payload (a payload `location` object `{region, x, y}` is generalised past
bronze, `rules/telemetry_privacy.py`).

Timestamps are unix seconds (int or float) or ISO 8601 strings; a string without a UTC offset is
read as UTC. A timestamp must fall in [2000-01-01, 2100-01-01).

Privacy: `player_id` never reaches the lake. Ingest replaces it with `player_key`, the hex
HMAC-SHA256 of the id under a secret key (`defs/telemetry/resources.PlayerIdHasher`), and replaces
every occurrence of the raw id in the other kept text (event_id, session_id, payload, extra, and a
quarantined record's raw line) by that key. Payloads must therefore not carry *other* players' raw
ids (peer predictions name a pairing, not the peer).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

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

Timestamp = float | datetime


class _Open(BaseModel):
    """Unknown fields are allowed and kept."""

    model_config = ConfigDict(extra="allow")


class TelemetryEvent(_Open):
    """One raw telemetry envelope (one JSONL line)."""

    event_id: str = Field(min_length=1, description="unique per event; the first one wins per day")
    event_type: Literal[EVENT_TYPES] = Field(description="selects the payload model")
    schema_version: str | int | None = Field(default=None, description="client schema version")
    player_id: str = Field(min_length=1, description="raw player id; replaced at ingest")
    session_id: str | None = Field(default=None, description="game session")
    client_ts: Timestamp | None = Field(default=None, description="client clock (untrusted)")
    server_ts: Timestamp = Field(description="server receive time; the event time")
    payload: dict = Field(description="event-type specific fields (see PAYLOAD_MODELS)")


class DialogueTurnPayload(_Open):
    """`dialogue_turn`: one line of a player-NPC conversation.

    See docs/sources/telemetry.md#dialogues.
    """

    conversation_id: str = Field(min_length=1)
    turn_index: NonNegativeInt = Field(description="order of the turn in its conversation")
    speaker: Literal[SPEAKERS]
    text: str = Field(min_length=1)
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
# Payload fields the ingest SQL checks first for dialogue turns (with their own reason codes);
# every other payload field of every type is checked after them, as `missing_<field>` /
# `invalid_<field>` (nested fields with `_`: `invalid_observation_game_state`).
DIALOGUE_REQUIRED: tuple[str, ...] = ("conversation_id", "speaker", "text", "turn_index")


def envelope_fields() -> tuple[str, ...]:
    """Return the envelope's declared field names (everything else goes to `extra`)."""
    return tuple(TelemetryEvent.model_fields)


def envelope_removal_patch() -> str:
    """Return a JSON merge patch that removes the envelope fields, leaving the unknown ones."""
    return json.dumps(dict.fromkeys(envelope_fields()))


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


# the bronze ingest of this contract (defs.ingest.ingest_partition, with the asset's parameters):
# the parse redacts the player id of the lines it quarantines, and the line rewrite those of the
# records it accepted that the ingest quarantines as repeats
RAW = RawContract(
    source="telemetry",
    table="events",
    parse=lambda: load_sql("telemetry/select_parsed_events"),
    dedup=DEDUP,
    line_rewrite="telemetry/select_repeated_lines",
)
