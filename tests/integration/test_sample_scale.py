"""`distill sample --days 3 --scale 10` then `distill run`: telemetry in every config and split.

Issue 30's second acceptance line, through the real CLI: at ten times the committed samples'
volume every config the game feeds publishes telemetry rows in both splits, and the release
withholds nothing (no false positive of the independent scan on generated ids).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.integration.helpers import BIN, clean_env, run_ok

pytestmark = pytest.mark.integration

TELEMETRY_CONFIGS = ("cot", "dpo", "rlds", "sft")


def test_scale_ten_publishes_telemetry_in_every_config_and_split(tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    data = Path(env["DISTILL_DATA_DIR"])
    distill = str(BIN / "distill")
    run_ok([distill, "sample", "--out", str(data / "raw"), "--days", "3", "--scale", "10"], env)
    out = run_ok([distill, "run", "--samples", "none"], env)
    assert "withheld" not in out
    latest = data / "hub" / "distill" / "latest"
    manifest = json.loads((latest / "release.json").read_text())
    counts = {
        (config, split): pl.read_parquet(sorted((latest / "data" / config / split).glob("*")))
        .filter(pl.col("source") == "telemetry")
        .height
        for config in TELEMETRY_CONFIGS
        for split in ("train", "test")
    }
    assert counts == {
        ("cot", "train"): 75,
        ("cot", "test"): 15,
        ("dpo", "train"): 31,
        ("dpo", "test"): 11,
        ("rlds", "train"): 148,
        ("rlds", "test"): 18,
        ("sft", "train"): 206,
        ("sft", "test"): 40,
    }
    # the manifest counts every source's rows: at least the telemetry ones
    for (config, split), rows in counts.items():
        assert manifest["configs"][config]["splits"][split]["rows"] >= rows
