"""A planted telemetry day for the episode builds' tests (episode day, episode shards).

Its steps out of order, copies, strays, skips, audits, near-duplicates and pairs exercise what
could differ between buckets.
"""

from __future__ import annotations

import json

import polars as pl

from distill_assets.defs.telemetry.triage import TRIAGE_SCHEMA

TASKS = ("Throw a tall vase", "Fire a glazed bowl")
# per step: (action_type, action_details) cycled over the steps of an episode
ACTIONS = (
    ("wheel_manipulation", {"hand_pressure": 0.6, "lift_rate": 0.3}),
    ("wheel_manipulation", {"hand_pressure": 0.2, "wheel_speed_adjust": -0.4}),
    ("move", {"dx": 0.5, "dy": -0.5}),
    ("craft", {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "e": 0.5, "f": 0.6, "g": 0.7}),
)
DECISIONS = ("skip", "process", "audit", "sample", "skip", "audit", "skip")


def planted_day() -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Return a day's silver events (steps out of order, copies, strays) and its triage rows."""
    events, triage = [], []

    def add(player: str, event_type: str, payload: dict, flags=None, decision=None) -> None:
        n = len(events)
        event_id = f"ev{(n * 7919) % 1000:03d}-{n}"
        events.append(
            (event_id, event_type, player, f"s-{player}", 1000.0 + n % 17, payload, flags)
        )
        if event_type == "trajectory_step":
            decision = decision or DECISIONS[n % len(DECISIONS)]
            action = payload.get("action", {}).get("action_type", "")
            triage.append((event_id, player, event_type, action, decision, "r"))

    for e in range(14):
        player = f"p{e % 4}"
        episode = f"ep-{(e * 5) % 14:02d}"
        # episodes 3 and 4 copy episode 2's steps: near-duplicates of one player (p2 and p3 too)
        shape = 2 if e in {3, 4, 6} else e
        for s in reversed(range(3 + shape % 4)):
            kind, details = ACTIONS[(s + shape) % len(ACTIONS)]
            step = {
                "episode_id": episode,
                "step_index": s,
                "observation": {
                    "game_state": {"clay_moisture": 0.1 * s, "symmetry": 0.5},
                    "inventory": ["clay"] if s % 2 else [],
                    "skill_state": {"pottery": 3},
                    "natural_language_instruction": TASKS[shape % 2] if s == 0 else "Go on",
                },
                "action": {"action_type": kind, "action_details": details},
                "reward": 0.25 * ((s + shape) % 4),
            }
            flags = ["payload_range"] if (e + s) % 5 == 0 else []
            # episodes 5 and 9 are skipped by triage, 13 (an expert) is audited and not passed
            decision = {5: "skip", 9: "skip", 13: "skip" if s else "audit"}.get(e)
            add(player, "trajectory_step", step, flags, decision)
        if e % 5 != 2:
            end = {
                "episode_id": episode,
                "success": e % 2 == 0,
                "task_description": TASKS[shape % 2],
                "competence_score": None if e == 1 else 0.45 + 0.035 * e,
            }
            add(player, "episode_end", end)
            add(player, "episode_end", {**end, "success": not end["success"]})
    # trust: p2 fails gold standards (below the floor from its first), p0 passes one
    for _ in range(6):
        add("p2", "gold_standard_result", {"passed": False})
    add("p0", "gold_standard_result", {"passed": True})
    add("p1", "trajectory_step", {"step_index": 0, "action": {"action_type": "move"}})
    add("p1", "trajectory_step", {"episode_id": "ep-00", "action": {"action_type": "move"}})
    silver = pl.LazyFrame(
        {
            "event_id": [r[0] for r in events],
            "event_type": [r[1] for r in events],
            "player_key": [r[2] for r in events],
            "session_id": [r[3] for r in events],
            "event_time": [r[4] for r in events],
            "payload": [json.dumps(r[5]) for r in events],
            "flag_checks": [r[6] for r in events],
        },
        schema_overrides={"flag_checks": pl.List(pl.String)},
    )
    rows = pl.LazyFrame(triage, schema=TRIAGE_SCHEMA, orient="row")
    return silver, rows
