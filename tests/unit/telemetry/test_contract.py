"""The telemetry raw contract (pydantic) and the values the ingest SQL takes from it."""

import json

import pytest
from pydantic import ValidationError

from distill_assets.contracts import telemetry as contract


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


def test_envelope_fields_and_the_patch_that_leaves_extra() -> None:
    assert contract.envelope_fields() == (
        "event_id",
        "event_type",
        "schema_version",
        "player_id",
        "session_id",
        "client_ts",
        "server_ts",
        "payload",
    )
    assert json.loads(contract.envelope_removal_patch()) == dict.fromkeys(
        contract.envelope_fields()
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
