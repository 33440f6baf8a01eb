"""Escalations benchmark: raw JSONL → `distillation_examples` → the four export feeds.

Generates escalations with `distill_assets.samples.escalations` (one plain `.jsonl` and one
`.jsonl.gz` per day, the committed samples' scenarios and ~16% bad lines) at, by default, at
least 300 MB of input into bench/data/ (reused on the next run), and measures in the same
invocation and on the same files:

- `copy`: the baseline, a bare DuckDB `COPY (SELECT * FROM read_json(files,
  format='newline_delimited', ignore_errors=true)) TO '…parquet' (FORMAT parquet)`;
- `bronze`: the shared raw ingest alone (`records.ingest_records`: bronze + quarantine), part of
  the pipeline, for reference;
- `pipeline`: what the partition's assets do — `records.ingest_records` (bronze + quarantine),
  `examples.example_batches` (every extraction rule, flags, score, in batches) written with
  `lake.write_frames`, and `exports.write_export` for the four formats.

Each step runs in its own process (wall time covers the work, not start-up and imports; peak
RSS is that process's own `ru_maxrss`), `repeats` times interleaved, and the fastest run counts.
`--quick` (via `python -m bench --quick`) uses a tiny size as a smoke test.
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
DAY = "2026-11-19"
SEED = 0
FULL_MB = 300.0
QUICK_MB = 3.0
STEPS = ("copy", "bronze", "pipeline")


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.jsonl*") if p.is_file())


def dataset(size_mb: float) -> Path:
    """Return a raw root holding at least `size_mb` MB of generated escalations (made once)."""
    from distill_assets.samples.escalations import generate_day

    root = DATA / f"escalations-{size_mb:g}MB-seed{SEED}"
    marker = root / ".complete"
    if marker.is_file():
        return root
    with tempfile.TemporaryDirectory() as tmp:
        generate_day(tmp, DAY, 10, SEED)
        per_scale = _size(Path(tmp)) / 10
    scale = max(1, int(size_mb * 1e6 / per_scale) + 1)
    while True:
        generate_day(root, DAY, scale, SEED)
        if _size(root) >= size_mb * 1e6:
            break
        scale = int(scale * size_mb * 1e6 / _size(root)) + 1
    marker.write_text(json.dumps({"scale": scale, "bytes": _size(root)}))
    return root


def _files(root: Path) -> list[str]:
    return sorted(str(p) for p in (root / "escalations" / DAY).glob("*.jsonl*"))


def _step(name: str, root: Path, work: Path) -> dict[str, int]:
    """Run one step in this process and return the rows it produced."""
    import duckdb
    import polars as pl

    if name == "copy":
        target = work / "copy.parquet"
        con = duckdb.connect()
        con.execute(
            f"COPY (SELECT * FROM read_json({_files(root)!r}, format='newline_delimited', "
            f"ignore_errors=true)) TO '{target}' (FORMAT parquet)"
        )
        return {"rows": int(con.execute(f"SELECT count(*) FROM '{target}'").fetchone()[0])}
    from distill_assets.defs.escalations.examples import example_batches
    from distill_assets.defs.escalations.exports import FORMATS, write_export
    from distill_assets.defs.escalations.records import ingest_records
    from distill_assets.lib.lake import write_frames

    result = ingest_records(_files(root), raw_root=str(root))
    if name == "bronze":
        return {"rows": result.bronze_rows + result.quarantine_rows}
    examples_path = work / "distillation_examples.parquet"
    batches = example_batches(pl.scan_parquet(result.bronze.path))
    rows = {"examples": write_frames(batches, examples_path)}
    for export in FORMATS:
        written = write_export(pl.scan_parquet(examples_path), export, work / f"{export}.parquet")
        rows[export] = written.rows
    return {"rows": rows["examples"] + result.quarantine_rows, **rows}


def _child(name: str, root: Path, work: Path) -> None:
    import duckdb  # noqa: F401

    import distill_assets.defs.escalations.exports  # noqa: F401

    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    produced = _step(name, root, work)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak = after.ru_maxrss / 1024
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": peak, **produced}))


def measure(name: str, root: Path, work: Path) -> dict[str, float]:
    """Run one step in a fresh process; return its wall time, rows and peak RSS."""
    command = [
        sys.executable,
        "-m",
        "bench.escalations_pipeline",
        "step",
        name,
        str(root),
        str(work),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bench step {name} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False, repeats: int | None = None) -> str:
    """Run the benchmark and return its Markdown section."""
    size = QUICK_MB if quick else FULL_MB
    repeats = repeats or (1 if quick else 2)
    root = dataset(size)
    mb = _size(root) / 1e6
    best: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(dir=DATA) as tmp:
        for _ in range(repeats):
            for name in STEPS:
                result = measure(name, root, Path(tmp))
                if name not in best or result["wall_s"] < best[name]["wall_s"]:
                    best[name] = result
    copy, copy_cpu = best["copy"]["wall_s"], best["copy"]["cpu_s"]
    lines = [
        f"| {mb:.0f} MB | {name} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
        f"{mb / r['wall_s']:.1f} | {r['peak_rss_mib']:.0f} | {r['wall_s'] / copy:.2f} | "
        f"{r['cpu_s'] / copy_cpu:.2f} |"
        for name, r in best.items()
    ]
    pipeline = best["pipeline"]
    return (
        "### Escalations: raw JSONL → distillation_examples → four exports\n\n"
        f"{os.cpu_count()} cores; best of {repeats}; each step in its own process; "
        f"{pipeline.get('examples', 0):.0f} examples. `× COPY` is wall time over a bare DuckDB "
        "COPY of the same files to Parquet (target ≤ 2.0); `× COPY cpu` the same for CPU time "
        "(user + sys), steadier on a shared machine.\n\n"
        "| input | step | wall s | cpu s | MB/s | peak RSS MiB | × COPY | × COPY cpu |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n" + "\n".join(lines)
    )


if __name__ == "__main__":
    if sys.argv[1] == "step":
        _child(sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]))
