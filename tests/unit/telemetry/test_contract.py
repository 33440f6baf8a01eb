"""The telemetry raw contract (pydantic) and the values the ingest SQL takes from it."""

import pytest
from pydantic import ValidationError

from distill_assets.contracts import telemetry as contract
from distill_assets.lib.contract_sql import field_reasons
from distill_assets.lib.payload_sql import payload_reasons


def dialogue_event(**payload_changes: object) -> dict:
    payload = {"conversation_id": "c1", "turn_index": 0, "speaker": "npc", "text": "Sit, sit."}
    return {
        "event_id": "e1",
        "event_type": "dialogue_turn",
        "player_id": "p_1",
        "server_ts": "2026-11-19T10:00:00Z",
        "payload": {**payload, **payload_changes},
    }


def test_every_event_type_has_a_payload_model() -> None:
    assert tuple(contract.PAYLOAD_MODELS) == contract.EVENT_TYPES


def test_the_ingest_checks_the_fields_in_model_order() -> None:
    assert field_reasons(contract.TelemetryEvent) == (
        "missing_event_id",
        "invalid_event_id",
        "missing_event_type",
        "unknown_event_type",
        "missing_player_id",
        "invalid_player_id",
        "missing_server_ts",
        "invalid_timestamp",
        "invalid_timestamp",
        "missing_payload",
        "invalid_payload",
    )
    reasons = payload_reasons(contract.PAYLOADS)
    assert reasons["dialogue_turn"][:7] == (
        "missing_conversation_id",
        "missing_speaker",
        "invalid_speaker",
        "missing_text",
        "missing_turn_index",
        "invalid_turn_index",
        "invalid_npc_id",
    )
    assert reasons["trajectory_step"][4:8] == (
        "missing_observation",
        "invalid_observation",
        "missing_observation_game_state",
        "invalid_observation_game_state",
    )
    assert reasons["deletion_request"] == (
        "missing_request_id",
        "invalid_request_id",
        "invalid_scope",
        "invalid_reason",
    )


def test_valid_event_keeps_unknown_fields() -> None:
    event = contract.validate_event({**dialogue_event(), "client": {"platform": "web"}})
    assert event.model_extra == {"client": {"platform": "web"}}


@pytest.mark.parametrize(
    "change",
    [
        {"text": ""},
        {"speaker": "narrator"},
        {"turn_index": -1},
        {"turn_index": 2.5},
        {"conversation_id": None},
    ],
)
def test_dialogue_payload_breaches_are_rejected(change: dict) -> None:
    with pytest.raises(ValidationError):
        contract.validate_event(dialogue_event(**change))


def test_unknown_event_type_is_rejected() -> None:
    with pytest.raises(ValidationError):
        contract.validate_event({**dialogue_event(), "event_type": "emote"})
