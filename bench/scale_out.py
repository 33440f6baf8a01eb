"""Scale-out benchmark: ingest partitions on 1 vs 2 processes; the release on S3 vs local disk.

In one invocation, on the same generated raw data (`distill sample`, `DAYS` ingest dates at
`SCALE`, default 25 or `DISTILL_BENCH_SCALE`, into bench/data/scale_out/, reused by the next run):

- `ingest, 1 process`: the `DAYS` partitions of `daily_ingest`, one Dagster run after another in
  one process (`dagster.execute_job`, in-process executor, a persistent instance);
- `ingest, 2 processes`: the same days, two runs at a time in two processes, as the instance's
  run queue starts them with `max_concurrent_runs: 2` (`deploy/`): every day's steps that read no
  earlier day side by side, then the steps that do (telemetry's player state and novelty) day
  after day, oldest first (`operations.scaleout.Phase`); speedup = 1 process / 2 processes;
- `release, local disk`: `publish_release` (curation, candidate, checks, publish) over the lake
  the serial ingest wrote, with lake and hub on local disk;
- `release, S3 (moto)`: the same lake uploaded to a moto S3 server on 127.0.0.1, lake and hub on
  `s3://`; ratio = S3 / local.

Both ingests must publish byte-identical lakes (checked). Each figure is the wall time of the
work inside its process (after imports). Needs the `test-integration` extra for the S3 rows
(`make test-integration` installs it); without moto they are skipped.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

from bench.process import child_json

DAYS = 4
SCALE = int(os.environ.get("DISTILL_BENCH_SCALE", "25"))
QUICK_SCALE = 1
START = "2026-11-01"
PROCESSES = 2
BUCKET = "distill-bench"
# generated data only: the public development player-id key is allowed (docs/privacy.md)
DEVELOPMENT = "development"
DATA = Path(__file__).resolve().parent / "data" / "scale_out"


def _partitions() -> list[str]:
    from datetime import date, timedelta

    first = date.fromisoformat(START)
    return [(first + timedelta(days=i)).isoformat() for i in range(DAYS)]


def _generate(scale: int) -> Path:
    raw = DATA / f"scale-{scale}" / "raw"
    if not (raw / ".complete").exists():
        subprocess.run(
            [
                str(Path(sys.executable).parent / "distill"),
                "sample",
                "--out",
                str(raw),
                "--days",
                str(DAYS),
                "--scale",
                str(scale),
                "--start",
                START,
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "DISTILL_ENV": DEVELOPMENT},
        )
        (raw / ".complete").touch()
    return raw


def _env(work: Path, raw: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILL_", "DAGSTER_"))}
    env.update(
        DISTILL_ENV=DEVELOPMENT,
        DISTILL_DATA_DIR=str(work / "data"),
        DISTILL_RAW_ROOT=str(raw),
        DAGSTER_HOME=str(work / "dagster_home"),
    )
    (work / "dagster_home").mkdir(parents=True, exist_ok=True)
    env.update(extra)
    return env


def _digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*.parquet") if "release" not in p.parts):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _succeeded(result, what: str) -> bool:
    """Return whether a Dagster run succeeded; print why it did not (one line per failed step)."""
    for event in result.get_step_failure_events():
        error = event.event_specific_data.error
        while error.cause is not None:
            error = error.cause
        print(f"{what}: step {event.step_key} failed: {error.message.strip()}", file=sys.stderr)
    return result.success


def _ingest_partition(partition: str, phase_name: str = "all") -> bool:
    import dagster as dg

    from distill_assets.operations.scaleout import Phase, execute_ingest

    with dg.DagsterInstance.get() as instance:
        result = execute_ingest(partition, instance, "in_process", 1, Phase(phase_name))
        return _succeeded(result, f"ingest {partition} ({phase_name})")


def _ingest(processes: int, partitions: list[str]) -> bool:
    """Ingest `partitions` in `processes` processes, as a production run queue with that limit.

    One process: each day whole, oldest first. More: every day's parallel phase at once, then
    each day's ordered phase (steps that read earlier days), oldest first, as Dagster's backfills
    order them (`operations.scaleout.Phase`); both give the same lake.
    """
    if processes == 1:
        return all(_ingest_partition(p) for p in sorted(partitions))
    import dagster as dg

    with dg.DagsterInstance.get():  # create the storage once, before the processes share it
        pass
    with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
        parallel = list(pool.map(_ingest_partition, partitions, ["parallel"] * len(partitions)))
    return all(parallel) and all(_ingest_partition(p, "ordered") for p in sorted(partitions))


def _release() -> bool:
    import dagster as dg

    from distill_assets.definitions import defs
    from distill_assets.defs.jobs import RELEASE_JOB
    from distill_assets.operations.launch import QUIET_RUN_CONFIG

    with dg.DagsterInstance.get() as instance:
        job = defs().resolve_job_def(RELEASE_JOB)
        result = job.execute_in_process(
            instance=instance, run_config=QUIET_RUN_CONFIG, raise_on_error=False
        )
        return _succeeded(result, "release")


def _s3_release(lake: Path, raw: Path, work: Path) -> float | None:
    try:
        import s3fs

        from tests.integration.servers import moto_s3_server
    except ImportError:
        return None
    work.mkdir(parents=True, exist_ok=True)
    with moto_s3_server(work / "moto.log") as s3_env:
        fs = s3fs.S3FileSystem(
            key=s3_env["AWS_ACCESS_KEY_ID"],
            secret=s3_env["AWS_SECRET_ACCESS_KEY"],
            endpoint_url=s3_env["AWS_ENDPOINT_URL"],
            skip_instance_cache=True,
        )
        fs.mkdir(BUCKET)
        fs.put(str(lake), f"{BUCKET}/lake", recursive=True)
        env = _env(
            work,
            raw,
            **s3_env,
            DISTILL_LAKE_ROOT=f"s3://{BUCKET}/lake",
            DISTILL_HUB_ROOT=f"s3://{BUCKET}/hub",
        )
        return _seconds(["release"], env)


def _seconds(args: list[str], env: dict[str, str]) -> float:
    """Run one step of this bench in a child process; return its wall seconds."""
    return child_json("bench.scale_out", args, env)["seconds"]


def run(quick: bool = False) -> str:
    scale = QUICK_SCALE if quick else SCALE
    raw = _generate(scale)
    partitions = _partitions()
    raw_mb = sum(p.stat().st_size for p in raw.rglob("*") if p.is_file()) / 1e6
    with tempfile.TemporaryDirectory(prefix="distill-bench-") as scratch:
        tmp = Path(scratch)
        serial_env = _env(tmp / "serial", raw)
        parallel_env = _env(tmp / "parallel", raw)
        days = ",".join(partitions)
        serial = _seconds(["ingest", "--processes", "1", "--partitions", days], serial_env)
        parallel = _seconds(
            ["ingest", "--processes", str(PROCESSES), "--partitions", days], parallel_env
        )
        lake = tmp / "serial" / "data" / "lake"
        identical = _digest(lake) == _digest(tmp / "parallel" / "data" / "lake")
        if not identical:
            raise RuntimeError("parallel ingest wrote a different lake than the serial one")
        s3 = _s3_release(lake, raw, tmp / "s3")
        local = _seconds(["release"], serial_env)
    rows = [
        "## Scale-out (`bench/scale_out.py`)",
        "",
        f"{DAYS} partitions (`distill sample --scale {scale}`, {raw_mb:.1f} MB raw in all); "
        "lakes of both ingests byte-identical: yes.",
        "",
        "| what | wall s | ratio |",
        "| --- | ---: | ---: |",
        f"| ingest, 1 process | {serial:.1f} | 1.00 |",
        f"| ingest, {PROCESSES} processes | {parallel:.1f} | speedup {serial / parallel:.2f} |",
        f"| release, local disk | {local:.1f} | 1.00 |",
    ]
    if s3 is None:
        rows.append("| release, S3 (moto) | skipped: `pip install -e '.[test-integration]'` | |")
    else:
        rows.append(f"| release, S3 (moto on 127.0.0.1) | {s3:.1f} | × {s3 / local:.2f} |")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out")
    parser.add_argument("what", choices=["ingest", "release"])
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--partitions", default="", help="comma-separated partition keys")
    args = parser.parse_args(argv)
    import dagster  # noqa: F401  (imports are not part of the measured time)

    import distill_assets.definitions  # noqa: F401

    started = time.perf_counter()
    ok = (
        _ingest(args.processes, args.partitions.split(",")) if args.what == "ingest" else _release()
    )
    seconds = time.perf_counter() - started
    print(json.dumps({"ok": ok, "seconds": seconds}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
