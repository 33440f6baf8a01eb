"""Payouts: a peer-prediction mismatch pays zero and the row says why (rules/telemetry_trust.py)."""

from distill_assets.defs.telemetry import payouts as payouts_module
from distill_assets.defs.telemetry.payouts import payouts
from distill_assets.defs.telemetry.trust import trust_signals, trust_walk
from distill_assets.rules import telemetry_taxonomy as taxonomy_rules
from tests.unit.telemetry.silver_frames import silver


def decision(event_id: str, player: str, t: float, scenario: str, chosen: str) -> tuple:
    payload = {
        "scenario_id": scenario,
        "game_state_hash": scenario,
        "prompt": "?",
        "options": [chosen],
        "chosen_option": chosen,
        "ambiguity_score": 0.5,
        "ai_policy_probs": {chosen: 1.0},
    }
    return (event_id, player, t, "decision", payload)


def outcome(event_id: str, player: str, t: float, decision_id: str) -> tuple:
    payload = {"decision_event_id": decision_id, "outcome": "ok", "label": "Success", "reward": 1}
    return (event_id, player, t, "outcome", payload)


def peer(event_id: str, player: str, t: float, scenario: str, choice: str) -> tuple:
    payload = {"pairing_id": "pr", "scenario_id": scenario, "choice": choice}
    return (event_id, player, t, "peer_prediction", payload)


def test_a_peer_mismatch_pays_zero_and_the_row_says_why() -> None:
    events = silver(
        [
            decision("da", "a", 1, "s", "x"),
            outcome("oa", "a", 2, "da"),
            decision("dc", "c", 1, "s", "y"),
            outcome("oc", "c", 2, "dc"),
            decision("dc2", "c", 3, "t", "z"),
            outcome("oc2", "c", 4, "dc2"),
            peer("pa", "a", 10, "s", "x"),
            peer("pb", "b", 10, "s", "x"),
            peer("pc", "c", 10, "s", "y"),
        ],
        "2026-01-20",
    )
    rows = payouts(events, trust_walk(trust_signals(events)))
    got = {r["player_key"]: r for r in rows.to_dicts()}
    # a matched: 10 * U 1 * (1 + 0.5 * H 0) * C 0.5; c's mismatched decision on `s` pays nothing,
    # his decision on `t` (no pairing) pays as usual
    assert got["a"]["payout"] == 5.0
    assert (got["a"]["zeroed_tasks"], got["a"]["zero_reasons"]) == (0, [])
    assert got["c"]["tasks"] == 2
    assert got["c"]["payout"] == 5.0
    assert (got["c"]["zeroed_tasks"], got["c"]["zero_reasons"]) == (1, ["peer_mismatch"])


def test_payouts_weight_each_task_by_its_value_class(monkeypatch) -> None:
    ambiguous = decision("dx", "a", 1, "s", "x")
    ambiguous[4]["ambiguity_score"] = 0.9
    events = silver(
        [
            ambiguous,
            outcome("ox", "a", 2, "dx"),
            decision("dy", "a", 3, "t", "y"),  # ambiguity 0.5: long-horizon
            outcome("oy", "a", 4, "dy"),
            ("ee", "b", 5, "episode_end", {"episode_id": "innovation-ep", "success": True}),
        ],
        "2026-01-20",
    )
    walk = trust_walk(trust_signals(events))
    # default weights (1.0 each): the seed's formula, 10 * 1 * 1 * 0.5 per decision
    assert payouts(events, walk).select("player_key", "payout").rows() == [
        ("a", 10.0),
        ("b", 12.5),
    ]
    weights = dict(taxonomy_rules.PAYOUT_WEIGHTS)
    weights.update(ambiguity_resolution=3.0, novel_strategy_generation=2.0)
    monkeypatch.setattr(payouts_module, "PAYOUT_WEIGHTS", weights)
    # a: 5 * 3 (ambiguity resolution) + 5 * 1 (long horizon); b's innovation episode 12.5 * 2
    assert payouts(events, walk).select("player_key", "payout").rows() == [
        ("a", 20.0),
        ("b", 25.0),
    ]
