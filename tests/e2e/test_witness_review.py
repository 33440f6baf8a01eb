"""Witness review of telemetry rows end to end: queue, reject, approve, next release (issue 30)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from distill_assets.cli import main
from distill_assets.lib.settings import Settings
from tests.assets.test_telemetry import GLOBAL_TABLES as GLOBAL
from tests.assets.test_telemetry_one_story import DAILY_TABLES as DAILY
from tests.conftest import SAMPLES, materialize

pytestmark = pytest.mark.e2e
DAY = "2026-11-20"
RELEASE = "group:curation or group:release"


def selection(tables: tuple[str, ...]) -> str:
    return " or ".join(f'key:"telemetry/{t}"' for t in tables)


def release() -> None:
    materialize(selection(GLOBAL))
    materialize(RELEASE)


def published_ids(settings: Settings, config: str) -> set[str]:
    folder = Path(settings.hub_root) / settings.dataset_name / "latest" / "data" / config
    return set(pl.read_parquet(sorted(folder.glob("*/*.parquet")))["id"])


def queued(capsys: pytest.CaptureFixture[str], *flags: str) -> list[dict]:
    capsys.readouterr()
    assert main(["review", "--source", "telemetry", "list", "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def released(distill_env: Settings) -> Settings:
    """One committed sample day of telemetry ingested and released."""
    shutil.copytree(SAMPLES / "telemetry" / DAY, Path(distill_env.raw_root) / "telemetry" / DAY)
    materialize(selection(DAILY), DAY)
    release()
    return distill_env


def test_witness_rejection_removes_the_row_from_the_next_release(
    released: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = queued(capsys)
    assert rows, "the sample day queues rows for Witness review"
    assert {t for row in rows for t in row["triggers"]} <= {
        "high_ambiguity",
        "extreme_novelty",
        "fraud_flagged",
    }
    # a published dialogue: sft has rows besides it, so the release keeps both its splits
    target = next(
        r for r in rows if r["config"] == "sft" and r["id"] in published_ids(released, "sft")
    )
    before = published_ids(released, target["config"])
    assert (
        main(
            [
                "review",
                "--source",
                "telemetry",
                "reject",
                target["id"][:10],
                "--reviewer",
                "witness-1",
                "--notes",
                "scripted, not a real choice",
            ]
        )
        == 0
    )
    assert f"rejected telemetry row {target['id']} by witness-1" in capsys.readouterr().out
    # still published until the next release; then gone, and nothing else with it
    assert published_ids(released, target["config"]) == before
    release()
    assert published_ids(released, target["config"]) == before - {target["id"]}
    exclusions = pl.read_parquet(
        Path(released.lake_root) / "telemetry" / "witness_exclusions.parquet"
    )
    assert exclusions.to_dicts() == [
        {"source": "telemetry", "subject": target["id"], "reason": "rejected_by_witness"}
    ]
    assert [r["id"] for r in queued(capsys)] == [r["id"] for r in rows if r is not target]
    decided = {r["id"]: r["decision"] for r in queued(capsys, "--all")}
    assert decided[target["id"]] == "reject"


def test_witness_approval_is_the_rows_validation_record(
    released: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    target = next(r for r in queued(capsys) if r["table"] == "dialogues")
    assert (
        main(["review", "--source", "telemetry", "approve", target["id"], "--reviewer", "w2"]) == 0
    )
    materialize(selection(("dialogues",)), DAY)
    rows = pl.read_parquet(Path(released.lake_root) / "telemetry" / "dialogues" / f"{DAY}.parquet")
    records = {
        row["id"]: json.loads(row["metadata"]).get("validation")
        for row in rows.iter_rows(named=True)
    }
    record = records.pop(target["id"])
    assert {k: record[k] for k in ("type", "result", "validator")} == {
        "type": "witness",
        "result": "approve",
        "validator": "w2",
    }
    assert set(records.values()) == {None}


def test_unknown_or_edited_telemetry_row_is_one_line_error(
    released: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["review", "--source", "telemetry", "reject", "zz-not-an-id"]) == 1
    assert capsys.readouterr().err.strip() == (
        "distill review: telemetry row id 'zz-not-an-id' matches no queued telemetry row"
    )
    edit = ["review", "--source", "telemetry", "edit", "x", "--response-file", "f"]
    assert main(edit) == 2
