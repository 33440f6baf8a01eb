"""The first daily partition: a setting, else the first raw date present, else yesterday."""

from __future__ import annotations

import subprocess
import sys
from datetime import date

import pytest

from distill_assets.defs.partitions import partitions_start
from distill_assets.lib.settings import Settings
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
    with pytest.raises(ValueError, match=r"^DISTILL_PARTITIONS_START='November' is not a date"):
        partitions_start(Settings.resolve())


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
