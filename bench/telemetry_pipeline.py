"""Telemetry benchmark: raw JSONL → every part-1 table (issue 11), against a bare DuckDB COPY.

Generates telemetry with `distill_assets.samples.telemetry` (the committed samples' generator, ~5%
bad lines) in chunks of CHUNK_MB under one ingest day in bench/data/ (reused on the next run), at
least `size` MB (default 500), and measures in the same invocation, on the same files:

- `copy`: the baseline, `COPY (SELECT * FROM read_json(files, format='newline_delimited',
  ignore_errors=true)) TO '…parquet'`;
- `distill`: the work of every part-1 asset for that day, in one process: bronze + quarantine
  (`ingest_partition`), `validation`, `accepted_events`, `triage`, `dialogues`, then the global
  `deletions`, `consent`, `exclusions`, `player_quality` and `payouts` over that history.

Each is timed `REPEATS` times, interleaved, and the fastest run counts; the table reports MB/s of
raw input and the ratio distill / copy (target ≤ 2.0). `distill` runs in a fresh process, whose
peak RSS is reported too.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import polars as pl

DATA = Path(__file__).resolve().parent / "data"
DAY = "2026-11-19"
CHUNK_MB = 50
SCALE_PER_MB = 13  # generator batches per MB of output (measured: ~75 KB per batch)
FULL_SIZE_MB = 500
QUICK_SIZE_MB = 4
REPEATS = 2


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
            day = generate_day(Path(tmp), DAY, chunk_mb * SCALE_PER_MB, seed=chunk)
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


def _distill(raw_root: Path, lake_root: Path, laps: dict[str, float]) -> dict[str, int]:
    from distill_assets.contracts import telemetry
    from distill_assets.defs.ingest import ingest_partition
    from distill_assets.defs.telemetry import privacy
    from distill_assets.defs.telemetry.assets import parse_params
    from distill_assets.defs.telemetry.dialogues import build_dialogues
    from distill_assets.defs.telemetry.payouts import payouts
    from distill_assets.defs.telemetry.resources import PlayerIdHasher
    from distill_assets.defs.telemetry.triage import triage
    from distill_assets.defs.telemetry.trust import player_quality, trust_signals, trust_walk
    from distill_assets.defs.telemetry.validation import validate_events
    from distill_assets.lib.lake import move_into_place, partition_path, write_parquet_atomic
    from distill_assets.lib.rawfiles import list_raw_files

    def path(table: str) -> Path:
        return Path(partition_path(str(lake_root), "telemetry", table, DAY))

    clock = [time.perf_counter()]

    def lap(name: str) -> None:
        now = time.perf_counter()
        laps[name] = min(laps.get(name, float("inf")), now - clock[0])
        clock[0] = now

    params, _ = parse_params(PlayerIdHasher(key="bench"))
    files = list_raw_files(str(raw_root), "telemetry", DAY)
    result = ingest_partition(
        telemetry.RAW,
        files,
        raw_root=str(raw_root),
        params=params,
        bronze_exclude=("line",),
    )
    move_into_place(result.bronze.path, partition_path(str(lake_root), "telemetry", "events", DAY))
    move_into_place(
        result.quarantine.path, partition_path(str(lake_root), "telemetry", "quarantine", DAY)
    )
    lap("bronze + quarantine")
    events = pl.scan_parquet(path("events"))
    validation = validate_events(events)
    write_parquet_atomic(validation, partition_path(str(lake_root), "telemetry", "validation", DAY))
    lap("validation")
    no_one = pl.LazyFrame(schema={"player_key": pl.String()})
    staged = Path(lake_root) / "silver.parquet"
    silver_rows = privacy.write_accepted_events(path("events"), validation.lazy(), no_one, staged)
    move_into_place(staged, partition_path(str(lake_root), "telemetry", "accepted_events", DAY))
    silver_lazy = pl.scan_parquet(path("accepted_events")).with_columns(
        pl.lit(DAY).alias("partition")
    )
    lap("accepted_events")
    triaged = triage(silver_lazy)
    write_parquet_atomic(triaged, partition_path(str(lake_root), "telemetry", "triage", DAY))
    lap("triage")
    dialogues, _ = build_dialogues(silver_lazy.rename({"event_time": "server_ts"}))
    write_parquet_atomic(dialogues, partition_path(str(lake_root), "telemetry", "dialogues", DAY))
    lap("dialogues")
    account = events.select(
        "event_id", "event_type", "player_key", "server_ts", "client_ts", "payload"
    )
    deletions = privacy.deletion_requests(account)
    consent = privacy.consent_state(account)
    exclusions = privacy.exclusions(
        events.select("player_key").unique(), consent.lazy(), deletions.lazy()
    )
    lap("deletions + consent + exclusions")
    walk = trust_walk(trust_signals(silver_lazy))
    quality = player_quality(
        walk,
        triaged.lazy().select("player_key", (pl.col("decision") == "process").alias("high_value")),
        validation.lazy().filter(pl.col("check") == "bot_signature").select("player_key"),
    )
    paid = payouts(silver_lazy, walk)
    lap("player_quality + payouts")
    return {
        "bronze": result.bronze_rows,
        "quarantine": result.quarantine_rows,
        "validation": validation.height,
        "accepted_events": silver_rows,
        "triage": triaged.height,
        "dialogues": dialogues.height,
        "exclusions": exclusions.height,
        "player_quality": quality.height,
        "payouts": paid.height,
    }


def _child(raw_root: Path, lake_root: Path) -> None:
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
        [*command, str(raw_root), str(lake_root)], capture_output=True, text=True, check=False
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
    records = counts["bronze"] + counts["quarantine"]
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
