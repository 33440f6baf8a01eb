"""A night that adds one partition recomputes only that partition's products, rewrites only the
curated files and release shards of the partitions whose rows' decisions changed (reusing the
others from the previous version), and the result is byte-identical to curating, releasing and
publishing all partitions from scratch."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import numpy as np
import pyarrow.parquet as pq
import pytest
from upath import UPath

from distill_assets.defs.curation.decide import near_keys
from distill_assets.defs.curation.products import (
    FULL_VECTORS,
    ROW_ARRAYS,
    VECTOR_COLUMNS,
    LakeVectors,
)
from distill_assets.lib.cosine_lsh import bound_parts
from distill_assets.lib.minhash import shingled
from distill_assets.lib.settings import Settings
from distill_assets.rules.curation import MINHASH_BINS
from tests.conftest import materialize
from tests.unit.curation.feeds import feed_frame, feed_row, write_feed
from tests.unit.curation.texts import changed, words

SELECTION = 'key:"curation/*" or key:"release/candidate"'
PUBLISH = f'{SELECTION} or key:"release/dataset"'
DAYS = ("2026-11-19", "2026-11-20", "2026-11-21")
# what a version's manifest says about the versions before it (the only bytes history may change)
HISTORY_FIELDS = ("previous_version", "changes", "rules_changed")


def day_rows(day_index: int) -> dict[str, list[dict[str, object]]]:
    """Rows of one day; day 3 holds near duplicates that outrank rows of day 1."""
    base = {f"t{i}": words(f"topic-{i}", 40) for i in range(6)}
    sft, instruction = [], []
    for i in range(10):
        topic = base[f"t{i % 6}"]
        text = changed(topic, [i % 40], f"{day_index}-{i}") if day_index else topic
        sft.append(
            feed_row(
                "sft",
                f"s{day_index}-{i}",
                " ".join(text) if i < 6 else f"plain question {day_index} {i} mail a{i}@corp.com",
                source="traces",
                group=f"task-{day_index}-{i % 3}",
                score=0.3 + 0.2 * day_index,
                event_time=float(day_index * 100 + i),
            )
        )
        instruction.append(
            feed_row(
                "instruction",
                f"e{day_index}-{i}",
                f"escalation {day_index} {i} " + " ".join(words(f"e{day_index}{i}", 15)),
                source="escalations",
                group="one-capture-session",
                score=0.5,
            )
        )
    return {"sft": sft, "instruction": instruction}


def land(settings: Settings, day_index: int) -> None:
    rows = day_rows(day_index)
    day = DAYS[day_index]
    write_feed(settings.lake_root, "traces", "sft_steps", day, feed_frame("sft", rows["sft"]))
    write_feed(
        settings.lake_root,
        "escalations",
        "instruction_examples",
        day,
        feed_frame("instruction", rows["instruction"]),
    )


def published_bytes(settings: Settings) -> dict[str, bytes]:
    lake = Path(settings.lake_root)
    files = [*(lake / "curation").rglob("*.parquet"), *(lake / "release" / "candidate").rglob("*")]
    return {str(p.relative_to(lake)): p.read_bytes() for p in sorted(files) if p.is_file()}


def latest_published(settings: Settings) -> tuple[dict[str, bytes], dict[str, object]]:
    """Return the data files of the latest published version and its manifest minus history."""
    latest = Path(settings.hub_root) / settings.dataset_name / "latest"
    data = {
        str(p.relative_to(latest)): p.read_bytes()
        for p in sorted((latest / "data").rglob("*"))
        if p.is_file()
    }
    manifest = json.loads((latest / "release.json").read_text(encoding="utf-8"))
    return data, {k: v for k, v in manifest.items() if k not in HISTORY_FIELDS}


def curation_metadata(result: dg.ExecuteInProcessResult, config: str, key: str) -> object:
    for m in result.asset_materializations_for_node("curate"):
        if m.asset_key.path[-1] == config:
            return m.metadata[key].value
    raise AssertionError(config)


def computed_days(result: dg.ExecuteInProcessResult, config: str) -> list[str]:
    return list(curation_metadata(result, config, "products_computed"))


def rewritten_days(result: dg.ExecuteInProcessResult, config: str) -> list[str]:
    return list(curation_metadata(result, config, "curated_rewritten"))


def candidate_metadata(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    (m,) = result.asset_materializations_for_node("release__candidate")
    return {k: v.value for k, v in m.metadata.items()}


def text_checks_read(result: dg.ExecuteInProcessResult) -> tuple[int, int]:
    """Return (files read, files passed before) of the candidate's text checks (all the same)."""
    counts = {
        (e.metadata["files_read"].value, e.metadata["files_passed_before"].value)
        for e in result.get_asset_check_evaluations()
        if e.check_name in ("matches_contract", "no_unscrubbed_secrets", "independent_pii_scan")
    }
    (count,) = counts
    return count


def use_data_dir(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Settings:
    monkeypatch.setenv("DISTILL_DATA_DIR", str(folder))
    return Settings.resolve()


def test_incremental_nights_equal_a_from_scratch_run_byte_for_byte(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nightly = use_data_dir(monkeypatch, tmp_path / "nightly")
    rewritten = []
    for index, day in enumerate(DAYS):
        land(nightly, index)
        result = materialize(SELECTION)
        assert computed_days(result, "sft") == [day]
        assert computed_days(result, "instruction") == [day]
        rewritten.append((rewritten_days(result, "sft"), rewritten_days(result, "instruction")))
    # each day's near duplicates outrank the previous day's representatives (higher score), so
    # the previous day's sft file is rewritten too; a split depends on its group alone, so no
    # later day changes an earlier day's instruction splits
    assert rewritten == [
        ([DAYS[0]], [DAYS[0]]),
        ([DAYS[0], DAYS[1]], [DAYS[1]]),
        ([DAYS[1], DAYS[2]], [DAYS[2]]),
    ]
    again = materialize(SELECTION)
    assert computed_days(again, "sft") == []
    assert rewritten_days(again, "sft") == []
    incremental = published_bytes(nightly)

    scratch = use_data_dir(monkeypatch, tmp_path / "scratch")
    for index in range(len(DAYS)):
        land(scratch, index)
    result = materialize(SELECTION)
    assert computed_days(result, "sft") == list(DAYS)
    assert published_bytes(scratch) == incremental
    assert "release/candidate/release.json" in incremental
    assert "curation/sft_duplicates.parquet" in incremental


def test_published_nightly_versions_end_with_the_files_of_a_from_scratch_release(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nightly = use_data_dir(monkeypatch, tmp_path / "nightly")
    versions, written, reused, scanned = [], [], [], []
    for index in range(len(DAYS)):
        land(nightly, index)
        result = materialize(PUBLISH)
        meta = candidate_metadata(result)
        versions.append(latest_published(nightly)[1]["version"])
        written.append(meta["shards_written"])
        reused.append(meta["shards_reused"])
        scanned.append(text_checks_read(result))
    assert len(set(versions)) == len(DAYS)
    # the text checks read the files the night wrote; the reused ones passed them before
    assert scanned == [(len(w), r) for w, r in zip(written, reused, strict=True)]
    assert scanned[-1] == (3, 3)
    # each night writes the shards of the partitions whose curated files it rewrote (see
    # `test_incremental_nights_equal_a_from_scratch_run_byte_for_byte`) and links the others from
    # the previous version: on the second night instruction's day 1, on the third sft's day 1 and
    # instruction's days 1 and 2 (instruction's groups all hash to train: it has no test split)
    assert reused == [0, 1, 3]
    assert written == [
        [
            "data/instruction/train/2026-11-19-00000.parquet",
            "data/sft/train/2026-11-19-00000.parquet",
        ],
        [
            "data/instruction/train/2026-11-20-00000.parquet",
            "data/sft/train/2026-11-19-00000.parquet",
            "data/sft/train/2026-11-20-00000.parquet",
        ],
        [
            "data/instruction/train/2026-11-21-00000.parquet",
            "data/sft/train/2026-11-20-00000.parquet",
            "data/sft/train/2026-11-21-00000.parquet",
        ],
    ]
    data, manifest = latest_published(nightly)

    scratch = use_data_dir(monkeypatch, tmp_path / "scratch")
    for index in range(len(DAYS)):
        land(scratch, index)
    materialize(PUBLISH)
    assert latest_published(scratch) == (data, manifest)
    assert manifest["version"] == versions[-1]
    assert sorted(data) == [
        "data/instruction/train/2026-11-19-00000.parquet",
        "data/instruction/train/2026-11-20-00000.parquet",
        "data/instruction/train/2026-11-21-00000.parquet",
        "data/sft/train/2026-11-19-00000.parquet",
        "data/sft/train/2026-11-20-00000.parquet",
        "data/sft/train/2026-11-21-00000.parquet",
    ]


def test_a_rewritten_partition_is_recomputed_and_a_removed_one_forgotten(
    distill_env: Settings,
) -> None:
    land(distill_env, 0)
    land(distill_env, 1)
    materialize(SELECTION)
    rows = day_rows(0)["sft"][:3]
    write_feed(distill_env.lake_root, "traces", "sft_steps", DAYS[0], feed_frame("sft", rows))
    (
        Path(distill_env.lake_root) / "escalations" / "instruction_examples" / f"{DAYS[1]}.parquet"
    ).unlink()
    legacy = Path(distill_env.lake_root) / "curation" / "sft.parquet"  # the single-file layout
    legacy.write_bytes(b"")
    result = materialize(SELECTION)
    assert computed_days(result, "sft") == [DAYS[0]]
    assert computed_days(result, "instruction") == []
    assert rewritten_days(result, "sft") == [DAYS[0]]
    curation = Path(distill_env.lake_root) / "curation"
    for table in ("instruction_products", "instruction"):
        assert sorted(p.name for p in (curation / table).iterdir()) == [f"{DAYS[0]}.parquet"]
    assert not legacy.exists()


def test_products_store_their_vectors_plain_with_the_row_arrays_of_their_vectors(
    distill_env: Settings,
) -> None:
    land(distill_env, 0)
    materialize(SELECTION)
    path = Path(distill_env.lake_root) / "curation" / "sft_products" / f"{DAYS[0]}.parquet"
    footer = pq.ParquetFile(path).metadata.row_group(0)
    chunks = {footer.column(i).path_in_schema: footer.column(i) for i in range(footer.num_columns)}
    for name in VECTOR_COLUMNS:
        chunk = chunks.get(f"{name}.list.element", chunks.get(name))
        assert chunk is not None, name
        assert chunk.compression == "UNCOMPRESSED"
        assert "RLE_DICTIONARY" not in chunk.encodings
    assert chunks["id"].compression == "ZSTD"
    lake = LakeVectors([UPath(path)])
    signatures, embeddings = lake.columns(FULL_VECTORS)
    band_keys, has_shingles, _, stored_head, stored_tail = lake.columns(ROW_ARRAYS)
    assert signatures.shape == (10, MINHASH_BINS)
    assert np.array_equal(band_keys, near_keys(signatures))
    assert np.array_equal(has_shingles, shingled(signatures))
    assert has_shingles.tolist() == [True] * 10
    head, tail = bound_parts(embeddings)
    assert np.array_equal(stored_head, head)
    assert np.array_equal(stored_tail, tail)
    rows = np.array([7, 0, 3])
    assert np.array_equal(lake.fetch("embedding", rows), embeddings[rows])
