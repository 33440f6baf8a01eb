"""RLDS episodes as TFRecord files of `tf.train.SequenceExample`.

See docs/sources/telemetry.md#tfrecord.

One SequenceExample per episode: the context holds the episode (`episode_id`, `task_description`,
`success`, `total_steps`, `id`), the feature lists one entry per step in step order, with the
published step layout flattened to RLDS names (`step_index`, `is_first`, `is_last`,
`is_terminal`, `reward`, `discount`, `action/action_type`, `action/action_details` (JSON),
`action/action_tokens` (int64 list), `observation/game_state` (JSON),
`observation/skill_state` (JSON), `observation/natural_language_instruction`,
`observation/inventory` (bytes list)). Written and read with the small `tfrecord` package (no
TensorFlow); records are framed and CRC-checked as TensorFlow writes them, so
`tf.data.TFRecordDataset` + `tf.io.parse_single_sequence_example` read them too.
Files: `tfrecord/rlds-<split>.tfrecord` in the release's version folder, episodes in id order.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl
from tfrecord import TFRecordWriter, example_pb2
from tfrecord.reader import sequence_loader

FOLDER = "tfrecord"
CONFIG = "rlds"
CONTEXT: dict[str, str] = {
    "id": "byte",
    "episode_id": "byte",
    "task_description": "byte",
    "success": "int",
    "total_steps": "int",
}
SEQUENCE: dict[str, str] = {
    "step_index": "int",
    "is_first": "int",
    "is_last": "int",
    "is_terminal": "int",
    "reward": "float",
    "discount": "float",
    "action/action_type": "byte",
    "action/action_details": "byte",
    "action/action_tokens": "int",
    "observation/game_state": "byte",
    "observation/skill_state": "byte",
    "observation/natural_language_instruction": "byte",
    "observation/inventory": "byte",
}


def _step_values(steps: list[dict[str, Any]]) -> dict[str, list[Any]]:
    obs = [s["observation"] for s in steps]
    act = [s["action"] for s in steps]
    return {
        "step_index": [s["step_index"] for s in steps],
        "is_first": [int(s["is_first"]) for s in steps],
        "is_last": [int(s["is_last"]) for s in steps],
        "is_terminal": [int(s["is_terminal"]) for s in steps],
        "reward": [s["reward"] for s in steps],
        "discount": [s["discount"] for s in steps],
        "action/action_type": [a["action_type"].encode() for a in act],
        "action/action_details": [a["action_details"].encode() for a in act],
        "action/action_tokens": [list(a["action_tokens"]) for a in act],
        "observation/game_state": [o["game_state"].encode() for o in obs],
        "observation/skill_state": [o["skill_state"].encode() for o in obs],
        "observation/natural_language_instruction": [
            o["natural_language_instruction"].encode() for o in obs
        ],
        "observation/inventory": [[i.encode() for i in o["inventory"]] for o in obs],
    }


class _DeterministicWriter(TFRecordWriter):
    """A `TFRecordWriter` whose records are serialized deterministically.

    Protobuf map fields (a SequenceExample's features) serialize in an unspecified order that
    differs between processes, so the same episodes gave different bytes; deterministic
    serialization orders map keys, so a rerun writes byte-identical files.
    """

    def write(
        self,
        datum: dict[str, tuple[Any, str]],
        sequence_datum: dict[str, tuple[list[Any], str]] | None = None,
    ) -> None:
        """Frame one SequenceExample (length, CRCs) as TensorFlow does, with sorted map keys."""
        record = example_pb2.SequenceExample.FromString(
            TFRecordWriter.serialize_tf_sequence_example(datum, sequence_datum or {})
        ).SerializeToString(deterministic=True)
        length_bytes = struct.pack("<Q", len(record))
        self.file.write(length_bytes)
        self.file.write(TFRecordWriter.masked_crc(length_bytes))
        self.file.write(record)
        self.file.write(TFRecordWriter.masked_crc(record))


def write_episodes(episodes: pl.DataFrame, path: Path) -> int:
    """Write `rlds` rows (id, episode_id, task_description, success, steps) to one TFRecord file.

    Returns the number of episodes written. A per-episode loop: the release writes each
    published episode once, off the daily hot path.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = _DeterministicWriter(str(path))
    try:
        for row in episodes.sort("id").iter_rows(named=True):
            steps = row["steps"]
            context = {
                "id": (row["id"].encode(), "byte"),
                "episode_id": (row["episode_id"].encode(), "byte"),
                "task_description": (row["task_description"].encode(), "byte"),
                "success": (int(row["success"]), "int"),
                "total_steps": (len(steps), "int"),
            }
            values = _step_values(steps)
            writer.write(context, {name: (values[name], kind) for name, kind in SEQUENCE.items()})
    finally:
        writer.close()
    return episodes.height


def write_release_files(
    curated: Mapping[str, pl.DataFrame], newest_partition: str | None, out_dir: Path
) -> list[Path]:
    """Release extras writer: each split's `rlds` episodes as `tfrecord/rlds-<split>.tfrecord`.

    `newest_partition` is not needed (the files depend on the published rows only).
    """
    episodes = curated.get(CONFIG)
    if episodes is None or episodes.is_empty():
        return []
    written = []
    for split in episodes.get_column("split").unique().sort().to_list():
        path = out_dir / FOLDER / f"{CONFIG}-{split}.tfrecord"
        write_episodes(episodes.filter(pl.col("split") == split), path)
        written.append(path)
    return written


def read_episodes(path: Path) -> list[tuple[dict[str, Any], dict[str, list[Any]]]]:
    """Read a TFRecord file of episodes back as (context, step feature lists) per episode."""
    return list(sequence_loader(str(path), None, CONTEXT, SEQUENCE))
