"""The `rlds` release as TFDS and RLDS users load it (issue 26; `make test-clients-tfds`).

Needs the `clients-tfds` extra (TensorFlow, tensorflow-datasets, rlds, dm-reverb), which `make
test` does not install: without it every test here is skipped. The release comes from the real
definitions over the planted telemetry day of `tests/assets/test_telemetry_training.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from distill_assets.defs.curation.curated_table import read_curated
from distill_assets.lib.settings import Settings
from tests.assets.test_telemetry_training import trained  # noqa: F401  (module fixture)

tf = pytest.importorskip("tensorflow")
tfds = pytest.importorskip("tensorflow_datasets")
rlds = pytest.importorskip("rlds")

# the published planted episodes' recorded rewards (test_telemetry_training.planted; hugo's
# innovation episode is a near duplicate of gina's, which the cross-player dedup keeps)
RETURNS = {"ep-alice": 5.0, "ep-bob-fail": 3.5, "ep-bob-cut": 1.5, "innovation-gina": 3.6}
ACTIONS = {"ep-alice": 5, "ep-bob-fail": 5, "ep-bob-cut": 3, "innovation-gina": 4}


def release(settings: Settings) -> Path:
    return Path(settings.hub_root) / settings.dataset_name / "latest"


@pytest.fixture(scope="module")
def builder(trained: Settings) -> Any:  # noqa: F811
    # the symptom: "Could not load dataset info ... dataset_info.json"
    return tfds.builder_from_directory(str(release(trained) / "rlds" / "tfds"))


def episodes(builder: Any) -> dict[str, dict[str, Any]]:
    """Every episode of every split: episode_id -> {split, steps (numpy dicts)}."""
    out = {}
    for split in builder.info.splits:
        for episode in builder.as_dataset(split=split):
            steps = list(tfds.as_numpy(episode[rlds.STEPS]))
            out[episode["episode_id"].numpy().decode()] = {"split": split, "steps": steps}
    return out


def test_tfds_loads_the_same_episodes_and_splits_as_the_hf_config(
    trained: Settings,  # noqa: F811
    builder: Any,
) -> None:
    rows = read_curated(trained.lake_root, "rlds", ["episode_id", "split"])
    loaded = episodes(builder)
    assert {k: v["split"] for k, v in loaded.items()} == dict(rows.iter_rows())
    assert sorted(loaded) == sorted(RETURNS)


def test_rlds_accepts_every_split(builder: Any) -> None:
    # the symptom: flat `observation/...` keys made is_valid_rlds_dataset False
    for split in builder.info.splits:
        assert rlds.rlds_types.is_valid_rlds_dataset(builder.as_dataset(split=split))


def test_returns_under_rlds_rules_equal_the_data(builder: Any) -> None:
    # the symptom: the is_last step carried a real action and reward, so RLDS dropped them
    returns = {}
    for split in builder.info.splits:
        for episode in builder.as_dataset(split=split):
            valid = episode[rlds.STEPS].filter(lambda step: not step[rlds.IS_LAST])
            total = rlds.transformations.sum_dataset(valid, lambda step: step[rlds.REWARD])
            returns[episode["episode_id"].numpy().decode()] = round(float(total), 5)  # float32
    assert returns == RETURNS


def test_transitions_keep_every_recorded_action(builder: Any) -> None:
    # SARS' pairs of consecutive steps (rlds.transformations.batch, shift 1): one per action;
    # batching whole steps also needs every step feature to have one shape
    for split in builder.info.splits:
        for episode in builder.as_dataset(split=split):
            steps = episode[rlds.STEPS]
            pairs = rlds.transformations.batch(steps, size=2, shift=1, drop_remainder=True)
            tokens = [p[rlds.ACTION]["action_tokens"][0].numpy().tolist() for p in pairs]
            name = episode["episode_id"].numpy().decode()
            assert tokens == [[153, 332, 640, 1024]] * ACTIONS[name]


def test_tokens_have_a_static_shape_and_observations_are_numbers(builder: Any) -> None:
    dataset = builder.as_dataset(split="+".join(builder.info.splits))
    steps_spec = dataset.element_spec[rlds.STEPS].element_spec
    assert steps_spec[rlds.ACTION]["action_tokens"] == tf.TensorSpec((4,), tf.int64)
    assert all(spec.shape.is_fully_defined() for spec in tf.nest.flatten(steps_spec))
    values = steps_spec[rlds.OBSERVATION]["game_state_values"]
    assert values["clay_moisture"] == tf.TensorSpec((), tf.float32)
    alice = episodes(builder)["ep-alice"]["steps"]
    moisture = [s[rlds.OBSERVATION]["game_state_values"]["clay_moisture"] for s in alice]
    assert [round(float(m), 4) for m in moisture] == [0.7, 0.69, 0.68, 0.67, 0.66, 0.66]
    assert [bool(s[rlds.IS_TERMINAL]) for s in alice] == [False] * 5 + [True]
    # fixed-length tokens batch across steps (reverb patterns need one shape)
    flat = dataset.flat_map(lambda episode: episode[rlds.STEPS])
    batch = next(iter(flat.batch(3)))
    assert batch[rlds.ACTION]["action_tokens"].shape == (3, 4)


def test_feature_spec_and_action_space_match_what_tfds_reads(
    trained: Settings,  # noqa: F811
    builder: Any,
) -> None:
    folder = release(trained) / "rlds"
    spec = json.loads((folder / "feature_spec.json").read_text())
    for feature in spec["features"]:
        node: Any = builder.info.features
        for part in feature["path"].split("/"):
            node = node[part]
        assert node.dtype.name == feature["dtype"], feature["path"]
    space = json.loads((folder / "action_space.json").read_text())
    assert (space["vocab_size"], space["bins_per_axis"], space["pad_token"]) == (1024, 256, 1024)
    ranges = [a["token_range"] for a in space["axes"]]
    assert ranges == [[0, 255], [256, 511], [512, 767], [768, 1023]]
