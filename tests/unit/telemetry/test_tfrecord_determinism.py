"""The RLDS TFRecord export is byte-identical across processes (protobuf maps are unordered)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

WRITE = """
import sys
from pathlib import Path
import polars as pl
from distill_assets.defs.telemetry.tfrecord import read_episodes, write_episodes

def step(i, last):
    return {
        "step_index": i, "is_first": i == 0, "is_last": last, "is_terminal": last,
        "observation": {"game_state": '{"hp": 3}', "inventory": ["clay", "wheel"],
                        "skill_state": '{"pottery": 2}',
                        "natural_language_instruction": "throw a bowl"},
        "action": {"action_type": "craft", "action_details": '{"pressure": 0.5}',
                   "action_tokens": [192, 320]},
        "reward": 0.5 * i, "discount": 0.0 if last else 0.99,
    }

episodes = pl.DataFrame([
    {"id": f"e{n}", "episode_id": f"ep{n}", "task_description": "make a bowl",
     "success": n % 2 == 0, "steps": [step(i, i == 2) for i in range(3)]}
    for n in range(4)
])
path = Path(sys.argv[1])
assert write_episodes(episodes, path) == 4
assert [len(seq["step_index"]) for _, seq in read_episodes(path)] == [3, 3, 3, 3]
"""


def _write(path: Path, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run([sys.executable, "-c", WRITE, str(path)], check=True, env=env)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_same_episodes_give_the_same_bytes_in_any_process(tmp_path: Path) -> None:
    digests = {_write(tmp_path / f"rlds-{seed}.tfrecord", seed) for seed in ("1", "2", "3")}
    assert len(digests) == 1
