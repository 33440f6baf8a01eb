import json
from dataclasses import replace

import polars as pl
import yaml

from distill_assets.defs.release.build import build_release
from distill_assets.defs.release.card import partition_ranges, size_category
from distill_assets.defs.release.extras import ReleaseContributions
from tests.unit.release.test_build import curated, inputs, no_previous, sft_rows


def front_matter(text: str) -> dict:
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n")[1])


def test_card_yaml_lists_every_config_and_data_file_per_split(tmp_path):
    manifest = build_release(inputs(), tmp_path, no_previous, shard_rows=10)
    meta = front_matter((tmp_path / "README.md").read_text())
    assert meta["configs"] == [
        {
            "config_name": "dpo",
            "data_files": [
                {"split": "train", "path": "data/dpo/train/*.parquet"},
                {"split": "test", "path": "data/dpo/test/*.parquet"},
            ],
        },
        {
            "config_name": "sft",
            "data_files": [
                {"split": "train", "path": "data/sft/train/*.parquet"},
                {"split": "test", "path": "data/sft/test/*.parquet"},
            ],
        },
    ]
    listed = {
        p.relative_to(tmp_path).as_posix()
        for c in meta["configs"]
        for d in c["data_files"]
        for p in tmp_path.glob(d["path"])
    }
    assert listed == {f.path for f in manifest.files}
    assert len(listed) == 7
    assert meta["license"] == "apache-2.0"
    assert meta["task_categories"] == ["text-generation"]
    assert meta["tags"] == ["distill", "distillation", "synthetic", "dpo", "sft"]
    assert meta["size_categories"] == ["n<1K"]


def test_card_body_reports_counts_sources_scores_inputs_rules_and_first_version(tmp_path):
    manifest = build_release(inputs(), tmp_path, no_previous)
    card = (tmp_path / "README.md").read_text()
    assert f"Version `{manifest.version}` (newest input partition 2026-11-20)." in card
    assert "| `sft` | 26 | 4 | 30 | 13.3% | 2 | `prompt`, `completion` |" in card
    assert "| `dpo` | 11 | 1 | 12 | 8.3% | 0 | `prompt`, `chosen`, `rejected` |" in card
    assert "No rows in this version (omitted): `instruction`." in card
    assert "| `sft` | test | traces | 4 |" in card
    assert "| `dpo` | 12 | 0.5 | 0.5 | 0.5 | 0 | 0 | 0 | 0 | 0 | 12 | 0 | 0 | 0 | 0 |" in card
    assert "| `traces/sft_steps` | 2 | 2026-11-19..2026-11-20 |" in card
    assert "| `curation` | `aaaaaaaaaaaa` |" in card
    assert "First version: nothing to compare with." in card
    for entry in manifest.files:
        assert f"| `{entry.path}` | {entry.rows} | {entry.bytes} | `{entry.sha256}` |" in card


def test_partition_ranges_and_size_categories():
    assert partition_ranges(
        ["2026-11-20", "2026-11-19", "2026-11-22", "2026-12-01", "2026-11-30"]
    ) == ("2026-11-19..2026-11-20, 2026-11-22, 2026-11-30..2026-12-01")
    assert partition_ranges([]) == ""
    assert [size_category(n) for n in (0, 999, 1000, 10_000, 500_000)] == [
        "n<1K",
        "n<1K",
        "1K<n<10K",
        "10K<n<100K",
        "100K<n<1M",
    ]


def test_card_lists_each_configs_curation_funnel(tmp_path):
    funnel = {
        "rows_in": 40,
        "scrubbed": 38,
        "exact_duplicate": 35,
        "near_duplicate": 32,
        "semantic_duplicate": 31,
        "contaminated": 30,
        "below_threshold": 30,
        "published": 30,
    }
    manifest = build_release(replace(inputs(), funnels={"sft": funnel}), tmp_path, no_previous)
    assert manifest.configs["sft"].funnel == funnel
    assert manifest.configs["dpo"].funnel == {}
    card = (tmp_path / "README.md").read_text()
    assert "## Curation funnel" in card
    assert "| `sft` | 40 | 38 | 35 | 32 | 31 | 30 | 30 | 30 |" in card


def test_card_and_manifest_count_rows_per_counted_metadata_value_per_config_and_split(tmp_path):
    classes = ["social_manipulation_deception", "ambiguity_resolution", None]
    rows = [
        {**row, "metadata": json.dumps({"value_class": classes[i % 3]} if classes[i % 3] else {})}
        for i, row in enumerate(sft_rows(30))
    ]
    built = replace(inputs(), curated={**inputs().curated, "sft": curated("sft", rows)})
    contributions = ReleaseContributions(counted_metadata=("value_class",))
    manifest = build_release(built, tmp_path, no_previous, contributions=contributions)
    splits = manifest.configs["sft"].splits
    train, test = (splits[s].metadata_counts["value_class"] for s in ("train", "test"))
    by_split = {
        split: pl.DataFrame(
            [r for r in rows if r["id"] in ids], schema_overrides={"metadata": pl.String}
        )
        .get_column("metadata")
        .str.json_path_match("$.value_class")
        .drop_nulls()
        .value_counts(sort=True)
        .rows()
        for split, ids in published_ids(tmp_path, "sft").items()
    }
    assert train == dict(sorted(by_split["train"])) and test == dict(sorted(by_split["test"]))
    # 10 rows of each class (every third row has none), 26 train and 4 test rows in all
    assert sum(train.values()) + sum(test.values()) == 20
    assert sum(train.values()) > 0 and sum(test.values()) > 0
    # dpo rows carry no value_class: nothing counted
    assert manifest.configs["dpo"].splits["train"].metadata_counts == {}
    card = (tmp_path / "README.md").read_text()
    assert "## Rows per metadata class" in card
    for value in ("ambiguity_resolution", "social_manipulation_deception"):
        assert (
            f"| `sft` | `value_class` | `{value}` | {train.get(value, 0)} | {test.get(value, 0)} |"
            in card
        )
    # without counted keys the card has no such section
    build_release(inputs(), tmp_path / "plain", no_previous)
    assert "Rows per metadata class" not in (tmp_path / "plain" / "README.md").read_text()


def published_ids(folder, config: str) -> dict[str, set[str]]:
    """Return split -> ids of the rows published in `config`'s data files."""
    return {
        split: set(
            pl.concat(
                [pl.read_parquet(p) for p in sorted(folder.glob(f"data/{config}/{split}/*"))]
            ).get_column("id")
        )
        for split in ("train", "test")
    }
