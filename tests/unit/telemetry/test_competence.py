"""Competence filter (docs/sources/telemetry.md#competence; `rules/telemetry_competence.py`)."""

from __future__ import annotations

import json

import polars as pl

from distill_assets.defs.telemetry.competence import competence, hard_negative_pairs
from distill_assets.defs.telemetry.episodes import EPISODE_SCHEMA
from distill_assets.lib.embed import load_embedder

TASK = "Create a large storage jar using the fast wheel"


def step(index: int, reward: float, *, last: bool, terminal: bool, instruction: str = TASK) -> dict:
    return {
        "step_index": index,
        "is_first": index == 0,
        "is_last": last,
        "is_terminal": terminal,
        "observation": {
            "game_state": "{}",
            "inventory": [],
            "skill_state": "{}",
            "natural_language_instruction": instruction,
        },
        "action": {
            "action_type": "wheel_manipulation",
            "action_details": '{"hand_pressure":0.6}',
            "action_tokens": [153],
        },
        "reward": reward,
        "discount": 0.0 if terminal else 0.99,
    }


def episode(name, player, rewards, *, ended=True, success=False, score=None, instruction=TASK):
    n = len(rewards)
    return {
        "episode_id": name,
        "player_key": player,
        "session_id": "s",
        "event_time": 0.0,
        "ended": ended,
        "success": success,
        "task_description": TASK,
        "competence_score": score,
        "total_steps": n,
        "flagged_steps": 0,
        "steps": [
            step(i, r, last=i == n - 1, terminal=ended and i == n - 1, instruction=instruction)
            for i, r in enumerate(rewards)
        ],
    }


def frame(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=EPISODE_SCHEMA)


def test_classes_and_reasons() -> None:
    episodes = frame(
        [
            episode("expert", "a", [1.0] * 5, success=True, score=0.9),
            episode("noise", "a", [1.0] * 5, success=True, score=0.39),
            # peak 0.9 in the first 80% (4 of 5 steps), then failure: hard negative
            episode("late_fail", "b", [0.2, 0.9, 0.5, 0.5, 0.0], score=0.6),
            # the same late failure scored above the seed's 0.40-0.70 band: not a hard negative
            episode("late_fail_above_band", "b", [0.2, 0.9, 0.5, 0.5, 0.0], score=0.71),
            # at the band's upper edge it still is one
            episode("late_fail_at_edge", "b", [0.2, 0.9, 0.5, 0.5, 0.0], score=0.70),
            # the high reward only in the final 20%: not a hard negative
            episode("early_fail", "b", [0.2, 0.2, 0.2, 0.2, 0.9], score=0.6),
            # no end event: never a hard negative
            episode("cut", "b", [0.9] * 5, ended=False, score=0.6),
        ]
    )
    out = competence(episodes, load_embedder())
    got = {r["episode_id"]: (r["competence"], r["reason"]) for r in out.iter_rows(named=True)}
    assert got == {
        "expert": ("expert", "score_above_expert_threshold"),
        "noise": ("noise", "score_below_noise_threshold"),
        "late_fail": ("hard_negative", "late_failure_after_high_reward"),
        "late_fail_above_band": ("ordinary", "between_thresholds"),
        "late_fail_at_edge": ("hard_negative", "late_failure_after_high_reward"),
        "early_fail": ("ordinary", "between_thresholds"),
        "cut": ("ordinary", "between_thresholds"),
    }
    assert (
        out.filter(pl.col("episode_id") == "late_fail").item(0, "peak_intermediate_reward") == 0.9
    )
    assert set(out.get_column("score_source")) == {"game"}


def test_without_a_game_score_the_embedder_similarity_decides() -> None:
    episodes = frame(
        [
            episode("on_task", "a", [1.0] * 3, success=True, instruction=TASK),
            episode("off_task", "a", [1.0] * 3, success=True, instruction="zq xv kw"),
        ]
    )
    out = competence(episodes, load_embedder()).sort("episode_id")
    scores = dict(zip(out["episode_id"], out["score"], strict=True))
    assert scores["on_task"] > scores["off_task"]
    assert out.get_column("score_source").to_list() == ["embedder", "embedder"]


def test_hard_negative_pairs_with_the_best_successes_of_its_task() -> None:
    episodes = frame(
        [
            episode("s1", "a", [1.0] * 5, success=True, score=0.95),
            episode("s2", "b", [1.0] * 5, success=True, score=0.9),
            episode("s3", "c", [1.0] * 5, success=True, score=0.8),
            episode("hn", "d", [0.2, 0.9, 0.5, 0.5, 0.0], score=0.6),
        ]
    )
    classes = competence(episodes, load_embedder())
    pairs = hard_negative_pairs(episodes, classes)
    assert pairs.get_column("source_ref").to_list() == ["episodes:s1+hn", "episodes:s2+hn"]
    meta = json.loads(pairs.item(0, "metadata"))
    assert (meta["user_id_chosen"], meta["user_id_rejected"]) == ("a", "d")
    assert meta["reward_diff"] == 2.9  # returns 5.0 - 2.1
    excluded = pl.DataFrame({"player_key": ["a"]})
    again = hard_negative_pairs(episodes, classes, excluded)
    assert again.get_column("source_ref").to_list() == ["episodes:s2+hn", "episodes:s3+hn"]
