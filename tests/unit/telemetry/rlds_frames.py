"""Tiny `rlds` frames shared by the RLDS unit and client tests (built on the published dtype)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from distill_assets.contracts.published import RLDS_STEPS_DTYPE
from distill_assets.lib import tfexample
from distill_assets.rules import action_tokens as rules

POTTERY_TOKENS = [153, 332, 640, rules.PAD_TOKEN]


def recorded_step(index: int, reward: float, *, ended: bool, last: bool) -> dict:
    """One step as `build_episodes` records it (one per action)."""
    moisture = round(0.8 - 0.1 * index, 2)
    return {
        "step_index": index,
        "is_first": index == 0,
        "is_last": last,
        "is_terminal": ended and last,
        "observation": {
            "game_state": json.dumps({"clay_moisture": moisture, "wheel_speed": 0.5}),
            "game_state_values": {
                "clay_moisture": moisture,
                "wheel_speed": 0.5,
                "wall_thickness": None,
                "symmetry": None,
            },
            "inventory": ["prepared_clay_5kg", "water_vessel"][: index % 3],
            "skill_state": '{"pottery": 3}',
            "skill_state_values": {"pottery": 3.0, "wheel_throwing": None},
            "natural_language_instruction": f"shape step {index}",
        },
        "action": {
            "action_type": "wheel_manipulation",
            "action_details": '{"hand_pressure": 0.6, "lift_rate": 0.3, "wheel_speed_adjust": 0}',
            "action_tokens": POTTERY_TOKENS,
        },
        "reward": reward,
        "discount": 0.0 if ended and last else rules.DISCOUNT,
    }


def recorded_steps(rewards: list[float], *, ended: bool) -> list[dict]:
    """An episode's recorded steps with these rewards."""
    n = len(rewards)
    return [recorded_step(i, r, ended=ended, last=i == n - 1) for i, r in enumerate(rewards)]


def episodes_frame(episodes: dict[str, tuple[list[float], bool]]) -> pl.DataFrame:
    """episode_id -> (rewards, ended) as a frame of episode_id, ended, recorded steps."""
    return pl.DataFrame(
        {
            "episode_id": list(episodes),
            "ended": [ended for _, ended in episodes.values()],
            "steps": [recorded_steps(r, ended=ended) for r, ended in episodes.values()],
        },
        schema={"episode_id": pl.String, "ended": pl.Boolean, "steps": RLDS_STEPS_DTYPE},
    )


def read_examples(path: Path) -> list[dict[str, list[Any]]]:
    """Read a TFDS shard back (no TensorFlow): per episode, each feature key's list of values."""
    return [tfexample.parse_example(record) for record in tfexample.read_records(path)]
