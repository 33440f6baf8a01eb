"""Telemetry benchmark: raw JSONL → every part-1 table (issue 11), against a bare DuckDB COPY.

Generates telemetry with `distill_assets.samples.telemetry` (the committed samples' generator, ~5%
bad lines) in chunks of CHUNK_MB under one ingest day in bench/data/ (reused on the next run), at
least `size` MB (default 500), and measures in the same invocation, on the same files:

- `copy`: the baseline, `COPY (SELECT * FROM read_json(files, format='newline_delimited',
  ignore_errors=true)) TO '…parquet'`;
- `distill`: every part-1 asset for that day, materialized from the real definitions into a
  temporary lake in one process (the `daily_ingest` job for `events` + `quarantine`,
  `validation`, `accepted_events`, `triage`, `dialogues`, then the `publish_release` job for the
  global `deletions`, `consent`, `exclusions`, `player_quality` and `payouts`; no asset checks).

Each is timed `REPEATS` times, interleaved, and the fastest run counts; the table reports MB/s of
raw input and the ratio distill / copy (target ≤ 2.0). `distill` runs in a fresh process, whose
peak RSS is reported too.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from functools import cache
from pathlib import Path

import dagster as dg
import duckdb

DATA = Path(__file__).resolve().parent / "data"
DAY = "2026-11-19"
CHUNK_MB = 50
SCALE_PER_MB = 13  # generator batches per MB of output (measured: ~75 KB per batch)
FULL_SIZE_MB = 500
QUICK_SIZE_MB = 4
REPEATS = 2
SOURCE = "telemetry"
# the part-1 tables (issue 11): built per ingest day, then over all history
DAILY_TABLES = ("events", "quarantine", "validation", "accepted_events", "triage", "dialogues")
GLOBAL_TABLES = ("deletions", "consent", "exclusions", "player_quality", "payouts")


def dataset(size_mb: int) -> Path:
    """Return a raw root with at least `size_mb` of telemetry for DAY (generated once)."""
    from distill_assets.samples.telemetry import generate_day

    root = DATA / f"telemetry-{size_mb}MB"
    folder = root / "telemetry" / DAY
    if folder.is_dir() and sum(p.stat().st_size for p in folder.iterdir()) >= size_mb * 1e6:
        return root
    shutil.rmtree(root, ignore_errors=True)
    folder.mkdir(parents=True)
    written, chunk = 0, 0
    while written < size_mb * 1e6:
        chunk_mb = min(CHUNK_MB, max(1, size_mb - int(written / 1e6)))
        with tempfile.TemporaryDirectory() as tmp:
            day = generate_day(
                Path(tmp), DAY, chunk_mb * SCALE_PER_MB, seed=chunk, consent_all=True
            )
            for path in day.files:
                target = folder / f"chunk{chunk:03d}-{path.name}"
                shutil.move(path, target)
                written += target.stat().st_size
        chunk += 1
    return root


def _copy(files: list[str], out: Path) -> None:
    con = duckdb.connect()
    try:
        con.execute(
            "COPY (SELECT * FROM read_json($files, format='newline_delimited', "
            f"ignore_errors=true)) TO '{out}' (FORMAT parquet)",
            {"files": files},
        )
    finally:
        con.close()


@cache
def _definitions() -> dg.Definitions:
    """Return the project's definitions (built once per process)."""
    from distill_assets.definitions import defs

    return defs()


def _run_config(raw_root: Path, lake_root: Path) -> dict:
    """Point the real resources at the benchmark's raw data and temporary lake (quiet logs)."""
    from distill_assets.defs.player_ids import PLAYER_ID_HASHER
    from distill_assets.operations.launch import QUIET_RUN_CONFIG

    return {
        **QUIET_RUN_CONFIG,
        "resources": {
            "settings": {"config": {"raw_root": str(raw_root), "lake_root": str(lake_root)}},
            "io_manager": {"config": {"lake_root": str(lake_root)}},
            PLAYER_ID_HASHER: {"config": {"key": "bench"}},
        },
    }


def _distill(raw_root: Path, lake_root: Path, laps: dict[str, float]) -> dict[str, int]:
    """Materialize the real part-1 telemetry assets into `lake_root`; return rows per table.

    The project's own jobs run in-process on an ephemeral instance, asset checks left out:
    `daily_ingest` for DAY restricted to DAILY_TABLES, then `publish_release` restricted to
    GLOBAL_TABLES. `laps` gets each step's own time (its tables joined by ` + `).
    """
    from distill_assets.defs.jobs import INGEST_JOB, RELEASE_JOB
    from distill_assets.operations.launch import ROW_COUNT_KEY

    definitions = _definitions()
    run_config = _run_config(raw_root, lake_root)
    counts: dict[str, int] = {}
    with dg.DagsterInstance.ephemeral() as instance:
        for job, tables, partition in (
            (INGEST_JOB, DAILY_TABLES, DAY),
            (RELEASE_JOB, GLOBAL_TABLES, None),
        ):
            selection = [dg.AssetKey([SOURCE, table]) for table in tables]
            result = (
                definitions.resolve_job_def(job)
                .get_subset(asset_selection=set(selection), asset_check_selection=set())
                .execute_in_process(
                    run_config=run_config, instance=instance, partition_key=partition
                )
            )
            step_tables: dict[str, list[str]] = {}
            for event in result.get_asset_materialization_events():
                materialization = event.step_materialization_data.materialization
                table = materialization.asset_key.path[-1]
                step_tables.setdefault(str(event.step_key), []).append(table)
                counts[table] = int(materialization.metadata[ROW_COUNT_KEY].value)
            for event in result.get_step_success_events():
                name = " + ".join(step_tables[str(event.step_key)])
                seconds = event.event_specific_data.duration_ms / 1000
                laps[name] = min(laps.get(name, float("inf")), seconds)
    return counts


def _child(raw_root: Path, lake_root: Path) -> None:
    _definitions()  # loading the definitions is start-up, not work: outside the clock
    laps: dict[str, float] = {}
    start = time.perf_counter()
    counts = _distill(raw_root, lake_root, laps)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall_s": wall, "laps": laps, "counts": counts, "peak_rss_mib": peak}))


def _distill_in_child(raw_root: Path, lake_root: Path) -> dict:
    """Run `_distill` in a fresh process (its own peak RSS); return its times, rows and peak."""
    command = [sys.executable, "-m", "bench.telemetry_pipeline", "child"]
    done = subprocess.run(
        [*command, str(raw_root), str(lake_root)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "DISTILL_PARTITIONS_START": DAY},
    )
    if done.returncode != 0:
        raise RuntimeError(f"telemetry distill failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False, size_mb: int | None = None) -> str:
    """Run the benchmark and return its Markdown section."""
    size = size_mb or (QUICK_SIZE_MB if quick else FULL_SIZE_MB)
    raw_root = dataset(size)
    files = sorted(str(p) for p in (raw_root / "telemetry" / DAY).iterdir())
    raw_mb = sum(Path(f).stat().st_size for f in files) / 1e6
    best = {"copy": float("inf"), "distill": float("inf")}
    counts: dict[str, int] = {}
    laps: dict[str, float] = {}
    peak = float("inf")
    for _ in range(1 if quick else REPEATS):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            _copy(files, Path(tmp) / "copy.parquet")
            best["copy"] = min(best["copy"], time.perf_counter() - start)
            child = _distill_in_child(raw_root, Path(tmp) / "lake")
            best["distill"] = min(best["distill"], child["wall_s"])
            for name, seconds in child["laps"].items():
                laps[name] = min(laps.get(name, float("inf")), seconds)
            counts, peak = child["counts"], min(peak, child["peak_rss_mib"])
    ratio = best["distill"] / best["copy"]
    records = counts["events"] + counts["quarantine"]
    copy_s, distill_s = best["copy"], best["distill"]
    lines = [
        f"### Telemetry: raw JSONL → all part-1 tables ({raw_mb:.0f} MB, {records:,} records)",
        "",
        "| step | seconds | MB/s | vs copy |",
        "| --- | ---: | ---: | ---: |",
        f"| copy (DuckDB read_json → Parquet) | {copy_s:.2f} | {raw_mb / copy_s:.0f} | 1.00× |",
        f"| distill (bronze … payouts) | {distill_s:.2f} | {raw_mb / distill_s:.0f} "
        f"| {ratio:.2f}× |",
        *(
            f"| … {name} | {seconds:.2f} | {raw_mb / seconds:.0f} | {seconds / copy_s:.2f}× |"
            for name, seconds in laps.items()
        ),
        "",
        "rows: " + ", ".join(f"{k} {v:,}" for k, v in counts.items()),
        "",
        f"peak RSS of the distill process: {peak:.0f} MiB",
    ]
    return "\n".join(lines)


if __name__ == "__main__" and sys.argv[1:2] == ["child"]:
    _child(Path(sys.argv[2]), Path(sys.argv[3]))
elif __name__ == "__main__":
    print(
        run(
            quick="--quick" in sys.argv,
            size_mb=int(sys.argv[1]) if sys.argv[1:2] and sys.argv[1].isdigit() else None,
        )
    )
