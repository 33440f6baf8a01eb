"""`distill raw purge`: expired, ingested raw telemetry folders go; everything else stays."""

import json
from pathlib import Path

import pytest

from distill_assets.cli import main
from distill_assets.commands.raw import log_path


def land(root: Path, *parts: str) -> Path:
    path = root.joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{}\n", encoding="utf-8")
    return path


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DISTILL_DATA_DIR", str(tmp_path))
    for name in ("DISTILL_RAW_ROOT", "DISTILL_LAKE_ROOT", "DISTILL_HUB_ROOT"):
        monkeypatch.delenv(name, raising=False)
    raw, lake = tmp_path / "raw" / "telemetry", tmp_path / "lake" / "telemetry" / "events"
    # 2026-10-01 and 2026-10-20 are more than 30 days before 2026-11-26; 2026-10-27 is not
    for day in ("2026-10-01", "2026-10-20", "2026-10-27"):
        land(raw, day, "gateway-1.jsonl")
    land(raw, "2026-10-01", "sub", "gateway-2.jsonl")
    land(raw, "not-a-date", "x.jsonl")
    for day in ("2026-10-01", "2026-10-27"):  # 2026-10-20 was never ingested
        land(lake, f"{day}.parquet")
    land(tmp_path / "raw" / "traces", "2026-10-01", "t.jsonl")
    return tmp_path


def test_purges_expired_ingested_folders_and_logs_every_folder(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["raw", "purge", "--today", "2026-11-26"]) == 0
    raw = data_dir / "raw" / "telemetry"
    assert sorted(p.name for p in raw.iterdir()) == ["2026-10-20", "2026-10-27", "not-a-date"]
    # processed data and other sources stay
    assert (data_dir / "lake" / "telemetry" / "events" / "2026-10-01.parquet").exists()
    assert (data_dir / "raw" / "traces" / "2026-10-01" / "t.jsonl").exists()
    lines = [json.loads(line) for line in log_path(str(data_dir)).read_text().splitlines()]
    assert [{k: v for k, v in line.items() if k != "at"} for line in lines] == [
        {
            "source": "telemetry",
            "partition": "2026-10-01",
            "action": "purged",
            "files": 2,
            "dry_run": False,
        },
        {
            "source": "telemetry",
            "partition": "2026-10-20",
            "action": "kept_not_ingested",
            "files": 1,
            "dry_run": False,
        },
    ]
    assert "[distill] raw purge telemetry/2026-10-01: purged" in capsys.readouterr().out


def test_dry_run_removes_nothing(data_dir: Path) -> None:
    assert main(["raw", "purge", "--today", "2026-11-26", "--dry-run"]) == 0
    assert (data_dir / "raw" / "telemetry" / "2026-10-01" / "gateway-1.jsonl").exists()
    line = json.loads(log_path(str(data_dir)).read_text().splitlines()[0])
    assert (line["action"], line["dry_run"]) == ("purged", True)
