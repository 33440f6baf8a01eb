"""Run one benchmark step in a child process (its own imports, memory and clock)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent


def child_json(module: str, args: list[str], env: dict[str, str] | None = None) -> dict:
    """Run `python -m <module> <args>` from the project root; return the JSON it prints last.

    A failing child raises `RuntimeError` with the tails of its output.
    """
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stdout[-2000:] + done.stderr[-4000:])
    return json.loads(done.stdout.strip().splitlines()[-1])
