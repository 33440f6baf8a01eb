"""Triage gates the products: per-episode verdicts, the audit's false-negative rate."""

import json

import polars as pl

from distill_assets.defs.telemetry.dialogues import gate_dialogues
from distill_assets.defs.telemetry.triage import (
    TRIAGE_SCHEMA,
    audit_false_negatives,
    gate,
    passed,
    without_skipped,
)


def triage_rows(rows: list[tuple[str, str, str, str]]) -> pl.LazyFrame:
    """Triage rows from (event_id, event_type, action_type, decision)."""
    return pl.LazyFrame(
        {
            "event_id": [r[0] for r in rows],
            "player_key": ["p"] * len(rows),
            "event_type": [r[1] for r in rows],
            "action_type": [r[2] for r in rows],
            "decision": [r[3] for r in rows],
            "reason": ["r"] * len(rows),
        },
        schema=TRIAGE_SCHEMA,
    )


STEPS = triage_rows(
    [
        ("a1", "trajectory_step", "wheel_manipulation", "skip"),
        ("a2", "trajectory_step", "wheel_manipulation", "process"),
        ("m1", "trajectory_step", "move", "skip"),
        ("m2", "trajectory_step", "move", "audit"),
        ("w1", "trajectory_step", "walk", "audit"),
        ("w2", "trajectory_step", "walk", "skip"),
        ("c1", "trajectory_step", "craft", "skip"),
        ("x1", "trajectory_step", "move", "audit"),
    ]
)
KEYS = pl.LazyFrame(
    {
        "event_id": ["a1", "a2", "m1", "m2", "w1", "w2", "c1", "x1"],
        "episode_id": ["ep-a", "ep-a", "ep-m", "ep-m", "ep-w", "ep-w", "ep-c", "ep-a"],
    }
)


def test_an_episode_passes_when_any_step_passed_else_audit_else_skip() -> None:
    verdicts = gate(KEYS, STEPS, "episode_id")
    assert verdicts.rows() == [
        ("ep-a", "pass"),
        ("ep-c", "skip"),
        ("ep-m", "audit"),
        ("ep-w", "audit"),
    ]
    episodes = pl.DataFrame({"episode_id": ["ep-a", "ep-c", "ep-m", "ep-w", "ep-none"]})
    # a skipped routine episode is not published; neither is one triage never saw
    assert passed(episodes, verdicts, "episode_id").get_column("episode_id").to_list() == ["ep-a"]


def test_audited_skips_of_valuable_lost_episodes_are_false_negatives() -> None:
    verdicts = gate(KEYS, STEPS, "episode_id")
    # ep-m was found valuable (say, expert) but triage did not pass it: m2 is a false negative;
    # ep-w was not valuable; x1's episode ep-a passed, so nothing was lost
    valuable = pl.DataFrame({"episode_id": ["ep-m", "ep-a"]})
    assert audit_false_negatives(KEYS, STEPS, verdicts, valuable, "episode_id") == {
        "move": {"audited": 2, "false_negatives": 1, "rate": 0.5},
        "walk": {"audited": 1, "false_negatives": 0, "rate": 0.0},
    }


def test_skipped_reasoning_events_are_dropped_and_others_kept() -> None:
    rows = triage_rows(
        [
            ("r1", "reasoning", "reasoning", "process"),
            ("r2", "reasoning", "reasoning", "audit"),
            ("d1", "decision", "decision", "skip"),
        ]
    )
    events = pl.LazyFrame({"event_id": ["r1", "r2", "d1", "o1"]})
    kept = without_skipped(events, rows, "reasoning").collect()
    assert kept.get_column("event_id").to_list() == ["r1", "d1", "o1"]


def test_a_conversation_triage_skipped_is_not_published_and_its_audited_turns_are_evaluated():
    turns = triage_rows(
        [
            ("q0", "dialogue_turn", "dialogue_turn", "process"),
            ("q1", "dialogue_turn", "dialogue_turn", "skip"),
            ("s0", "dialogue_turn", "dialogue_turn", "skip"),
            ("s1", "dialogue_turn", "dialogue_turn", "audit"),
            ("t0", "dialogue_turn", "dialogue_turn", "audit"),
        ]
    )
    events = pl.LazyFrame(
        {
            "event_id": ["q0", "q1", "s0", "s1", "t0"],
            "event_type": ["dialogue_turn"] * 5,
            "payload": [json.dumps({"conversation_id": c}) for c in "qqsst"],
        }
    )
    rows = pl.DataFrame(
        {
            "id": ["row-q", "row-s", "row-t"],
            "source_ref": ["conversation:q", "conversation:s", "conversation:t"],
            "quality_score": [0.9, 0.8, 0.3],
        }
    )
    kept, gated = gate_dialogues(rows, events, turns)
    # the quest conversation passed; small talk "s" (skipped, then audited) is not published
    assert kept.rows() == [("row-q", "conversation:q", 0.9)]
    assert gated.verdicts.rows() == [("q", "pass"), ("s", "audit"), ("t", "audit")]
    assert gated.dropped == 2
    # s would have scored 0.8 >= 0.6: its audited turn is a false negative; t's (0.3) is not
    assert gated.audit == {
        "dialogue_turn": {"audited": 2, "false_negatives": 1, "rate": 0.5},
    }
