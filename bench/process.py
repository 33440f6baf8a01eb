"""Run one benchmark step in a child process (its own imports, memory and clock)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


def print_measured(work: Callable[[Path], dict]) -> None:
    """Run `work(scratch folder)` in this process and print its result with its cost as JSON.

    The cost: `wall_s`, `cpu_s` (user + system) and `peak_rss_mib` (the process's, imports
    included), the line `child_json` reads back.
    """
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        result = work(Path(tmp))
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(
        json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": after.ru_maxrss / 1024, **result})
    )
