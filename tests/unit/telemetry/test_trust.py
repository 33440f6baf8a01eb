"""Trust updates, clamps, peer clustering and trust at a task's time (rules/telemetry_trust.py)."""

import json

import polars as pl
import pytest

from distill_assets.defs.telemetry.trust import (
    event_flags,
    trust_at,
    trust_signals,
    trust_walk,
    trust_weighted,
    trust_weighted_pairs,
)
from distill_assets.lib.hashing import split_bucket, with_stable_bucket
from tests.unit.telemetry.silver_frames import silver


def gold(event_id: str, player: str, t: float, passed: bool) -> tuple:
    payload = {"task_id": event_id, "expected": "a", "answer": "a", "passed": passed}
    return (event_id, player, t, "gold_standard_result", payload)


def peer(event_id: str, player: str, t: float, pairing: str, choice: str, **extra: str) -> tuple:
    payload = {"pairing_id": pairing, "scenario_id": "s", "choice": choice, **extra}
    return (event_id, player, t, "peer_prediction", payload)


def test_scripted_history_hits_both_clamps() -> None:
    script = (
        ["gold_pass"] * 11
        + ["gold_fail"] * 10
        + ["peer_match", "peer_mismatch", "peer_match", "peer_match", "peer_mismatch"]
    )
    signals = pl.DataFrame(
        {
            "player_key": ["p"] * len(script),
            "server_ts": [float(i) for i in range(len(script))],
            "event_seq": list(range(len(script))),
            "event_id": [f"e{i:02d}" for i in range(len(script))],
            "signal": script,
        }
    )
    expected = [
        *[0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0, 1.0],  # +0.05, capped at 1.0
        *[0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.1],  # -0.10, floored at 0.1
        *[0.13, 0.1, 0.13, 0.16, 0.1],  # +0.03, -0.08 (0.05 clamps to 0.1), ..., 0.16-0.08=0.08
    ]
    assert trust_walk(signals).get_column("trust_after").to_list() == expected


def test_each_player_starts_at_the_initial_trust() -> None:
    signals = pl.DataFrame(
        {
            "player_key": ["a", "a", "b"],
            "server_ts": [1.0, 2.0, 1.0],
            "event_seq": [0, 1, 2],
            "event_id": ["1", "2", "3"],
            "signal": ["gold_fail", "gold_fail", "peer_match"],
        }
    )
    assert trust_walk(signals).get_column("trust_after").to_list() == [0.4, 0.3, 0.53]


def test_peer_clusters_majority_minority_tie_and_lone_response() -> None:
    events = silver(
        [
            peer("1", "a", 10, "three", "x"),
            peer("2", "b", 11, "three", "x"),
            peer("3", "c", 12, "three", "y"),
            peer("4", "a", 20, "tie", "x"),
            peer("5", "b", 21, "tie", "y"),
            peer("6", "d", 30, "lone-match", "x", peer_choice="x"),
            peer("7", "d", 31, "lone-tie", "x", peer_choice="y"),
            gold("8", "d", 40, passed=False),
        ]
    )
    signals = trust_signals(events)
    assert signals.select("event_id", "signal").rows() == [
        ("1", "peer_match"),
        ("2", "peer_match"),
        ("3", "peer_mismatch"),
        ("6", "peer_match"),
        ("8", "gold_fail"),
    ]


def test_trust_at_takes_the_trust_after_the_last_signal_up_to_the_task() -> None:
    events = silver([gold("g1", "p", 10, True), gold("g2", "p", 30, False)])
    walk = trust_walk(trust_signals(events))
    tasks = pl.DataFrame(
        {
            "player_key": ["p", "p", "p", "q"],
            "server_ts": [5.0, 10.0, 40.0, 50.0],
            "event_seq": [0, 5, 9, 0],
            "event_id": ["t0", "t1", "t2", "t3"],
        }
    )
    trust = dict(trust_at(walk, tasks).select("event_id", "trust").iter_rows())
    assert trust == {"t0": 0.5, "t1": 0.55, "t2": 0.45, "t3": 0.5}


@pytest.mark.parametrize("salt", ["", "triage-audit"])
def test_stable_buckets_match_the_python_reference(salt: str) -> None:
    frame = pl.DataFrame({"event_id": [f"evt-{i}" for i in range(50)]})
    buckets = with_stable_bucket(frame, "event_id", salt, 10_000).get_column("bucket").to_list()
    assert buckets == [split_bucket(salt + f"evt-{i}") for i in range(50)]


def test_a_low_trust_players_rows_score_lower_and_fall_out_below_the_floor() -> None:
    events = silver(
        [
            gold("g1", "low", 10, passed=False),
            gold("g2", "low", 20, passed=False),  # trust 0.3: at the floor, still kept
            gold("g3", "low", 30, passed=False),  # trust 0.2: below the floor
        ]
    )
    walk = trust_walk(trust_signals(events))
    rows = pl.DataFrame(
        {
            "id": ["r1", "r2", "r3", "r4"],
            "source_ref": ["a", "b", "c", "d"],
            "player_key": ["low", "low", "low", "ok"],
            "event_time": [5.0, 25.0, 35.0, 35.0],
            "quality_score": [0.8, 0.8, 0.8, 0.8],
            "metadata": ['{"k":1}'] * 4,
        }
    )
    flags = pl.DataFrame(
        {"source_ref": ["b"], "validation_flags": [["clock_skew"]]},
        schema={"source_ref": pl.String, "validation_flags": pl.List(pl.String)},
    )
    kept, below_floor = trust_weighted(rows, walk, flags)
    assert below_floor == 1
    assert kept.select("id", "quality_score").rows() == [
        ("r1", 0.8),  # before the failures: the initial trust 0.5, weight 1
        ("r2", 0.48),  # 0.8 * 0.3 / 0.5
        ("r4", 0.8),  # a player without signals keeps the content score
    ]
    assert [json.loads(m) for m in kept.get_column("metadata")] == [
        {"k": 1, "trust": 0.5, "validation_flags": []},
        {"k": 1, "trust": 0.3, "validation_flags": ["clock_skew"]},
        {"k": 1, "trust": 0.5, "validation_flags": []},
    ]


def test_event_flags_are_the_distinct_checks_of_a_products_events() -> None:
    steps = [
        ("s1", "p", 1, "trajectory_step", {"episode_id": "ep1"}),
        ("s2", "p", 2, "trajectory_step", {"episode_id": "ep1"}),
        ("s3", "p", 3, "trajectory_step", {"episode_id": "ep2"}),
    ]
    events = silver(steps).with_columns(
        pl.Series(
            "flag_checks",
            [["clock_skew"], ["action_out_of_range", "clock_skew"], []],
            dtype=pl.List(pl.String),
        )
    )
    flags = event_flags(events, "trajectory_step", "episode_id", "episode:").sort("source_ref")
    assert flags.rows() == [
        ("episode:ep1", ["action_out_of_range", "clock_skew"]),
        ("episode:ep2", []),
    ]


def test_a_pair_is_weighed_by_its_less_trusted_side() -> None:
    events = silver([gold("g1", "low", 10, passed=False), gold("g2", "bad", 10, passed=False)])
    events = pl.concat(
        [events, silver([gold(f"b{i}", "bad", 11 + i, passed=False) for i in range(3)])]
    )
    walk = trust_walk(trust_signals(events))
    rows = pl.DataFrame(
        {
            "id": ["p1", "p2"],
            "player_key_chosen": ["ok", "ok"],
            "player_key_rejected": ["low", "bad"],
            "event_time": [20.0, 20.0],
            "quality_score": [0.5, 0.5],
            "metadata": ['{"k":1}'] * 2,
        }
    )
    kept, below_floor = trust_weighted_pairs(rows, walk)
    # low: 0.4 after one failure; bad: 0.1 after four, below the floor
    assert below_floor == 1
    assert kept.select("id", "quality_score").rows() == [("p1", 0.4)]  # 0.5 * 0.4 / 0.5
    assert json.loads(kept.item(0, "metadata")) == {
        "k": 1,
        "trust_chosen": 0.5,
        "trust_rejected": 0.4,
    }
