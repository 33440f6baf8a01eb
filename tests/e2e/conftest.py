"""The committed samples' night through the real CLI, made once per `make test` for every file.

`distill run --samples data/samples` is the setup of `test_cli_run` and `test_stale_backfill`;
the night is made once per pytest session, across xdist workers (the first worker to ask makes
it under a `flock`, the others wait for it), and every test gets its own copy of the data dir.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import SAMPLES

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Night:
    """A data dir `distill run` published the samples into, and what the run printed."""

    data: Path
    stdout: str
    stderr: str


def cli_env(root: Path) -> dict[str, str]:
    """The environment of a CLI run on the data dir `root / "data"` and its project instance.

    No `DAGSTER_HOME`: the runs record on the project's instance, `<data dir>/.dagster`.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILL_", "DAGSTER_"))}
    env["DISTILL_DATA_DIR"] = str(root / "data")
    env["DISTILL_ENV"] = "development"
    env["HF_HOME"] = str(root / "hf_home")
    env["HF_DATASETS_OFFLINE"] = "1"
    return env


def _make_night(root: Path) -> Night:
    cmd = [str(BIN / "distill"), "run", "--samples", str(SAMPLES)]
    done = subprocess.run(
        cmd, env=cli_env(root), capture_output=True, text=True, cwd=root, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (root / "stdout").write_text(done.stdout, encoding="utf-8")
    (root / "stderr").write_text(done.stderr, encoding="utf-8")
    return Night(root / "data", done.stdout, done.stderr)


@pytest.fixture(scope="session")
def sample_night(tmp_path_factory: pytest.TempPathFactory) -> Night:
    """The samples published by one `distill run`, made once per session (read it, never write).

    Under xdist the workers' temporary folders share a parent, where the first worker makes
    the night while holding a lock; the others find it there.
    """
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    root = shared / "sample_night"
    with (shared / "sample_night.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "stderr").is_file():
            stdout = (root / "stdout").read_text(encoding="utf-8")
            return Night(root / "data", stdout, (root / "stderr").read_text(encoding="utf-8"))
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir()
        return _make_night(root)


def copy_night(night: Night, root: Path) -> Path:
    """Copy the night's data dir to `root / "data"` (for a test that runs on it) and return it."""
    shutil.copytree(night.data, root / "data", symlinks=True)
    return root / "data"


def warnings_in(stderr: str) -> list[str]:
    """The Python warnings a run printed (Dagster's own log lines are not warnings)."""
    return [line for line in stderr.splitlines() if re.search(r"\w+Warning: ", line)]
