"""Running the real `distill` CLI in a child process with a given environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_ROOT, SAMPLES

BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 900


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Return this process's environment without distill/Dagster/HF settings, plus `extra`.

    Runs use the development player key (`DISTILL_ENV=development`), as `make test` does.
    """
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DISTILL_", "DAGSTER_", "HF_", "AWS_"))
    }
    env.update(
        DISTILL_DATA_DIR=str(tmp_path / "data"),
        DAGSTER_HOME=str(tmp_path / "dagster_home"),
        HF_HOME=str(tmp_path / "hf_home"),
        DISTILL_ENV="development",
    )
    (tmp_path / "dagster_home").mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


def run_ok(cmd: list[str], env: dict[str, str], cwd: Path = PROJECT_ROOT) -> str:
    """Run `cmd` in a child process; return its output (it must succeed within the timeout)."""
    done = subprocess.run(
        cmd,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout


def distill_run(env: dict[str, str], cwd: Path) -> str:
    """Run `distill run` on the committed samples; return its output (it must succeed)."""
    return run_ok([str(BIN / "distill"), "run", "--samples", str(SAMPLES)], env, cwd)
