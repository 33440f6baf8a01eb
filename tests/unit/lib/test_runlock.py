import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml
from dagster._core.storage.dagster_run import DagsterRun

from distill_assets.lib.runlock import (
    LOCK_FILE,
    PID_TAG,
    LockHeld,
    fail_orphaned_runs,
    open_instance,
    run_lock,
)
from tests.conftest import PROJECT_ROOT


def test_the_lock_is_reentrant_in_its_process_and_reusable(tmp_path: Path) -> None:
    """The runs a `distill` command executes in-process take it again under the command's hold."""
    with run_lock(str(tmp_path)) as path:
        assert path == tmp_path / LOCK_FILE
        assert path.read_text().startswith("since ")
        with run_lock(str(tmp_path), run_id="abc") as inner:
            assert inner == path
        assert f"pid {os.getpid()}" in path.read_text()
    assert path.read_text() == ""
    with run_lock(str(tmp_path), run_id="abc"):
        assert path.read_text().endswith(f"pid {os.getpid()}, run abc\n")


def test_a_lock_left_by_a_killed_process_is_taken_over(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from distill_assets.lib.runlock import run_lock\n"
            f"with run_lock({str(tmp_path)!r}):\n"
            "    print('locked', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "locked"
    with pytest.raises(LockHeld, match=f"pid {holder.pid}"), run_lock(str(tmp_path)):
        pass
    holder.kill()
    holder.wait()
    assert (tmp_path / LOCK_FILE).read_text().startswith("since ")  # the stale file stays
    with run_lock(str(tmp_path)):
        pass


def test_runs_of_a_dead_distill_process_are_marked_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    instance = open_instance(home)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    started = dg.DagsterRunStatus.STARTED
    for run_id, tags in (
        ("dead", {PID_TAG: dead.stdout.strip()}),
        ("alive", {PID_TAG: str(os.getpid())}),
        ("daemon", {}),
    ):
        instance.add_run(
            DagsterRun(job_name="daily_ingest", run_id=run_id, status=started, tags=tags)
        )
    assert fail_orphaned_runs(instance) == ["dead"]
    statuses = {r: instance.get_run_by_id(r).status for r in ("dead", "alive", "daemon")}
    assert statuses == {
        "dead": dg.DagsterRunStatus.FAILURE,
        "alive": started,
        "daemon": started,
    }


def test_the_instance_config_enables_run_monitoring() -> None:
    config = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())
    assert config["run_monitoring"]["enabled"] is True
    assert config["run_monitoring"]["max_resume_run_attempts"] == 0
