"""Payouts: a peer-prediction mismatch pays zero and the row says why (rules/telemetry_trust.py)."""

import polars as pl

from distill_assets.defs.telemetry import events as events_module
from distill_assets.defs.telemetry import payouts as payouts_module
from distill_assets.defs.telemetry.events import events_with_ids
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


def test_events_with_ids_keeps_what_the_join_with_every_event_keeps(monkeypatch) -> None:
    # an id repeated across partitions matches each of its events, as a join with all events does;
    # batches of 2 events make every batch boundary fall inside the data
    monkeypatch.setattr(events_module, "PAYLOAD_BATCH_ROWS", 2)
    events = pl.concat(
        [
            silver([decision("d1", "a", 1, "s", "x"), outcome("o1", "a", 2, "d1")], "2026-01-20"),
            silver([decision("d1", "a", 5, "s", "y"), outcome("d2", "b", 6, "d1")], "2026-01-21"),
            silver([peer("p1", "c", 7, "s", "x")], "2026-01-22"),
        ]
    )
    ids = pl.DataFrame({"event_id": ["d1", "d2", "d1", "zz"]})
    columns = ("event_id", "partition", pl.col("payload").str.json_path_match("$.chosen_option"))
    got = ids.lazy().join(events_with_ids(events, ids, columns), on="event_id").collect()
    expected = ids.lazy().join(events.select(*columns), on="event_id").collect()
    assert got.sort(pl.all()).rows() == expected.sort(pl.all()).rows()
    assert got.sort(pl.all()).rows() == [
        ("d1", "2026-01-20", "x"),
        ("d1", "2026-01-20", "x"),
        ("d1", "2026-01-21", "y"),
        ("d1", "2026-01-21", "y"),
        ("d2", "2026-01-21", None),
    ]


def test_payouts_read_in_batches_of_one_event_pay_the_same(monkeypatch) -> None:
    # the events are read a batch at a time (payload fields, the ids' policies and partitions):
    # batches of one event give the rows of one batch, to the last column
    events = pl.concat(
        [
            silver([decision("d1", "a", 1, "s", "x"), outcome("o1", "a", 2, "d1")], "2026-01-20"),
            silver(
                [
                    decision("d2", "c", 3, "s", "y"),
                    outcome("o2", "c", 4, "d2"),
                    peer("pa", "a", 10, "s", "x"),
                    peer("pc", "c", 10, "s", "y"),
                    peer("pb", "b", 10, "s", "x"),
                    ("e1", "b", 3, "episode_end", {"episode_id": "ep", "success": True}),
                ],
                "2026-01-21",
            ),
        ]
    )
    whole = payouts(events, trust_walk(trust_signals(events)))
    monkeypatch.setattr(events_module, "PAYLOAD_BATCH_ROWS", 1)
    assert payouts(events, trust_walk(trust_signals(events))).rows() == whole.rows()
    assert whole.select("player_key", "partition", "tasks", "payout", "zeroed_tasks").rows() == [
        ("a", "2026-01-20", 1, 5.0, 0),
        ("b", "2026-01-21", 1, 12.5, 0),
        ("c", "2026-01-21", 1, 0.0, 1),
    ]
