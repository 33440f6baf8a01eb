"""The `rlds` TFDS folder written without TensorFlow (issue 26; `defs/telemetry/tfrecord.py`).

Loading it with tensorflow-datasets and checking it with `rlds` is `tests/clients/test_tfds.py`
(`make test-clients-tfds`); here: the files, the Example layout TFDS reads, determinism.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import polars as pl

from distill_assets.defs.telemetry import tfrecord
from distill_assets.defs.telemetry.episodes import rlds_steps
from distill_assets.defs.telemetry.tfrecord import (
    feature_spec,
    write_release_files,
)
from tests.unit.telemetry.rlds_frames import episodes_frame, read_examples

EPISODES = {"a": ([1.0, 0.5], True), "b": ([0.25], False), "c": ([2.0, 1.0, 0.5], True)}


def rlds_rows() -> pl.DataFrame:
    frame = episodes_frame(EPISODES)
    return frame.select(
        ("id-" + pl.col("episode_id")).alias("id"),
        pl.lit("telemetry").alias("source"),
        ("episode:" + pl.col("episode_id")).alias("source_ref"),
        pl.lit(0.75).alias("quality_score"),
        pl.lit("{}").alias("metadata"),
        "episode_id",
        pl.lit("make a jar").alias("task_description"),
        pl.col("ended").alias("success"),
        rlds_steps(frame).alias("steps"),
        pl.Series(["train", "test", "train"]).alias("split"),
    )


def test_the_release_gets_a_tfds_folder_a_feature_spec_and_an_action_space(tmp_path: Path):
    written = write_release_files({"rlds": rlds_rows()}, None, tmp_path)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == [
        "rlds/action_space.json",
        "rlds/feature_spec.json",
        "rlds/tfds/dataset_info.json",
        "rlds/tfds/features.json",
        "rlds/tfds/rlds-test.tfrecord-00000-of-00001",
        "rlds/tfds/rlds-train.tfrecord-00000-of-00001",
    ]
    info = json.loads((tmp_path / "rlds/tfds/dataset_info.json").read_text())
    assert (info["name"], info["version"], info["fileFormat"]) == ("rlds", "1.0.0", "tfrecord")
    shard = tmp_path / "rlds/tfds/rlds-train.tfrecord-00000-of-00001"
    assert info["splits"][1] == {
        "filepathTemplate": "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}",
        "name": "train",
        "numBytes": str(shard.stat().st_size),
        "shardLengths": ["2"],
    }
    features = json.loads((tmp_path / "rlds/tfds/features.json").read_text())
    steps = features["featuresDict"]["features"]["steps"]
    assert steps["pythonClassName"].endswith("dataset_feature.Dataset")
    step = steps["sequence"]["feature"]["featuresDict"]["features"]
    assert sorted(step) == [
        "action", "discount", "is_first", "is_last", "is_terminal", "observation", "reward",
        "step_index",
    ]  # fmt: skip
    tokens = step["action"]["featuresDict"]["features"]["action_tokens"]["tensor"]
    assert tokens == {"dtype": "int64", "encoding": "none", "shape": {"dimensions": ["4"]}}


def test_an_episode_is_one_example_with_nested_step_keys(tmp_path: Path) -> None:
    write_release_files({"rlds": rlds_rows()}, None, tmp_path)
    a, c = read_examples(tmp_path / "rlds/tfds/rlds-train.tfrecord-00000-of-00001")
    assert a["episode_id"] == [b"a"] and c["episode_id"] == [b"c"]  # id order
    assert a["success"] == [1]
    assert a["steps/step_index"] == [0, 1, 2]
    assert a["steps/is_last"] == [0, 0, 1]
    assert a["steps/is_terminal"] == [0, 0, 1]
    assert a["steps/reward"] == [1.0, 0.5, 0.0]
    assert a["steps/action/action_tokens"] == [153, 332, 640, 1024] * 2 + [1024] * 4
    assert a["steps/action/action_type"] == [b"wheel_manipulation"] * 2 + [b""]
    # a variable-length list per step as JSON text: a ragged feature would break step batching
    clay = b'["prepared_clay_5kg"]'
    assert a["steps/observation/inventory"] == [b"[]", clay, clay]
    assert c["steps/observation/inventory"] == [
        b"[]",
        clay,
        b'["prepared_clay_5kg", "water_vessel"]',
        b'["prepared_clay_5kg", "water_vessel"]',
    ]
    moisture = a["steps/observation/game_state_values/clay_moisture"]
    assert [round(m, 4) for m in moisture] == [0.8, 0.7, 0.7]
    symmetry = a["steps/observation/game_state_values/symmetry"]
    assert len(symmetry) == 3 and all(math.isnan(v) for v in symmetry)  # the game gave none


AWKWARD_ITEMS = ['say "hi"', "back\\slash", "tab\tnew\nline\x00\x1f\x7f", "é ☃ 🐍", "\u2028", ""]


def test_json_text_and_numbers_come_back_exactly_as_python_would_write_them(
    tmp_path: Path,
) -> None:
    rows = rlds_rows()
    steps = rows.get_column("steps").to_list()
    steps[0][0]["observation"]["inventory"] = AWKWARD_ITEMS
    steps[0][1]["observation"]["inventory"] = None
    steps[0][1]["observation"]["game_state"] = None
    steps[0][2]["observation"]["inventory"] = ["kept", None]
    steps[0][0]["reward"] = -1e-45  # rounds to float32 as struct.pack("<f") does
    steps[0][0]["step_index"] = -(2**40)
    rows = rows.with_columns(pl.Series("steps", steps, dtype=rows.schema["steps"]))
    write_release_files({"rlds": rows}, None, tmp_path)
    a, _ = read_examples(tmp_path / "rlds/tfds/rlds-train.tfrecord-00000-of-00001")
    assert a["steps/observation/inventory"] == [
        json.dumps(AWKWARD_ITEMS, ensure_ascii=False).encode(),
        b"null",
        b'["kept", null]',
    ]
    assert a["steps/observation/game_state"][1] == b"null"
    assert a["steps/step_index"][0] == -(2**40)
    assert a["steps/reward"][0] == struct.unpack("<f", struct.pack("<f", -1e-45))[0]


def test_batches_of_episodes_write_the_same_bytes_as_one(tmp_path: Path, monkeypatch) -> None:
    write_release_files({"rlds": rlds_rows()}, None, tmp_path / "one")
    monkeypatch.setattr(tfrecord, "BATCH_EPISODES", 1)
    write_release_files({"rlds": rlds_rows()}, None, tmp_path / "each")
    for name in ("rlds-train.tfrecord-00000-of-00001", "dataset_info.json"):
        one = (tmp_path / "one/rlds/tfds" / name).read_bytes()
        assert (tmp_path / "each/rlds/tfds" / name).read_bytes() == one


def test_the_feature_spec_lists_every_step_feature_with_dtype_and_shape() -> None:
    spec = {f["path"]: (f["dtype"], f["shape"]) for f in feature_spec()["features"]}
    assert spec["steps/action/action_tokens"] == ("int64", [4])
    assert spec["steps/observation/inventory"] == ("string", [])
    encodings = {f["path"]: f["encoding"] for f in feature_spec()["features"]}
    assert encodings["steps/observation/inventory"] == "json"
    assert encodings["steps/observation/game_state"] == "json"
    assert encodings["steps/observation/natural_language_instruction"] == "none"
    assert spec["steps/observation/skill_state_values/pottery"] == ("float32", [])
    assert spec["steps/is_last"] == ("bool", [])
    assert spec["id"] == ("string", [])
    assert feature_spec()["pad_token"] == 1024


WRITE = """
import sys
from pathlib import Path
from distill_assets.defs.telemetry.tfrecord import write_release_files
from tests.unit.telemetry.test_tfds_folder import rlds_rows
write_release_files({"rlds": rlds_rows()}, None, Path(sys.argv[1]))
"""


def _digest(folder: Path, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    subprocess.run([sys.executable, "-c", WRITE, str(folder)], check=True, env=env)
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    return hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()


def test_the_same_episodes_give_the_same_bytes_in_any_process(tmp_path: Path) -> None:
    # protobuf map fields serialize in an unspecified order unless asked to be deterministic
    assert len({_digest(tmp_path / seed, seed) for seed in ("1", "2", "3")}) == 1


CLASH = """
import distill_assets.defs.release.extras
import distill_assets.defs.telemetry.tfrecord
from google.protobuf import descriptor_pool
try:
    descriptor_pool.Default().FindMessageTypeByName("tensorflow.BytesList")
except KeyError:
    pass
else:
    raise SystemExit("tensorflow.BytesList is registered: `import tensorflow` would fail")
"""


def test_writing_registers_no_tensorflow_protos_that_would_clash_with_tensorflow() -> None:
    # the `tfrecord` package's generated classes made `import tensorflow` fail in the same
    # process ("duplicate symbol 'tensorflow.BytesList'")
    subprocess.run([sys.executable, "-c", CLASH], check=True)
