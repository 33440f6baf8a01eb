"""RLDS episodes as a TFDS dataset folder, written without TensorFlow.

See docs/sources/telemetry.md#tfds-folder.

Each release writes `rlds/tfds/` beside `data/`: `dataset_info.json`, `features.json` and one
shard per split, `rlds-<split>.tfrecord-00000-of-00001`, so that
`tfds.builder_from_directory("<version>/rlds/tfds")` loads the episodes and `rlds` accepts them
(every episode has a nested `steps` dataset with `observation`, `action`, `reward`, `discount`,
`is_first`, `is_last`, `is_terminal`). It also writes `rlds/feature_spec.json` (every feature's
path, dtype, shape and meaning) and `rlds/action_space.json` (token axes, ranges, bins, pad).

TFDS serializes an episode as one `tf.train.Example` whose keys are the feature paths joined by
`/`: an episode field is a one-value list; a field of the nested `steps` dataset lists the
values of every step in order (`steps/reward`: one float per step; `steps/action/action_tokens`:
TOKENS_PER_STEP ints per step, flattened). Every step feature has a fixed shape, so steps batch
(`rlds.transformations.batch`, reverb patterns): the variable-length `inventory` is a JSON array
string here (a TFDS `Sequence` would be ragged and break batching). Booleans are int64 0/1, floats
float32, strings UTF-8 bytes. The JSON files follow what `tfds.core.DatasetInfo.write_to_directory`
writes (`features.json` from `FeatureConnector.to_json`, `dataset_info.json` from the
`DatasetInfo` proto as JSON).

Examples are encoded and framed by `lib/tfexample.py` (protobuf wire format and TFRecord framing
without TensorFlow or generated protobuf classes), deterministically: a rerun writes identical
bytes.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from distill_assets.defs.telemetry.action_space import action_space
from distill_assets.lib import tfexample
from distill_assets.rules import action_tokens as rules

CONFIG = "rlds"
FOLDER = "rlds"
TFDS_FOLDER = f"{FOLDER}/tfds"
DATASET_NAME = "rlds"
# the version of this folder's feature layout (TFDS wants major.minor.patch), not the release's
TFDS_VERSION = "1.0.0"
SHARD_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
_FEATURES_MODULE = "tensorflow_datasets.core.features"
_TEXT = f"{_FEATURES_MODULE}.text_feature.Text"
_TENSOR = f"{_FEATURES_MODULE}.tensor_feature.Tensor"
_DICT = f"{_FEATURES_MODULE}.features_dict.FeaturesDict"
_DATASET = f"{_FEATURES_MODULE}.dataset_feature.Dataset"

# A leaf: (dtype, shape, meaning); dtype int64 | float32 | bool | string | json (a string of JSON
# text: published JSON strings as they are, lists dumped compactly); shape () is a scalar, (n,) a
# fixed-length vector. A dict is a nested FeaturesDict.
Leaf = tuple[str, tuple[int, ...], str]
_VALUES_DOC = "the game's number; NaN when the step lacks it"
STEP_FEATURES: dict[str, Any] = {
    "step_index": ("int64", (), "the game's step index; the final step's is the last one + 1"),
    "is_first": ("bool", (), "true on the first step only"),
    "is_last": ("bool", (), "true on the final, observation-only step (action/reward invalid)"),
    "is_terminal": ("bool", (), "true on the final step when the game ended the episode"),
    "observation": {
        "game_state": ("json", (), "the game state as a JSON object string"),
        "game_state_values": {key: ("float32", (), _VALUES_DOC) for key in rules.GAME_STATE_KEYS},
        "skill_state": ("json", (), "the skill levels as a JSON object string"),
        "skill_state_values": {key: ("float32", (), _VALUES_DOC) for key in rules.SKILL_STATE_KEYS},
        "inventory": ("json", (), "item names held, as a JSON array string"),
        "natural_language_instruction": ("string", (), "the current objective"),
    },
    "action": {
        "action_type": ("string", (), "category of the action; empty on the final step"),
        "action_details": ("json", (), "continuous values as a JSON object string"),
        "action_tokens": (
            "int64",
            (rules.TOKENS_PER_STEP,),
            f"one token per axis (action_space.json); {rules.PAD_TOKEN} pads an unused axis",
        ),
    },
    "reward": ("float32", (), "reward of this step's action; 0 on the final step"),
    "discount": ("float32", (), f"{rules.DISCOUNT}; 0 into a terminal state and on the final step"),
}
EPISODE_FEATURES: dict[str, Any] = {
    "id": ("string", (), "stable row id (the `rlds` config's id)"),
    "source": ("string", (), "always telemetry"),
    "source_ref": ("string", (), "`episode:` + the episode id"),
    "quality_score": ("float32", (), "competence score in [0, 1]"),
    "metadata": ("json", (), "JSON object of source-specific fields"),
    "episode_id": ("string", (), "the game's episode id"),
    "task_description": ("string", (), "natural-language task"),
    "success": ("bool", (), "the game reported success"),
    "steps": STEP_FEATURES,
}
_TENSOR_DTYPE = {"int64": "int64", "float32": "float32", "bool": "bool"}


def _leaf_json(leaf: Leaf) -> dict[str, Any]:
    dtype, shape, _ = leaf
    if dtype in {"string", "json"}:
        return {"pythonClassName": _TEXT, "text": {}}
    dims = {"dimensions": [str(n) for n in shape]} if shape else {}
    return {
        "pythonClassName": _TENSOR,
        "tensor": {"dtype": _TENSOR_DTYPE[dtype], "encoding": "none", "shape": dims},
    }


def _dict_json(features: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for name, value in features.items():
        if name == "steps":
            out[name] = {
                "pythonClassName": _DATASET,
                "sequence": {"feature": _dict_json(value), "length": "-1"},
            }
        elif isinstance(value, dict):
            out[name] = _dict_json(value)
        else:
            out[name] = _leaf_json(value)
    return {"featuresDict": {"features": out}, "pythonClassName": _DICT}


def features_json() -> dict[str, Any]:
    """Return `features.json` as TFDS's `FeaturesDict.to_json()` writes it for the episodes."""
    return _dict_json(EPISODE_FEATURES)


def _leaves(features: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Leaf]]:
    out = []
    for name, value in features.items():
        path = f"{prefix}{name}"
        out += _leaves(value, path + "/") if isinstance(value, dict) else [(path, value)]
    return out


def feature_spec() -> dict[str, Any]:
    """Return `feature_spec.json`: every feature path with dtype, shape (per step) and meaning."""
    return {
        "dataset": DATASET_NAME,
        "tfds_version": TFDS_VERSION,
        "shape_note": "shapes are per episode, or per step for paths under steps/",
        "features": [
            {
                "path": path,
                "dtype": "string" if dtype == "json" else dtype,
                "shape": list(shape),
                "encoding": "json" if dtype == "json" else "none",
                "description": doc,
            }
            for path, (dtype, shape, doc) in _leaves(EPISODE_FEATURES)
        ],
        "pad_token": rules.PAD_TOKEN,
        "missing_number": "NaN",
    }


# episodes encoded at once: their steps' columns and serialized examples are what is in memory
BATCH_EPISODES = 4_096
# Python's `json.dumps(..., ensure_ascii=False)` escapes: backslash first, then the quote and the
# control characters (the short forms, the others as lowercase \u00XX)
_JSON_ESCAPES = (
    ("\\", "\\\\"),
    ('"', '\\"'),
    *(
        (
            chr(code),
            {8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(code, f"\\u{code:04x}"),
        )
        for code in range(0x20)
    ),
)
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'


def _json_strings(items: pl.Expr) -> pl.Expr:
    """Return `items` (strings) as JSON string literals, escaped as `json.dumps` escapes them."""
    for raw, escaped in _JSON_ESCAPES:
        items = items.str.replace_all(raw, escaped, literal=True)
    return '"' + items + '"'


def _json_texts(column: pa.Array) -> pa.Array:
    """Return a `json` feature's text: a string as it is, a list of strings as `json.dumps`.

    A null is `null`, as `json.dumps(None)`; a list is `[a, b]` with `", "` between items. The
    escapes run only when some item of the column has a character to escape.
    """
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        lists = pl.Series(column)
        items = pl.element()
        plain = not lists.explode().str.contains(_NEEDS_ESCAPE).any()
        quoted = '"' + items + '"' if plain else _json_strings(items)
        texts = lists.list.eval(pl.when(items.is_null()).then(pl.lit("null")).otherwise(quoted))
        joined = "[" + texts.list.join(", ") + "]"
        return joined.fill_null("null").to_arrow(compat_level=pl.CompatLevel.oldest())
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        raise TypeError(f"a json feature must be text or a list of text, not {column.type}")
    return pc.fill_null(column, "null")


def _leaf_feature(dtype: str, column: pa.Array, groups: np.ndarray) -> tfexample.Fields:
    """Return one serialized feature per group of `column`'s values, by the leaf's dtype."""
    if dtype == "string":
        return tfexample.bytes_lists(column, groups)
    if dtype == "json":
        return tfexample.bytes_lists(_json_texts(column), groups)
    if dtype == "float32":
        values = pc.fill_null(column.cast(pa.float64()), math.nan).to_numpy(zero_copy_only=False)
        return tfexample.float_lists(values, groups)
    if column.null_count:
        raise ValueError(f"an {dtype} feature has {column.null_count} null value(s)")
    values = column.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return tfexample.int64_lists(values, groups)


def _list_parts(column: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Return a list column's values and each row's start (len + 1, from 0) in them."""
    offsets = np.asarray(column.offsets, dtype=np.int64)
    return column.flatten(), offsets - offsets[0]


def episode_examples(rows: pl.DataFrame) -> pa.LargeBinaryArray:
    """Serialize `rlds` rows (episode fields + RLDS steps) as TFDS does, one Example per row.

    Deterministic: the same rows give the same bytes (`lib/tfexample.py`). An episode field is
    a one-value list; a step field lists every step's value in order (a vector field its values
    flattened, step after step).
    """
    table = rows.to_arrow(compat_level=pl.CompatLevel.oldest())
    one_each = np.arange(rows.height + 1)
    features = {
        path: _leaf_feature(dtype, table.column(path).combine_chunks(), one_each)
        for path, (dtype, _, _) in _leaves(
            {k: v for k, v in EPISODE_FEATURES.items() if k != "steps"}
        )
    }
    steps, per_episode = _list_parts(table.column("steps").combine_chunks())
    for path, (dtype, shape, _) in _leaves(STEP_FEATURES):
        column, groups = pc.struct_field(steps, path.split("/")), per_episode
        if shape:
            column, per_step = _list_parts(column)
            groups = per_step[per_episode]
        features[f"steps/{path}"] = _leaf_feature(dtype, column, groups)
    return tfexample.examples(features)


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _write_records(path: Path, chunks: Iterable[bytes]) -> int:
    """Write `chunks` one after another to `path` atomically; return the bytes written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp, size = path.with_name(f".{path.name}.tmp"), 0
    with tmp.open("wb") as out:
        for chunk in chunks:
            size += out.write(chunk)
    os.replace(tmp, path)
    return size


def _json_bytes(value: Any, indent: int) -> bytes:
    return (json.dumps(value, indent=indent, sort_keys=True) + "\n").encode()


def shard_name(split: str) -> str:
    """Return a split's single shard file name (TFDS's `filepathTemplate`)."""
    return f"{DATASET_NAME}-{split}.tfrecord-00000-of-00001"


def dataset_info(split_sizes: Mapping[str, tuple[int, int]]) -> dict[str, Any]:
    """Return `dataset_info.json` for splits {name: (episodes, shard bytes)}, as TFDS writes it."""
    return {
        "name": DATASET_NAME,
        "version": TFDS_VERSION,
        "description": (
            "distill `rlds` config: game trajectories as RLDS episodes. "
            "Features: feature_spec.json; action tokens: action_space.json (beside this folder)."
        ),
        "fileFormat": "tfrecord",
        "moduleName": "distill_assets.defs.telemetry.tfrecord",
        "splits": [
            {
                "filepathTemplate": SHARD_TEMPLATE,
                "name": split,
                "numBytes": str(num_bytes),
                "shardLengths": [str(episodes)],
            }
            for split, (episodes, num_bytes) in sorted(split_sizes.items())
        ],
    }


def write_tfds_folder(episodes: pl.DataFrame, folder: Path) -> list[Path]:
    """Write `rlds` rows (with a `split` column) as a TFDS folder; return the files written.

    One shard per split, episodes in id order, encoded `BATCH_EPISODES` at a time.
    """
    written, sizes = [], {}
    for split in episodes.get_column("split").unique().sort().to_list():
        rows = episodes.filter(pl.col("split") == split).sort("id")
        path = folder / shard_name(split)
        size = _write_records(
            path,
            (
                tfexample.framed(episode_examples(rows.slice(start, BATCH_EPISODES)))
                for start in range(0, rows.height, BATCH_EPISODES)
            ),
        )
        written.append(path)
        sizes[split] = (rows.height, size)
    for name, value, indent in (
        ("features.json", features_json(), 4),
        ("dataset_info.json", dataset_info(sizes), 2),
    ):
        _write_atomic(folder / name, _json_bytes(value, indent))
        written.append(folder / name)
    return written


def write_release_files(
    curated: Mapping[str, pl.DataFrame], newest_partition: str | None, out_dir: Path
) -> list[Path]:
    """Release extras writer: the `rlds` TFDS folder, feature spec and action space.

    `newest_partition` is not needed (the files depend on the published rows only).
    """
    episodes = curated.get(CONFIG)
    if episodes is None or episodes.is_empty():
        return []
    written = write_tfds_folder(episodes, out_dir / TFDS_FOLDER)
    specs = (("feature_spec.json", feature_spec()), ("action_space.json", action_space()))
    for name, value in specs:
        path = out_dir / FOLDER / name
        _write_atomic(path, _json_bytes(value, 2))
        written.append(path)
    return written
