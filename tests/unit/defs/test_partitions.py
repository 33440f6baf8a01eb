"""The first daily partition: a setting, else the first raw date present, else yesterday."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime, timedelta

import pytest

from distill_assets.defs.partitions import partitions_start
from distill_assets.lib.settings import Settings
from distill_assets.lib.startup import SettingsError, resolve_settings
from tests.conftest import land


def test_start_is_the_first_raw_date_present(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISTILL_PARTITIONS_START")
    land(distill_env, "telemetry", "2026-11-20", "a.jsonl", "{}\n")
    land(distill_env, "traces", "2026-11-19", "b.jsonl", "{}\n")
    land(distill_env, "revisions", "notes", "c.txt", "not a date folder")
    assert partitions_start(Settings.resolve()) == "2026-11-19"


def test_an_empty_project_starts_yesterday(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISTILL_PARTITIONS_START")
    assert partitions_start(Settings.resolve(), today=date(2026, 11, 24)) == "2026-11-23"


def test_the_setting_wins_and_a_bad_value_is_one_line(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    land(distill_env, "traces", "2026-11-19", "b.jsonl", "{}\n")
    monkeypatch.setenv("DISTILL_PARTITIONS_START", "2026-11-01")
    assert partitions_start(Settings.resolve()) == "2026-11-01"
    monkeypatch.setenv("DISTILL_PARTITIONS_START", "November")
    with pytest.raises(SettingsError, match=r"^DISTILL_PARTITIONS_START='November' is not a date"):
        resolve_settings()


def test_definitions_built_over_the_samples_start_at_the_first_sample_date(
    sample_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh process over the committed samples shows 2 partitions per source, not 691."""
    monkeypatch.delenv("DISTILL_PARTITIONS_START")
    code = (
        "from distill_assets.definitions import defs\n"
        "print(defs().resolve_job_def('daily_ingest').partitions_def.start.date())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "2026-11-19"


def test_future_days_admit_raw_folders_after_the_last_complete_day(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Future folders are skipped by default; DISTILL_FUTURE_DAYS=2 admits today and tomorrow."""
    today = datetime.now(UTC).date()
    days = [today + timedelta(days=n) for n in (-1, 0, 1, 2)]
    for day in days:
        land(distill_env, "traces", day.isoformat(), "a.jsonl", "{}\n")
    code = (
        "from distill_assets.defs.partitions import last_partition_date, skipped_raw_folders\n"
        "from distill_assets.lib.settings import Settings\n"
        "last = last_partition_date()\n"
        "print(last.isoformat())\n"
        "print(sorted(skipped_raw_folders(Settings.resolve().raw_root, last)))\n"
    )

    def run(future_days: str | None) -> list[str]:
        if future_days is None:
            monkeypatch.delenv("DISTILL_FUTURE_DAYS", raising=False)
        else:
            monkeypatch.setenv("DISTILL_FUTURE_DAYS", future_days)
        out = subprocess.run(
            [sys.executable, "-c", code], check=False, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    skipped = [f"traces/{d.isoformat()}" for d in days]
    assert run(None) == [days[0].isoformat(), str(skipped[1:])]
    assert run("2") == [days[2].isoformat(), str(skipped[3:])]


def test_a_bad_future_days_value_is_one_line(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISTILL_FUTURE_DAYS", "-1")
    out = subprocess.run(
        [sys.executable, "-m", "distill_assets.cli", "run", "--samples", "none"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2
    assert out.stdout.splitlines() == [
        "[distill] error: DISTILL_FUTURE_DAYS='-1': Input should be greater than or equal to 0"
    ]


def test_a_bad_setting_stops_the_code_location_with_its_one_line_error(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the UI and `dagster asset materialize` show when they load the definitions."""
    monkeypatch.setenv("DISTILL_EMBEDDER", "bogus")
    out = subprocess.run(
        [sys.executable, "-c", "from distill_assets.definitions import defs; defs()"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1
    assert out.stderr.splitlines()[-1] == (
        "distill_assets.lib.startup.SettingsError: DISTILL_EMBEDDER='bogus' must be one of "
        "hashed, model2vec"
    )
