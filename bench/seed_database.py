"""The seed database's rewrite after the publish: the old single step vs the two new ones.

`escalations/export_history` used to rewrite `distilled/distillation.db` whole after the publish;
now `escalations/seed_database` stages it beside curation and `export_history` finishes it
(docs/sources/escalations.md#distillation-database). On a copy of a kept night (`--data`: its
data dir, `lake/` hard-linked with `cp -al`, `distilled/` copied; both are rewritten), each step
runs alone in a fresh `nice -n 19` process, interleaved: the old `export_history` (the package
in `--old`, e.g. `git archive <commit> distill_assets pyproject.toml | tar -x -C <old>`), then
the new `seed_database` and `export_history`, `--repeats` times. Per step: the process's wall and
CPU (its children's rusage) and the step's wall (`STEP_START` → `STEP_SUCCESS`, what
`bench.night` records). `python -m bench.seed_database --data <copy> --old <old> --repeats 2`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
OLD = ("old export_history", "escalations/export_history")
NEW = (
    ("new seed_database", "escalations/seed_database"),
    ("new export_history", "escalations/export_history"),
)


def _child(key: str) -> None:
    """Materialize `key` of the definitions on `sys.path`; print the step's wall as JSON."""
    import dagster as dg

    from distill_assets.definitions import defs

    job = dg.define_asset_job("bench_job", selection=f'key:"{key}"')
    resolved = dg.Definitions.merge(defs(), dg.Definitions(jobs=[job]))
    kinds = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS}
    with dg.DagsterInstance.ephemeral() as instance:
        result = resolved.resolve_job_def("bench_job").execute_in_process(
            instance=instance, raise_on_error=True
        )
        times = {
            e.dagster_event.event_type: e.timestamp
            for e in instance.all_logs(result.run_id, of_type=kinds)
            if e.dagster_event is not None
        }
    wall = times[dg.DagsterEventType.STEP_SUCCESS] - times[dg.DagsterEventType.STEP_START]
    print(json.dumps({"step_wall_s": round(wall, 2)}))


def _run(key: str, data: Path, package: Path, cpu_before: float) -> tuple[dict, float]:
    """Run one step in a fresh niced process; return its measures and the children's CPU so far."""
    env = {**os.environ, "DISTILL_DATA_DIR": str(data), "PYTHONPATH": f"{package}:{PROJECT}"}
    for name in ("DISTILL_RAW_ROOT", "DISTILL_LAKE_ROOT", "DISTILL_HUB_ROOT", "DAGSTER_HOME"):
        env.pop(name, None)
    started = time.perf_counter()
    done = subprocess.run(
        ["nice", "-n", "19", sys.executable, "-m", "bench.seed_database", "--child", key],
        env=env,
        cwd=PROJECT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(done.stderr[-4000:])
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    step = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall_s": round(wall, 1), "cpu_s": round(cpu - cpu_before, 1), **step}, cpu


def main(argv: list[str] | None = None) -> None:
    """Run the steps interleaved and print one JSON line per step run."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="the data dir of a copy of a kept night")
    parser.add_argument("--old", type=Path, help="a folder holding the old distill_assets")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return
    cpu = 0.0
    for repeat in range(args.repeats):
        for (label, key), package in ((OLD, args.old), *((n, PROJECT) for n in NEW)):
            measured, cpu = _run(key, args.data.resolve(), package.resolve(), cpu)
            print(json.dumps({"repeat": repeat, "step": label, **measured}), flush=True)


if __name__ == "__main__":
    main()
