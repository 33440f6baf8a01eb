"""Every payload type is validated at ingest; SQL and pydantic models agree field by field."""

import dataclasses
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from distill_assets.contracts import telemetry as contract
from distill_assets.defs.ingest import ingest_partition
from distill_assets.defs.player_ids import PlayerIdHasher
from distill_assets.defs.telemetry.assets import parse_params
from distill_assets.lib.contract_sql import parse_statement
from distill_assets.lib.sql import load_sql
from tests.unit.telemetry.test_parse_events import envelope, ingest

VALID_PAYLOADS: dict[str, dict] = {
    "dialogue_turn": {
        "conversation_id": "c1",
        "turn_index": 0,
        "speaker": "player",
        "text": "Hi",
        "npc_id": "npc_1",
        "player_skill_tier": "Master",
        "ambiguity_level": "High",
        "karma_state": -3,
    },
    "decision": {
        "scenario_id": "famine",
        "game_state_hash": "a1b2",
        "prompt": "Who do you feed?",
        "options": [{"option_id": "o1", "text": "workers"}, {"option_id": "o2", "text": "kids"}],
        "chosen_option": "o1",
        "reasoning": "canal first",
        "ambiguity_score": 1,
        "ai_policy_probs": {"o1": 0.25, "o2": 0.75},
        "is_gold_standard": False,
    },
    "outcome": {
        "decision_event_id": "e0",
        "outcome": "canal kept",
        "label": "Success",
        "reward": 1,
        "karma_delta": -2,
    },
    "trajectory_step": {
        "episode_id": "ep1",
        "step_index": 0,
        "observation": {
            "game_state": {"clay_moisture": 0.7},
            "inventory": ["clay"],
            "skill_state": {"pottery": 3},
            "natural_language_instruction": "Shape the walls",
        },
        "action": {"action_type": "wheel_manipulation", "action_details": {"hand_pressure": 0.6}},
        "reward": 0.5,
    },
    "episode_end": {
        "episode_id": "ep1",
        "success": True,
        "task_description": "Make a jar",
        "total_steps": 5,
        "competence_score": 0.8,
    },
    "reasoning": {
        "reasoning_id": "r1",
        "context": "Seepage",
        "thought_process": ["bitumen seals"],
        "conclusion": "line it",
        "outcome": "8% loss",
    },
    "gold_standard_result": {"task_id": "g1", "expected": "o2", "answer": "o2", "passed": True},
    "peer_prediction": {
        "pairing_id": "pr1",
        "scenario_id": "famine",
        "choice": "o1",
        "peer_choice": "o2",
        "matched": False,
    },
    "consent": {"granted": True, "scopes": ["sft", "dpo"], "policy_version": "2026-10"},
    "deletion_request": {"request_id": "d1", "scope": "all", "reason": "closing account"},
}
DROP = object()
NESTED = {
    "trajectory_step": (
        ("observation", "game_state"),
        ("observation", "inventory"),
        ("observation", "skill_state"),
        ("action", "action_type"),
        ("action", "action_details"),
    )
}


def _set(payload: dict, path: tuple[str, ...], value: object) -> dict:
    changed = json.loads(json.dumps(payload))
    target = changed
    for name in path[:-1]:
        target = target[name]
    if value is DROP:
        target.pop(path[-1], None)
    else:
        target[path[-1]] = value
    return changed


def _mutations() -> list[tuple[str, tuple[str, ...], object]]:
    cases: list[tuple[str, tuple[str, ...], object]] = []
    for event_type, model in contract.PAYLOAD_MODELS.items():
        paths = [(name,) for name in model.model_fields] + list(NESTED.get(event_type, ()))
        for path in paths:
            for value in (DROP, None, "x", 7, 2.5, -1, True, [], {}, ["a", 1], {"a": "b"}):
                cases.append((event_type, path, value))
    return cases


MUTATIONS = _mutations()
SPECIAL: list[tuple[str, tuple[str, ...], object]] = [
    ("decision", ("options",), [{"option_id": "o1", "text": "only one"}]),
    ("decision", ("options",), [{"option_id": "o1", "text": "a"}, {"option_id": "o2"}]),
    ("decision", ("options",), [{"option_id": "o1", "text": "a"}, "o2"]),
    ("decision", ("ambiguity_score",), 1.5),
    ("decision", ("ai_policy_probs",), {"o1": "high"}),
    ("reasoning", ("thought_process",), []),
    ("episode_end", ("total_steps",), -2),
    ("dialogue_turn", ("player_skill_tier",), "Legend"),
    ("trajectory_step", ("action", "action_details"), {"hand_pressure": "firm"}),
    ("trajectory_step", ("observation", "skill_state"), {"pottery": 2.5}),
]


def _pydantic_accepts(event_type: str, payload: dict) -> bool:
    try:
        contract.validate_payload(event_type, payload)
    except ValidationError:
        return False
    return True


def test_valid_payloads_pass_both(tmp_path: Path) -> None:
    lines = [
        json.dumps(envelope(event_id=f"e{i}", event_type=t, payload=p))
        for i, (t, p) in enumerate(VALID_PAYLOADS.items())
    ]
    assert all(_pydantic_accepts(t, p) for t, p in VALID_PAYLOADS.items())
    bronze, quarantine = ingest(tmp_path, lines)
    assert quarantine.height == 0
    assert sorted(bronze["event_type"]) == sorted(contract.EVENT_TYPES)


def test_sql_and_models_agree_on_every_field_breach(tmp_path: Path) -> None:
    cases = MUTATIONS + SPECIAL
    lines = [
        json.dumps(
            envelope(
                event_id=f"m{i}",
                event_type=event_type,
                payload=_set(VALID_PAYLOADS[event_type], path, value),
            )
        )
        for i, (event_type, path, value) in enumerate(cases)
    ]
    bronze, quarantine = ingest(tmp_path, lines)
    kept = set(bronze["event_id"])
    disagreements = [
        (event_type, path, value)
        for i, (event_type, path, value) in enumerate(cases)
        if (f"m{i}" in kept)
        != _pydantic_accepts(event_type, _set(VALID_PAYLOADS[event_type], path, value))
    ]
    assert disagreements == []
    assert quarantine.height > 0.5 * len(cases)


@pytest.mark.parametrize(
    ("event_type", "path", "value", "expected"),
    [
        (
            "decision",
            ("game_state_hash",),
            DROP,
            ("missing_game_state_hash", "decision.game_state_hash: expected a string, got absent"),
        ),
        (
            "decision",
            ("options",),
            [{"option_id": "o1", "text": "a"}],
            (
                "invalid_options",
                "decision.options: expected >= 2 objects with string option_id and text, got array",
            ),
        ),
        (
            "trajectory_step",
            ("action", "action_details"),
            {"hand_pressure": "firm"},
            (
                "invalid_action_action_details",
                "trajectory_step.action.action_details: expected an object of numbers, got object",
            ),
        ),
        (
            "episode_end",
            ("success",),
            "yes",
            ("invalid_success", "episode_end.success: expected a boolean, got varchar"),
        ),
        (
            "consent",
            ("scopes",),
            None,
            ("missing_scopes", "consent.scopes: expected an array of strings, got null"),
        ),
    ],
)
def test_payload_breach_names_the_field(
    tmp_path: Path, event_type: str, path: tuple, value: object, expected: tuple[str, str]
) -> None:
    payload = _set(VALID_PAYLOADS[event_type], path, value)
    _, quarantine = ingest(tmp_path, [json.dumps(envelope(event_type=event_type, payload=payload))])
    assert quarantine.select("reason", "detail").rows() == [expected]


def test_a_decision_with_only_a_scenario_id_is_quarantined(tmp_path: Path) -> None:
    line = json.dumps(envelope(event_type="decision", payload={"scenario_id": "famine"}))
    bronze, quarantine = ingest(tmp_path, [line])
    assert bronze.height == 0
    assert quarantine["reason"].to_list() == ["missing_game_state_hash"]


class _UnboundedDecision(contract.DecisionPayload):
    """The decision model with an ambiguity score of any size."""

    ambiguity_score: float


def test_a_contract_change_changes_the_generated_checks(tmp_path: Path) -> None:
    """The parse follows the models: without its bounds, a score of 1.5 is accepted."""
    models = dict(contract.PAYLOAD_MODELS, decision=_UnboundedDecision)
    union = dataclasses.replace(contract.PAYLOADS, models=tuple(models.items()))
    statement = parse_statement(
        contract.TelemetryEvent,
        "telemetry",
        (),
        details=contract.DETAILS,
        union=union,
        then=load_sql("telemetry/select_redacted_events"),
    )
    changed = dataclasses.replace(contract.RAW, parse=lambda: statement, fast_parse=None)
    payload = _set(VALID_PAYLOADS["decision"], ("ambiguity_score",), 1.5)
    line = json.dumps(envelope(event_type="decision", payload=payload))
    found = []
    for number, raw in enumerate((contract.RAW, changed)):
        path = tmp_path / str(number) / "telemetry" / "d" / "a.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(line + "\n", encoding="utf-8")
        params, _ = parse_params(PlayerIdHasher(key="k"))
        result = ingest_partition(raw, [str(path)], raw_root=str(path.parents[2]), params=params)
        found.append((result.bronze_rows, dict(result.quarantine_by_reason)))
    assert found == [(0, {"invalid_ambiguity_score": 1}), (1, {})]
