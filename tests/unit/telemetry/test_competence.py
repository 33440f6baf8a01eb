"""Competence filter (docs/sources/telemetry.md#competence; `rules/telemetry_competence.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from distill_assets.defs.telemetry import competence as competence_module
from distill_assets.defs.telemetry.competence import (
    COMPETENCE_SCHEMA,
    competence,
    hard_negative_pairs,
    write_competence,
)
from distill_assets.defs.telemetry.episodes import EPISODE_SCHEMA, build_episodes
from distill_assets.lib.embed import Embedder, load_embedder

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


def silver(rows: list[tuple[str, str, str, float, dict]], tmp_path: Path) -> pl.LazyFrame:
    """Silver events (event_id, event_type, player_key, time, payload) scanned from Parquet."""
    path = tmp_path / "silver.parquet"
    pl.DataFrame(
        [
            (event_id, kind, player, "s", time, seq, json.dumps(payload))
            for seq, (event_id, kind, player, time, payload) in enumerate(rows, start=1)
        ],
        schema={
            "event_id": pl.String,
            "event_type": pl.String,
            "player_key": pl.String,
            "session_id": pl.String,
            "event_time": pl.Float64,
            "event_seq": pl.Int64,
            "payload": pl.String,
        },
        orient="row",
    ).write_parquet(path)
    return pl.scan_parquet(path)


def recorded_step(episode_id: str | None, index: int | None, **fields: object) -> dict:
    payload = {
        "episode_id": episode_id,
        "step_index": index,
        "observation": {"natural_language_instruction": fields.get("instruction", TASK)},
        "action": {"action_type": fields.get("action", "wheel_manipulation")},
    }
    if "reward" in fields:
        payload["reward"] = fields["reward"]
    return payload


def ending(episode_id: str, success: bool, score: float | None, task: str | None = TASK) -> dict:
    return {
        "episode_id": episode_id,
        "success": success,
        "task_description": task,
        "competence_score": score,
    }


def a_day(tmp_path: Path) -> pl.LazyFrame:
    """Episodes of every kind; their steps and ends out of order and interleaved."""
    rows = [
        # a late failure, steps recorded out of order, two ends (the earlier one counts)
        ("lf-end-2", "episode_end", "b", 90.0, ending("late", False, 0.2)),
        ("lf-0", "trajectory_step", "b", 10.0, recorded_step("late", 0, reward=0.2)),
        ("lf-1", "trajectory_step", "b", 11.0, recorded_step("late", 1)),
        ("lf-2", "trajectory_step", "b", 12.0, recorded_step("late", 2, reward=0.5)),
        ("lf-4", "trajectory_step", "b", 14.0, recorded_step("late", 4, reward=0.0)),
        ("lf-3", "trajectory_step", "b", 13.0, recorded_step("late", 3, reward=0.9)),
        ("lf-end-9", "episode_end", "b", 20.0, ending("late", False, 0.6)),
        # truncated: no end, the task is the first instruction given (in step order)
        ("cut-2", "trajectory_step", "d", 3.0, recorded_step("cut", 2, action=None)),
        ("cut-0", "trajectory_step", "c", 1.0, recorded_step("cut", 0, instruction=None)),
        ("cut-1", "trajectory_step", "c", 2.0, recorded_step("cut", 1, instruction="zq xv")),
        # scored by the embedder: no game score, the end names the task
        ("emb-0", "trajectory_step", "a", 5.0, recorded_step("emb", 0, reward=1.0)),
        ("emb-1", "trajectory_step", "a", 6.0, recorded_step("emb", 1, reward=1.0)),
        ("emb-end", "episode_end", "a", 7.0, ending("emb", True, None)),
        # an end without a task: the first instruction is the task
        ("nt-0", "trajectory_step", "a", 8.0, recorded_step("nt", 0, instruction="make a jar")),
        ("nt-end", "episode_end", "a", 9.0, ending("nt", False, None, task=None)),
        # not steps of an episode: no episode_id, no step_index; an end without steps
        ("orphan", "trajectory_step", "a", 4.0, recorded_step(None, 0)),
        ("unindexed", "trajectory_step", "a", 4.5, recorded_step("emb", None)),
        ("lonely-end", "episode_end", "a", 30.0, ending("lonely", True, 0.9)),
        ("other", "decision", "a", 31.0, {"scenario_id": "famine"}),
    ]
    rows += [
        (f"x{n}-{i}", "trajectory_step", "e", 40.0 + n, recorded_step(f"x{n}", i, reward=0.1 * i))
        for n in range(8)
        for i in range(3)
    ]
    rows += [
        (f"x{n}-end", "episode_end", "e", 60.0 + n, ending(f"x{n}", n % 2 == 0, 0.1 * n))
        for n in range(0, 8, 3)
    ]
    return silver(rows, tmp_path)


@pytest.mark.parametrize("bucket_steps", [3, 100_000])
def test_the_day_written_bucket_by_bucket_is_competence_of_the_days_episodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bucket_steps: int
) -> None:
    monkeypatch.setattr(competence_module, "BUCKET_STEPS", bucket_steps)
    scored: list[int] = []

    def scoring(episodes: pl.DataFrame, embedder: Embedder) -> pl.DataFrame:
        scored.append(episodes.height)
        return competence(episodes, embedder)

    monkeypatch.setattr(competence_module, "competence", scoring)
    events = a_day(tmp_path)
    target = tmp_path / "competence.parquet"
    assert write_competence(events, load_embedder(), target) == 12
    # 37 steps: 13 buckets of about 3 steps, or one
    assert (len(scored) > 1, sum(scored)) == (bucket_steps == 3, 12)
    written = pl.read_parquet(target)
    assert_frame_equal(written, competence(build_episodes(events), load_embedder()))
    assert written.schema == COMPETENCE_SCHEMA
    late = written.row(by_predicate=pl.col("episode_id") == "late", named=True)
    assert (late["score"], late["peak_intermediate_reward"], late["competence"]) == (
        0.6,
        0.9,
        "hard_negative",
    )
    tasks = dict(written.select("episode_id", "task_description").iter_rows())
    assert (tasks["cut"], tasks["nt"], tasks["emb"]) == ("zq xv", "make a jar", TASK)
    ids = ["cut", "emb", "late", "nt", *(f"x{n}" for n in range(8))]
    assert written.get_column("episode_id").to_list() == ids


def test_a_day_without_ends_or_steps_writes_its_rows_or_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(competence_module, "BUCKET_STEPS", 2)
    truncated = silver(
        [
            (f"t{n}", "trajectory_step", "a", float(n), recorded_step(f"t{n % 3}", n))
            for n in range(6)
        ],
        tmp_path,
    )
    target = tmp_path / "competence.parquet"
    assert write_competence(truncated, load_embedder(), target) == 3
    assert_frame_equal(
        pl.read_parquet(target), competence(build_episodes(truncated), load_embedder())
    )
    nothing = silver([("d", "decision", "a", 1.0, {"scenario_id": "famine"})], tmp_path)
    assert write_competence(nothing, load_embedder(), target) == 0
    assert pl.read_parquet(target).schema == COMPETENCE_SCHEMA
