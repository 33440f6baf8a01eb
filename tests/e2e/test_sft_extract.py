"""`distill sft-extract` (a subprocess) writes exactly the asset's samples, in the same order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from tests.conftest import materialize

pytestmark = pytest.mark.e2e
DAY = "2026-11-19"
DISTILL = str(Path(sys.executable).parent / "distill")
# the two filters the assets apply on top of the original extractor (the command's defaults)
AS_ASSETS = ("--exclude-recovery", "--dedup")


def sft_extract(trace_dir: Path, output: Path, *flags: str) -> list[str]:
    command = [DISTILL, "sft-extract", "--trace-dir", str(trace_dir), "--output", str(output)]
    done = subprocess.run([*command, *flags], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.splitlines()


def jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_nulls(message: dict[str, object]) -> dict[str, object]:
    return {k: v for k, v in message.items() if v is not None}


@pytest.fixture(scope="module")
def asset_samples(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, pl.DataFrame, pl.DataFrame]:
    """The committed sample day, and the sft_steps / sft_tool_steps the assets derive from it."""
    root = tmp_path_factory.mktemp("sft_extract")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DISTILL_DATA_DIR", str(root / "data"))
        patch.setenv("DAGSTER_HOME", str(root))
        settings = Settings.resolve()
        source = Path(__file__).resolve().parents[2] / "data" / "samples" / "traces" / DAY
        raw = Path(settings.raw_root) / "traces" / DAY
        raw.mkdir(parents=True)
        for path in source.iterdir():
            (raw / path.name).write_bytes(path.read_bytes())
        materialize('key:"traces/*"', DAY)
        frames = [
            pl.read_parquet(str(partition_path(settings.lake_root, "traces", name, DAY)))
            for name in ("sft_steps", "sft_tool_steps")
        ]
    return raw, frames[0], frames[1]


def test_together_output_equals_sft_steps(
    asset_samples: tuple[Path, pl.DataFrame, pl.DataFrame], tmp_path: Path
) -> None:
    raw, sft, _ = asset_samples
    printed = sft_extract(raw, tmp_path / "out.jsonl", *AS_ASSETS)
    lines = jsonl(tmp_path / "out.jsonl")
    assert [line["messages"] for line in lines] == sft["messages"].to_list()
    assert printed[:2] == [f"[sft-extract] Scanning {raw}...", "[sft-extract] Found 4 trace files"]
    assert "[sft-extract] Processing eval-gcd.jsonl... 3 steps" in printed
    assert "[sft-extract] Processing archive.jsonl.gz... SKIP (no tests run x2)" in printed
    for expected in (
        "[sft-extract]   Traces scanned: 4",
        "[sft-extract]   Successful runs: 4",
        "[sft-extract]   Skipped (tests failed): 1",
        "[sft-extract]   Skipped (llm parse error): 1",
        "[sft-extract]   Quarantined lines: 15",
        "[sft-extract]   Total SFT samples: 11",
        "[sft-extract]   Avg steps per run: 2.8",
    ):
        assert expected in printed
    assert printed[-1] == f"[sft-extract] Wrote 11 samples to {tmp_path / 'out.jsonl'}"


def test_tools_output_equals_sft_tool_steps(
    asset_samples: tuple[Path, pl.DataFrame, pl.DataFrame], tmp_path: Path
) -> None:
    raw, _, tools = asset_samples
    sft_extract(raw, tmp_path / "tools.jsonl", "--format", "tools", "--quiet", *AS_ASSETS)
    lines = jsonl(tmp_path / "tools.jsonl")
    # the JSONL's assistant messages carry only their tool calls (the feed's content is "")
    expected = [
        [
            {
                k: v
                for k, v in without_nulls(m).items()
                if (m["role"], k) != ("assistant", "content")
            }
            for m in messages
        ]
        for messages in tools["messages"].to_list()
    ]
    assert [line["messages"] for line in lines] == expected
    schemas = [json.loads(t) for t in tools["tools"][0]]
    assert all(line["tools"] == schemas for line in lines)
    assert "content" not in lines[0]["messages"][2]
    assert lines[0]["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": lines[0]["messages"][3]["content"],
    }


def test_options_and_eval_split(
    asset_samples: tuple[Path, pl.DataFrame, pl.DataFrame], tmp_path: Path
) -> None:
    raw, sft, _ = asset_samples
    printed = sft_extract(raw, tmp_path / "all.jsonl", "--no-require-success", *AS_ASSETS)
    assert len(jsonl(tmp_path / "all.jsonl")) == 26
    assert "[sft-extract]   Included, not successful (tests failed): 1" in printed
    sft_extract(raw, tmp_path / "short.jsonl", "--max-context-chars", "5", "--quiet")
    tool_turns = [
        m["content"]
        for line in jsonl(tmp_path / "short.jsonl")
        for m in line["messages"][2:]
        if m["role"] == "user"
    ]
    outputs = [c.split("\n\nDRIVER NOTE:")[0] for c in tool_turns]
    assert outputs and all(c.startswith("[tool_result]\n") for c in outputs)
    assert max(len(c) for c in outputs) == len("[tool_result]\n") + 5
    sft_extract(
        raw,
        tmp_path / "train.jsonl",
        "--eval-output",
        str(tmp_path / "eval.jsonl"),
        "--quiet",
        *AS_ASSETS,
    )
    train, held_out = jsonl(tmp_path / "train.jsonl"), jsonl(tmp_path / "eval.jsonl")
    by_split = dict(sft.group_by("split").len().iter_rows())
    assert (len(train), len(held_out)) == (by_split.get("train", 0), by_split.get("eval", 0))
    assert [line["messages"] for line in train] == sft.filter(pl.col("split") == "train")[
        "messages"
    ].to_list()


def test_defaults_reproduce_seed_003(
    asset_samples: tuple[Path, pl.DataFrame, pl.DataFrame], tmp_path: Path
) -> None:
    """Every successful tool call of a successful run: the assets' samples plus the recovery
    step and the cross-run duplicates they drop; `--progress` (the seed's flag) is accepted."""
    raw, sft, _ = asset_samples
    lake = raw.parents[2] / "lake"
    dropped = pl.read_parquet(partition_path(str(lake), "traces", "dropped_steps", DAY))
    by_reason = dict(dropped.group_by("reason").len().iter_rows())
    assert (by_reason["recovery_step"], by_reason["duplicate"]) == (1, 2)
    printed = sft_extract(raw, tmp_path / "seed.jsonl", "--progress")
    samples = [line["messages"] for line in jsonl(tmp_path / "seed.jsonl")]
    assert len(samples) == sft.height + 1 + 2 == 14
    assert "[sft-extract]   Total SFT samples: 14" in printed
    assert not any("recovery_step" in line or "(duplicate)" in line for line in printed)
    assert all(messages in samples for messages in sft["messages"].to_list())
    sft_extract(raw, tmp_path / "recovery.jsonl", "--quiet", "--dedup")
    sft_extract(raw, tmp_path / "unique.jsonl", "--quiet", "--exclude-recovery")
    counts = (len(jsonl(tmp_path / "recovery.jsonl")), len(jsonl(tmp_path / "unique.jsonl")))
    assert counts == (sft.height + 1, sft.height + 2)
