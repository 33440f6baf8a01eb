"""`distill raw purge`: ingested raw days past the window go; others stay."""

import json
from pathlib import Path

import pytest

from distill_assets import cli
from distill_assets.lib.settings import Settings


def test_purge_removes_only_ingested_days_before_the_date(
    distill_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = Path(distill_env.raw_root) / "telemetry"
    bronze = Path(distill_env.lake_root) / "telemetry" / "events"
    bronze.mkdir(parents=True)
    for day in ("2026-10-01", "2026-10-02", "2026-11-01"):
        (raw / day).mkdir(parents=True)
        (raw / day / "a.jsonl").write_text("{}\n")
    for day in ("2026-10-01", "2026-11-01"):
        (bronze / f"{day}.parquet").write_bytes(b"")
    args = ["raw", "purge", "--before", "2026-10-15"]
    assert cli.main([*args, "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["purged"] == ["2026-10-01"]
    assert (raw / "2026-10-01").exists()
    assert cli.main(args) == 0
    assert json.loads(capsys.readouterr().out) == {
        "source": "telemetry",
        "before": "2026-10-15",
        "purged": ["2026-10-01"],
    }
    # not ingested yet (no bronze), and inside the window: kept
    assert sorted(p.name for p in raw.iterdir()) == ["2026-10-02", "2026-11-01"]
