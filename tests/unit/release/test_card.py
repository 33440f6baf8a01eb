from dataclasses import replace

import yaml

from distill_assets.defs.release.build import build_release
from distill_assets.defs.release.card import partition_ranges, size_category
from tests.unit.release.test_build import inputs, no_previous


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
