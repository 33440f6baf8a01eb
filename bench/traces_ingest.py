"""Trace ingest benchmark: raw JSONL → bronze `traces/events` → `traces/sft_steps`.

Generates llm-repo-agent traces with `distill_assets.samples.traces` (plain `.jsonl`, the same
scenarios and ~5% bad lines as the committed samples) at two sizes, by default at least 0.5 GB
and 1 GB, into bench/data/ (reused on the next run), and measures, in the same invocation and on
the same files:

- `copy`: the baseline, a bare DuckDB `COPY (SELECT * FROM read_json(files,
  format='newline_delimited', ignore_errors=true, columns=…)) TO '…parquet' (FORMAT parquet,
  ROW_GROUP_SIZE 8192)`. The bad lines make a strict read_json fail, hence `ignore_errors`; and
  they make its schema detection give up and read every line as one JSON value, so `columns` is
  the schema read_json detects on the same generator's clean files (typed structs: what COPY does
  on trace data, bench/README.md's ~160 MB/s reference);
- `copy_json`: the same COPY without `columns` (one JSON column per line), for reference;
- `bronze`: `defs.ingest.ingest_partition` with `contracts.traces.RAW` (the `traces/events` +
  `traces/quarantine` asset);
- `sft_steps`: `defs.traces.sft_extraction.Extraction` writing `sft_steps` and `dropped_steps` (the
  `traces/sft_steps` asset's work, from bronze);
- `sft_tool_steps` and `runs`, the other outputs built from the same bronze, for reference.

Every step runs in its own process (its wall time covers the work, not interpreter start-up and
imports), started by a wrapper process that reads the step's peak RSS with
`resource.getrusage(RUSAGE_CHILDREN)` (so each figure is that step's alone). Each step runs
`repeats` times, interleaved with the baseline, and the fastest run counts. `--quick` (via
`python -m bench --quick`) uses tiny sizes as a smoke test.
"""

import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

DATA = Path(__file__).resolve().parent / "data"
DAY = "2026-11-19"
SEED = 0
FULL_SIZES_GB = (0.5, 1.0)
QUICK_SIZES_GB = (0.004, 0.008)
CALIBRATION_BATCHES = 64
STEPS = ("copy", "copy_json", "bronze", "sft_steps", "sft_tool_steps", "runs")
PIPELINE = ("bronze", "sft_steps")


def dataset(size_gb: float) -> Path:
    """Return a raw root holding at least `size_gb` of generated traces (generated once).

    The batches of a calibration run give the scale; if the result falls short (the multi-MB
    tool outputs make batches uneven), the scale grows by the shortfall and the day is written
    again.
    """
    from distill_assets.samples.traces import generate_day

    root = DATA / f"traces-{size_gb:g}GB-seed{SEED}"
    target = size_gb * 1e9
    marker = root / ".complete"
    if marker.is_file() and json.loads(marker.read_text())["bytes"] >= target:
        return root
    with tempfile.TemporaryDirectory() as tmp:
        generate_day(tmp, DAY, CALIBRATION_BATCHES, SEED, plain=True)
        per_batch = _size(Path(tmp)) / CALIBRATION_BATCHES
    scale, size = max(1, math.ceil(target / per_batch)), 0
    while True:
        shutil.rmtree(root, ignore_errors=True)
        generate_day(root, DAY, scale, SEED, plain=True)
        size = _size(root)
        if size >= target:
            break
        scale = math.ceil(scale * target / size) + 1
    marker.write_text(json.dumps({"scale": scale, "bytes": size}))
    return root


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.jsonl*") if p.is_file())


def _files(root: Path) -> list[str]:
    return sorted(str(p) for p in (root / "traces" / DAY).rglob("*.jsonl*") if p.is_file())


def _step(name: str, root: Path, work: Path) -> dict[str, int]:
    """Run one step in this process and return what it produced."""
    from distill_assets.contracts.traces import RAW
    from distill_assets.defs.ingest import ingest_partition
    from distill_assets.defs.traces.sft_extraction import Extraction, ExtractOptions

    bronze = work / "bronze" / "bronze.parquet"
    if name in ("copy", "copy_json"):
        con = duckdb.connect()
        columns = f", columns={_typed_columns(root)}" if name == "copy" else ""
        relation = (
            f"SELECT * FROM read_json({_files(root)!r}, format='newline_delimited', "
            f"ignore_errors=true{columns})"
        )
        target = work / f"{name}.parquet"
        con.execute(f"COPY ({relation}) TO '{target}' (FORMAT parquet, ROW_GROUP_SIZE 8192)")
        rows = con.execute(f"SELECT count(*) FROM '{target}'").fetchone()
        return {"rows": int(rows[0]) if rows else 0}
    if name == "bronze":
        (work / "bronze").mkdir(parents=True, exist_ok=True)
        result = ingest_partition(RAW, _files(root), raw_root=str(root), workdir=work / "bronze")
        return {"rows": result.bronze_rows + result.quarantine_rows}
    with Extraction(bronze, ExtractOptions()) as extraction:
        if name == "runs":
            extraction.write_runs(work / "runs.parquet")
            return {"rows": pq.ParquetFile(work / "runs.parquet").metadata.num_rows}
        if name == "sft_steps":
            extraction.write_sft_steps(work / "sft_steps.parquet", "together")
            extraction.write_dropped_steps(work / "dropped_steps.parquet")
        else:
            extraction.write_sft_steps(work / "sft_tool_steps.parquet", "tools")
        summary = extraction.summary()
    return {"rows": summary.samples, "samples": summary.samples}


def _step_imports() -> None:
    """Import what the steps use, so their wall time is the work.

    pyarrow.compute imports pandas on its first call (~0.3 s): import time too.
    """
    import pandas  # noqa: F401

    import distill_assets.contracts.traces
    import distill_assets.defs.ingest
    import distill_assets.defs.traces.sft_extraction  # noqa: F401


def _typed_columns(root: Path) -> str:
    """The schema read_json detects on the clean files (no bad lines) of this dataset, as a
    `columns` struct literal."""
    clean = [f for f in _files(root) if Path(f).name == "rollouts-worker-1.jsonl"]
    described = duckdb.execute(
        f"DESCRIBE SELECT * FROM read_json({clean!r}, format='newline_delimited')"
    ).fetchall()
    fields = ", ".join(
        "'{}': '{}'".format(name.replace("'", "''"), kind.replace("'", "''"))
        for name, kind, *_ in described
    )
    return "{" + fields + "}"


def _measure(name: str, root: Path, work: Path) -> dict[str, float]:
    """Run the step in a child process; return its output, wall time and peak RSS."""
    command = [sys.executable, "-m", "bench.traces_ingest", "step", name, str(root), str(work)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bench step {name} failed:\n{done.stderr[-4000:]}")
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"peak_rss_mib": peak_kib / 1024, **json.loads(done.stdout.strip())}


def measure(name: str, root: Path, work: Path) -> dict[str, float]:
    """Measure one step through a fresh wrapper process, so RUSAGE_CHILDREN is that step's."""
    command = [sys.executable, "-m", "bench.traces_ingest", "measure", name, str(root), str(work)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bench measurement of {name} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False, repeats: int | None = None) -> str:
    """Run the benchmark at its sizes and return the Markdown section."""
    sizes = QUICK_SIZES_GB if quick else FULL_SIZES_GB
    repeats = repeats or (1 if quick else 3)
    rows: list[str] = []
    for size_gb in sizes:
        root = dataset(size_gb)
        mb = _size(root) / 1e6
        best: dict[str, dict[str, float]] = {}
        with tempfile.TemporaryDirectory(dir=DATA) as tmp:
            work = Path(tmp)
            for _ in range(repeats):
                for name in STEPS:
                    result = measure(name, root, work)
                    if name not in best or result["wall_s"] < best[name]["wall_s"]:
                        best[name] = result
        rows.extend(_rows(mb, best))
    header = (
        "| input | step | wall s | MB/s | samples/s | peak RSS MiB | × COPY | × COPY (json) |\n"
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    intro = (
        "### Trace ingest: raw JSONL → bronze → sft_steps\n\n"
        f"{os.cpu_count()} cores; best of {repeats}; each step in its own process. "
        "`bronze + sft_steps` is the measured path (wall times add, peak RSS is the larger); "
        "`× COPY` is wall time over the DuckDB COPY baseline (typed columns) on the same files, "
        "`× COPY (json)` over the same COPY reading each line as one JSON value."
    )
    return f"{intro}\n\n{header}\n" + "\n".join(rows)


def _rows(mb: float, best: dict[str, dict[str, float]]) -> list[str]:
    copy = best["copy"]["wall_s"]
    copy_json = best["copy_json"]["wall_s"]
    samples = best["sft_steps"].get("samples", 0)
    pipeline = {
        "wall_s": sum(best[s]["wall_s"] for s in PIPELINE),
        "peak_rss_mib": max(best[s]["peak_rss_mib"] for s in PIPELINE),
        "samples": samples,
    }
    rows = []
    for name, result in [*best.items(), ("bronze + sft_steps", pipeline)]:
        wall = result["wall_s"]
        per_second = f"{result['samples'] / wall:,.0f}" if "samples" in result else ""
        rows.append(
            f"| {mb:,.0f} MB | {name} | {wall:.2f} | {mb / wall:,.0f} | {per_second} "
            f"| {result['peak_rss_mib']:,.0f} | {wall / copy:.2f} | {wall / copy_json:.2f} |"
        )
    return rows


def _main(argv: list[str]) -> int:
    mode, name, root, work = argv[0], argv[1], Path(argv[2]), Path(argv[3])
    if mode == "step":
        # time the work only: interpreter start-up and imports are not part of the step
        _step_imports()
        started = time.perf_counter()
        produced = _step(name, root, work)
        print(json.dumps({**produced, "wall_s": time.perf_counter() - started}))
    else:
        print(json.dumps(_measure(name, root, work)))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
