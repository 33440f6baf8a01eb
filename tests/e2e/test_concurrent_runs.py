"""Two `distill run` started together on a fresh DAGSTER_HOME, then a third one."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT, SAMPLES

pytestmark = pytest.mark.e2e
DISTILL = str(Path(sys.executable).parent / "distill")


def test_concurrent_runs_end_cleanly_and_a_third_run_works(tmp_path: Path) -> None:
    samples = tmp_path / "samples"
    shutil.copytree(SAMPLES / "revisions" / "2026-11-19", samples / "revisions" / "2026-11-19")
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILL_", "DAGSTER_"))}
    env.update(
        DISTILL_DATA_DIR=str(tmp_path / "data"), DAGSTER_HOME=str(home), DISTILL_ENV="development"
    )
    # one source's one day: the lock and the fresh DAGSTER_HOME's storage setup are raced all the
    # same, without ingesting the other sources' (empty) day three times
    cmd = [DISTILL, "run", "--samples", str(samples), "--source", "revisions"]
    runs = [
        subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outcomes = sorted((run.wait(timeout=300), run.stdout.read()) for run in runs)  # type: ignore[union-attr]
    codes = [code for code, _ in outcomes]
    assert codes in ([0, 0], [0, 3]), outcomes
    if codes == [0, 3]:
        assert "another run holds the lock" in outcomes[1][1]
        assert f"{tmp_path / 'data' / '.distill.lock'}" in outcomes[1][1]
        assert "since " in outcomes[1][1]
        assert "pid " in outcomes[1][1]
    third = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert third.returncode == 0, third.stdout + third.stderr
    assert "published at" in third.stdout
    assert "alembic" not in third.stderr
