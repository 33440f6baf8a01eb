"""`datasets.load_dataset` in a fresh process returns exactly what the card and manifest report."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from distill_assets.contracts.published import published_schema
from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.curation.curated_table import read_curated
from distill_assets.lib.settings import Settings
from tests.conftest import materialize
from tests.unit.curation.feeds import feed_frame, feed_row, write_feed

pytestmark = pytest.mark.e2e

LOADER = """
import json, sys
from datasets import load_dataset
path, configs = sys.argv[1], sys.argv[2:]
out = {}
for config in configs:
    ds = load_dataset(path, config)
    out[config] = {
        split: {
            "columns": d.column_names,
            "ids": list(d["id"]),
            "features": {k: repr(v) for k, v in d.features.items()},
            "first": d[0],
        }
        for split, d in ds.items()
    }
print(json.dumps(out))
"""


def load_in_fresh_process(path: Path, configs: list[str], tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "DISTILL_"))}
    env.update(HF_DATASETS_OFFLINE="1", HF_HOME=str(tmp_path / "hf_home"))
    done = subprocess.run(
        [sys.executable, "-c", LOADER, str(path), *configs],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def land_feeds(settings: Settings) -> None:
    lake = settings.lake_root
    for day, offset in (("2026-11-19", 0), ("2026-11-20", 40)):
        write_feed(
            lake,
            "traces",
            "sft_steps",
            day,
            feed_frame(
                "sft",
                [
                    feed_row(
                        "sft",
                        f"t{i}",
                        f"step {i}",
                        source="traces",
                        group=f"task{i // 2}",
                        score=0.8,
                    )
                    for i in range(offset, offset + 40)
                ],
            ),
        )
        write_feed(
            lake,
            "revisions",
            "revision_pairs",
            day,
            feed_frame(
                "dpo",
                [
                    feed_row(
                        "dpo",
                        f"r{i}",
                        f"prompt {i}",
                        source="revisions",
                        group=f"turn{i}",
                        score=0.6,
                    )
                    for i in range(offset, offset + 30)
                ],
            ),
        )
    write_feed(
        lake,
        "telemetry",
        "dialogues",
        "2026-11-20",
        feed_frame(
            "sft",
            [
                feed_row(
                    "sft",
                    f"d{i}",
                    f"hail {i}",
                    source="telemetry",
                    group=f"player{i % 7}",
                    score=0.4,
                )
                for i in range(21)
            ],
        ),
    )
    write_feed(
        lake,
        "escalations",
        "instruction_examples",
        "2026-11-19",
        feed_frame(
            "instruction",
            [
                feed_row(
                    "instruction",
                    f"e{i}",
                    f"how do I {i}",
                    source="escalations",
                    group=f"sess{i}",
                    score=0.7,
                )
                for i in range(50)
            ],
        ),
    )


def card_split_rows(card: str, config: str) -> tuple[int, int, int]:
    match = re.search(rf"^\| `{config}` \| (\d+) \| (\d+) \| (\d+) \|", card, re.MULTILINE)
    assert match, config
    return tuple(int(g) for g in match.groups())  # type: ignore[return-value]


def test_published_configs_load_with_exactly_the_reported_rows(
    distill_env: Settings, tmp_path: Path
) -> None:
    land_feeds(distill_env)
    materialize("group:curation or group:release")
    latest = Path(distill_env.hub_root) / distill_env.dataset_name / "latest"
    manifest = ReleaseManifest.model_validate_json((latest / "release.json").read_text())
    assert list(manifest.configs) == ["dpo", "instruction", "sft"]
    card = (latest / "README.md").read_text()

    loaded = load_in_fresh_process(latest, list(manifest.configs), tmp_path)
    for config in manifest.configs:
        reported = manifest.split_rows(config)
        train, test, total = card_split_rows(card, config)
        assert (reported["train"], reported["test"], train + test) == (train, test, total)
        assert train > 0 and test > 0
        curated = read_curated(distill_env.lake_root, config)
        for split in ("train", "test"):
            got = loaded[config][split]
            assert got["columns"] == published_schema(config).names()
            assert len(got["ids"]) == reported[split]
            assert got["ids"] == curated.filter(pl.col("split") == split)["id"].to_list()

    sft = loaded["sft"]["train"]
    messages = "List({'role': Value('string'), 'content': Value('string')})"
    assert sft["features"]["prompt"] == sft["features"]["completion"] == messages
    assert sft["features"]["quality_score"] == "Value('float64')"
    assert [m["role"] for m in sft["first"]["prompt"]] == ["user"]
    assert [m["role"] for m in sft["first"]["completion"]] == ["assistant"]
    dpo = loaded["dpo"]["train"]
    assert dpo["features"]["prompt"] == dpo["features"]["chosen"] == messages
    assert [m["role"] for m in dpo["first"]["prompt"]] == ["user"]
    assert [m["role"] for m in dpo["first"]["chosen"] + dpo["first"]["rejected"]] == [
        "assistant",
        "assistant",
    ]
    assert json.loads(sft["first"]["metadata"]) == {"n": sft["first"]["id"]}

    pinned = Path(distill_env.hub_root) / distill_env.dataset_name / "versions" / manifest.version
    again = load_in_fresh_process(pinned, ["dpo"], tmp_path)
    assert again["dpo"]["test"]["ids"] == loaded["dpo"]["test"]["ids"]
