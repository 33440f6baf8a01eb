"""Days without data publish no new version (issue #29, "no phantom versions").

After a release, three kinds of empty day arrive: a folder of only garbage (every record to
quarantine), an empty folder, and a partition launched with no raw folder at all (what the UI's
"Materialize" or `dagster asset materialize` of a Missing partition does). The next release keeps
the version name and the dated export files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distill_assets.cli import main
from distill_assets.lib.settings import Settings
from tests.conftest import isolate, land
from tests.e2e.conftest import Night, copy_night

pytestmark = pytest.mark.e2e


def _published(settings: Settings) -> tuple[str, list[str]]:
    latest = Path(settings.hub_root) / settings.dataset_name / "latest"
    version = json.loads((latest / "release.json").read_text())["version"]
    files = sorted(str(p.relative_to(latest)) for p in latest.rglob("*") if p.is_file())
    return version, files


def test_empty_days_leave_the_version_name_and_exports_unchanged(
    sample_night: Night,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from distill_assets.definitions import defs

    # the samples' release (a copy of the session's night, on its project instance) is the
    # version the empty days must keep
    data = copy_night(sample_night, tmp_path)
    settings = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DAGSTER_HOME", str(data / ".dagster"))
    before = _published(settings)
    assert before[0].startswith("v20261120-")
    land(settings, "telemetry", "2026-11-21", "junk.jsonl", "not json\n{\n")
    (Path(settings.raw_root) / "traces" / "2026-11-22").mkdir()
    launched = (
        defs()
        .resolve_job_def("daily_ingest")
        .execute_in_process(partition_key="2026-11-23", raise_on_error=False)
    )
    assert launched.success
    capsys.readouterr()
    # the empty days' range (the sample days' rerun is `test_cli_run`'s byte-identical rerun)
    assert main(["run", "--samples", "none", "--partitions", "2026-11-21..2026-11-23"]) == 0
    out = capsys.readouterr().out
    assert "[distill] skipped raw folder traces/2026-11-22: an empty folder: nothing to ingest" in (
        out.splitlines()
    )
    assert "daily_ingest 2026-11-21: ok" in out
    assert "daily_ingest 2026-11-22" not in out
    assert _published(settings) == before
