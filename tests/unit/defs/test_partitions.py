"""The first daily partition: a setting, else the first raw date present, else yesterday."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.partitions.snap import PartitionsSnap

from distill_assets.defs.partitions import build_daily_partitions
from distill_assets.lib.settings import Settings
from distill_assets.lib.startup import SettingsError, resolve_settings
from tests.conftest import land

TODAY = date(2026, 11, 26)


def _keys(partitions: dg.DailyPartitionsDefinition) -> list[str]:
    """The partition keys the UI lists on `TODAY` (from the snapshot the UI process receives)."""
    snap = PartitionsSnap.from_def(partitions).get_partitions_definition()
    now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    return snap.get_partition_keys(current_time=now)


def test_partitions_are_the_days_with_raw_files(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the first raw date to the last complete day, days without a raw file excluded."""
    monkeypatch.delenv("DISTILL_PARTITIONS_START")
    land(distill_env, "telemetry", "2026-11-20", "a.jsonl", "{}\n")
    land(distill_env, "traces", "2026-11-18", "b.jsonl", "{}\n")
    land(distill_env, "traces", "2026-11-23", "b.jsonl", "{}\n")
    land(distill_env, "revisions", "notes", "c.txt", "not a date folder")
    (Path(distill_env.raw_root) / "escalations" / "2026-11-17").mkdir(parents=True)
    partitions = build_daily_partitions(Settings.resolve(), today=TODAY)
    assert _keys(partitions) == ["2026-11-18", "2026-11-20", "2026-11-23"]
    # a day after the definitions loaded is a partition as it comes (the nightly schedule's)
    later = datetime(2026, 11, 28, 12, tzinfo=UTC)
    assert partitions.get_partition_keys(current_time=later)[-2:] == ["2026-11-26", "2026-11-27"]


def test_an_empty_project_starts_yesterday(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DISTILL_PARTITIONS_START")
    assert _keys(build_daily_partitions(Settings.resolve(), today=TODAY)) == ["2026-11-25"]


def test_the_setting_wins_and_a_bad_value_is_one_line(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With DISTILL_PARTITIONS_START every day from it is a partition (no listing of raw)."""
    land(distill_env, "traces", "2026-11-19", "b.jsonl", "{}\n")
    monkeypatch.setenv("DISTILL_PARTITIONS_START", "2026-11-17")
    keys = _keys(build_daily_partitions(Settings.resolve(), today=TODAY))
    assert keys == [f"2026-11-{d}" for d in range(17, 26)]
    monkeypatch.setenv("DISTILL_PARTITIONS_START", "November")
    with pytest.raises(SettingsError, match=r"^DISTILL_PARTITIONS_START='November' is not a date"):
        resolve_settings()


def test_definitions_built_over_the_samples_start_at_the_first_sample_date(
    sample_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh process over the committed samples shows their 2 dates per source, not a week."""
    monkeypatch.delenv("DISTILL_PARTITIONS_START")
    code = (
        "from distill_assets.definitions import defs\n"
        "print(defs().resolve_job_def('daily_ingest').partitions_def.get_partition_keys())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "['2026-11-19', '2026-11-20']"


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
        "last = last_partition_date(Settings.resolve())\n"
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


def test_no_setting_is_read_until_the_definitions_load(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bad settings raise nothing on import of the entry points; `defs()` stops with one line.

    Every module but those declaring partitioned definitions imports with bogus values (the
    asset modules are imported by `defs()` itself, when the definitions load).
    """
    for variable, value in [
        ("DISTILL_PARTITIONS_START", "2026-13-01"),
        ("DISTILL_FUTURE_DAYS", "one"),
        ("DISTILL_EXECUTOR", "bogus"),
        ("DISTILL_DATASET_NAME", "../x"),
        ("DISTILL_LLM_MODEL", "qwen"),
    ]:
        monkeypatch.setenv(variable, value)
    code = (
        "import importlib, pkgutil, sys\n"
        "import distill_assets\n"
        "from distill_assets import cli, commands, contracts, lib, operations, rules\n"
        "import distill_assets.definitions as d\n"
        "import distill_assets.defs.jobs, distill_assets.defs.partitions\n"
        "import distill_assets.defs.resources, distill_assets.defs.release.schedules\n"
        "for package in (commands, contracts, lib, operations, rules):\n"
        "    for m in pkgutil.walk_packages(package.__path__, package.__name__ + '.'):\n"
        "        importlib.import_module(m.name)\n"
        "cli.build_parser()\n"
        "print('imported')\n"
        "d.defs()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert out.stdout.splitlines() == ["imported"]
    assert out.stderr.splitlines()[-1] == (
        "distill_assets.lib.startup.SettingsError: DISTILL_DATASET_NAME='../x' must be a plain "
        "name (letters, digits, '.', '_', '-'; no path separators or '..')"
    )
