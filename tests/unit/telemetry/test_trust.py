"""Trust updates, clamps, peer clustering and trust at a task's time (rules/telemetry_trust.py)."""

import json

import polars as pl
import pytest

from distill_assets.defs.telemetry.trust import trust_at, trust_signals, trust_walk
from distill_assets.lib.hashing import split_bucket, with_stable_bucket


def silver(rows: list[tuple[str, str, float, str, dict]]) -> pl.LazyFrame:
    return pl.LazyFrame(
        {
            "event_id": [r[0] for r in rows],
            "player_key": [r[1] for r in rows],
            "event_time": [r[2] for r in rows],
            "event_seq": list(range(len(rows))),
            "event_type": [r[3] for r in rows],
            "payload": [json.dumps(r[4]) for r in rows],
        }
    )


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
