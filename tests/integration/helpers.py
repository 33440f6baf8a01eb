"""Running the real `distill` CLI in a child process with a given environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import SAMPLES

BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 900


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Return this process's environment without distill/Dagster/HF settings, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DISTILL_", "DAGSTER_", "HF_", "AWS_"))
    }
    env.update(
        DISTILL_DATA_DIR=str(tmp_path / "data"),
        DAGSTER_HOME=str(tmp_path / "dagster_home"),
        HF_HOME=str(tmp_path / "hf_home"),
    )
    (tmp_path / "dagster_home").mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


def distill_run(env: dict[str, str], cwd: Path) -> str:
    """Run `distill run` on the committed samples; return its output (it must succeed)."""
    done = subprocess.run(
        [str(BIN / "distill"), "run", "--samples", str(SAMPLES)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=RUN_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    return done.stdout
