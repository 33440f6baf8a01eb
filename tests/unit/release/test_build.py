import re
from dataclasses import replace

import polars as pl
import pyarrow.parquet as pq

from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.curation.pipeline import curate
from distill_assets.defs.release.build import (
    CuratedPart,
    PreviousShards,
    ReleaseInputs,
    all_rules_versions,
    build_release,
    frame_parts,
    previous_manifest,
    release_version,
)
from distill_assets.defs.release.layout import data_file_path, published_arrow_schema, shard_count
from distill_assets.rules import rules_version
from tests.unit.curation.feeds import feed_frame, feed_row

RULES = {"curation": "aaaaaaaaaaaa", "traces": "bbbbbbbbbbbb"}


def curated(config: str, rows: list[dict[str, object]]) -> list[CuratedPart]:
    frame = feed_frame(config, rows).lazy().with_columns(pl.lit("2026-11-19").alias("partition"))
    return frame_parts(config, curate(frame, config).curated)


def sft_rows(n: int, prefix: str = "s") -> list[dict[str, object]]:
    return [
        feed_row(
            "sft",
            f"{prefix}{i}",
            f"question {prefix}{i}",
            source="traces",
            group=f"task{i}",
            score=i / n,
        )
        for i in range(n)
    ]


def inputs(sft: int = 30, dpo: int = 12, newest: str = "2026-11-20") -> ReleaseInputs:
    dpo_rows = [
        feed_row("dpo", f"p{i}", f"prompt {i}", source="revisions", group=f"turn{i}")
        for i in range(dpo)
    ]
    return ReleaseInputs(
        name="distill",
        curated={
            "sft": curated("sft", sft_rows(sft)),
            "dpo": curated("dpo", dpo_rows),
            "instruction": curated("instruction", []),
        },
        duplicates_removed={"sft": 2, "dpo": 0, "instruction": 0},
        created_from={
            "traces/sft_steps": ["2026-11-19", newest],
            "revisions/revision_pairs": [newest],
        },
        rules=dict(RULES),
    )


def no_previous(_version: str) -> None:
    return None


def tree(folder) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_layout_is_exactly_the_hugging_face_repository(tmp_path):
    manifest = build_release(inputs(), tmp_path, no_previous)
    assert tree(tmp_path) == [
        "README.md",
        "data/dpo/test/2026-11-19-00000.parquet",
        "data/dpo/train/2026-11-19-00000.parquet",
        "data/sft/test/2026-11-19-00000.parquet",
        "data/sft/train/2026-11-19-00000.parquet",
        "release.json",
    ]
    assert list(manifest.configs) == ["dpo", "sft"]
    assert manifest.empty_configs == ["instruction"]
    assert {
        c: {split: (s.rows, s.sources) for split, s in summary.splits.items()}
        for c, summary in manifest.configs.items()
    } == {
        "dpo": {"train": (11, {"revisions": 11}), "test": (1, {"revisions": 1})},
        "sft": {"train": (26, {"traces": 26}), "test": (4, {"traces": 4})},
    }
    assert [s.duplicates_removed for s in manifest.configs.values()] == [0, 2]
    assert manifest.configs["sft"].scores.histogram == [3, 3, 3, 3, 3, 3, 3, 3, 3, 3]
    assert manifest.configs["dpo"].scores.model_dump() == {
        "rows": 12,
        "mean": 0.5,
        "min": 0.5,
        "max": 0.5,
        "histogram": [0, 0, 0, 0, 0, 12, 0, 0, 0, 0],
    }
    for entry in manifest.files:
        schema = pq.read_schema(tmp_path / entry.path).remove_metadata()
        assert schema.equals(published_arrow_schema(entry.config))
        assert pq.read_metadata(tmp_path / entry.path).num_rows == entry.rows
    assert ReleaseManifest.model_validate_json((tmp_path / "release.json").read_text()) == manifest


def test_rows_of_a_split_are_published_in_curated_order():
    frame = inputs().curated["sft"][0].read(None)
    assert frame.filter(pl.col("split") == "test")["id"].to_list() == ["s22", "s3", "s6", "s7"]


def test_large_splits_are_sharded_per_partition_with_numbered_names(tmp_path):
    manifest = build_release(inputs(sft=30, dpo=1), tmp_path, no_previous, shard_rows=10)
    assert [(f.path, f.rows) for f in manifest.files if f.config == "sft"] == [
        ("data/sft/train/2026-11-19-00000.parquet", 10),
        ("data/sft/train/2026-11-19-00001.parquet", 10),
        ("data/sft/train/2026-11-19-00002.parquet", 6),
        ("data/sft/test/2026-11-19-00000.parquet", 4),
    ]
    assert [f.path for f in manifest.files if f.config == "dpo"] == [
        "data/dpo/train/2026-11-19-00000.parquet"
    ]
    assert (shard_count(0, 10), shard_count(10, 10), shard_count(11, 10)) == (1, 1, 2)
    assert (
        data_file_path("sft", "train", "2026-11-20", 3) == "data/sft/train/2026-11-20-00003.parquet"
    )


def fingerprinted(config: str, day: str, rows: list[dict[str, object]], key: str) -> CuratedPart:
    """One curated partition with a fingerprint, as the lake gives it."""
    part = curated(config, rows)[0]
    frame = part.read(None).with_columns(pl.lit(day).alias("partition"))

    def read(columns: list[str] | None) -> pl.DataFrame:
        return frame.select(columns) if columns is not None else frame

    return CuratedPart(day, key, part.placeholders, read)


def test_unchanged_partitions_reuse_the_previous_versions_files(tmp_path):
    def release(day2_key: str, day2_rows: int, previous: PreviousShards | None, out: str):
        days = [
            fingerprinted("sft", "2026-11-19", sft_rows(30), "k1"),
            fingerprinted("sft", "2026-11-20", sft_rows(day2_rows, "n"), day2_key),
        ]
        built = replace(inputs(), curated={"sft": days})
        return build_release(built, tmp_path / out, no_previous, 10, previous)

    first = release("k2", 12, None, "first")
    shards = PreviousShards(first, tmp_path / "first")
    second = release("k3", 14, shards, "second")
    fresh = release("k3", 14, None, "fresh")
    assert shards.reused == [
        "data/sft/train/2026-11-19-00000.parquet",
        "data/sft/train/2026-11-19-00001.parquet",
        "data/sft/train/2026-11-19-00002.parquet",
        "data/sft/test/2026-11-19-00000.parquet",
    ]
    assert second == fresh
    assert tree(tmp_path / "second") == tree(tmp_path / "fresh")
    for name in tree(tmp_path / "fresh"):
        assert (tmp_path / "second" / name).read_bytes() == (tmp_path / "fresh" / name).read_bytes()
    reused = tmp_path / "second" / shards.reused[0]
    assert reused.stat().st_ino == (tmp_path / "first" / shards.reused[0]).stat().st_ino
    changed = [f.path for f in second.files if f.path not in shards.reused]
    assert changed == [
        "data/sft/train/2026-11-20-00000.parquet",
        "data/sft/train/2026-11-20-00001.parquet",
        "data/sft/test/2026-11-20-00000.parquet",
    ]
    assert PreviousShards(first, None).place(shards.reused[0], "x", tmp_path) is None


def test_same_inputs_give_the_same_version_and_identical_bytes(tmp_path):
    first = build_release(inputs(), tmp_path / "a", no_previous)
    second = build_release(inputs(), tmp_path / "b", no_previous)
    assert first.version == second.version
    assert re.fullmatch(r"v20261120-[0-9a-f]{8}", first.version)
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    for name in tree(tmp_path / "a"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_version_changes_with_data_rules_or_newest_partition(tmp_path):
    base = build_release(inputs(), tmp_path / "a", no_previous).version
    assert build_release(inputs(sft=31), tmp_path / "b", no_previous).version != base
    assert build_release(
        inputs(newest="2026-11-21"), tmp_path / "c", no_previous
    ).version.startswith("v20261121-")
    files = ReleaseManifest.model_validate_json((tmp_path / "a" / "release.json").read_text()).files
    assert release_version("2026-11-20", files, {**RULES, "curation": "cccccccccccc"}) != base
    assert release_version("2026-11-20", files, RULES) == base
    assert release_version(None, files, RULES).startswith("v00000000-")


def test_changed_input_records_the_previous_version_and_the_row_deltas(tmp_path):
    first = build_release(inputs(), tmp_path / "a", no_previous)
    changed = inputs(sft=40, dpo=0)
    changed.rules["curation"] = "dddddddddddd"
    second = build_release(
        changed, tmp_path / "b", lambda v: previous_manifest(first, v, no_previous)
    )
    assert second.previous_version == first.version
    assert {
        c: {s: (d.previous, d.current, d.delta) for s, d in v.items()}
        for c, v in second.changes.items()
    } == {
        "dpo": {"train": (11, 0, -11), "test": (1, 0, -1)},
        "sft": {"train": (26, 35, 9), "test": (4, 5, 1)},
    }
    assert {k: (v.previous, v.current) for k, v in second.rules_changed.items()} == {
        "curation": ("aaaaaaaaaaaa", "dddddddddddd")
    }
    card = (tmp_path / "b" / "README.md").read_text()
    assert f"## Changes since `{first.version}`" in card
    assert "| `sft` | train | 26 | 35 | +9 |" in card
    assert "| `dpo` | test | 1 | 0 | -1 |" in card
    assert "| `curation` | `aaaaaaaaaaaa` | `dddddddddddd` |" in card


def test_rebuilding_the_latest_version_compares_with_what_it_was_compared_with(tmp_path):
    older = build_release(inputs(sft=20), tmp_path / "old", no_previous)
    latest = build_release(
        inputs(), tmp_path / "new", lambda v: previous_manifest(older, v, no_previous)
    )
    lookup = {older.version: older}.get
    assert previous_manifest(latest, latest.version, lookup) == older
    assert previous_manifest(latest, "v20261121-00000000", lookup) == latest
    assert previous_manifest(None, latest.version, lookup) is None
    assert previous_manifest(older, older.version, lookup) is None


def test_all_rules_modules_are_recorded_with_their_versions():
    versions = all_rules_versions()
    assert versions["curation"] == rules_version("curation")
    assert list(versions) == sorted(versions)
