"""Ingest benchmark: every source's raw JSONL → bronze + quarantine, against a bare DuckDB COPY.

One invocation measures all four sources at two sizes. For each source and size:

- **Data**: the committed samples' generator of the source (`distill_assets.samples.<source>
  .generate_day`: the raw contract's record sizes and nesting, ~5% bad lines of every quarantine
  kind, a torn last line per file) written in parts of at most `PART_MB` (each with its own seed)
  under one ingest day of `bench/data/ingest-<source>-<size>MB/` (kept for the next run).
- **`copy`**: `COPY (SELECT * FROM read_json(files, format='newline_delimited',
  ignore_errors=true)) TO '…parquet'` of the same files.
- **`bronze`**: the source's bronze step (`defs.ingest.ingest_partition` with the source's parse
  statement and parameters; the source's `contracts.<source>.RAW`), which validates every
  line and writes bronze and quarantine Parquet.

Each step runs in its own process (`python -m bench.ingest --step …`), after its imports, and
reports its wall time, CPU time (user + system) and peak RSS; `copy` and `bronze` alternate
`REPEATS` times and the fastest run counts. The result is a Markdown table and a JSON file
(`bench/results/ingest.json`; the committed history is `bench/history/`), which
`python -m bench.ingest --compare OLD.json NEW.json` compares.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bench.process import child_json, print_measured

if TYPE_CHECKING:
    from distill_assets.lib.rawcontract import RawContract

DATA = Path(__file__).resolve().parent / "data"
RESULTS = Path(__file__).resolve().parent / "results"
DAY = "2026-11-19"
SOURCES = ("escalations", "revisions", "telemetry", "traces")
FULL_SIZES_MB = (250, 500)
QUICK_SIZES_MB = (2, 4)
PART_MB = 50
CALIBRATION_SCALE = 20
REPEATS = 2


def dataset(source: str, size_mb: int) -> Path:
    """Return a raw root with at least `size_mb` of `source` for DAY (generated once).

    A calibration run gives the bytes per unit of the generator's scale; the day is written in
    parts of at most `PART_MB`, each with its own seed, so ids do not repeat between parts.
    """
    root = DATA / f"ingest-{source}-{size_mb}MB"
    marker = root / ".complete"
    if marker.is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    generate = _generator(source)
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp), CALIBRATION_SCALE, 0)
        per_scale = _size(Path(tmp)) / CALIBRATION_SCALE
    folder = root / source / DAY
    folder.mkdir(parents=True)
    written, part = 0, 0
    while written < size_mb * 1e6:
        want = min(PART_MB, size_mb - written / 1e6) * 1e6
        with tempfile.TemporaryDirectory() as tmp:
            generate(Path(tmp), max(1, math.ceil(want / per_scale)), part + 1)
            for path in sorted(Path(tmp).rglob("*.jsonl*")):
                name = "-".join(path.relative_to(Path(tmp) / source / DAY).parts)
                target = folder / f"part{part:03d}-{name}"
                shutil.move(path, target)
                written += target.stat().st_size
        part += 1
    marker.write_text(json.dumps({"bytes": written}))
    return root


def _generator(source: str):
    """Return `generate(out_dir, scale, seed)` for a source's sample generator (plain JSONL)."""
    if source == "traces":
        from distill_assets.samples.traces import generate_day

        return lambda out, scale, seed: generate_day(out, DAY, scale, seed, plain=True)
    module = __import__(f"distill_assets.samples.{source}", fromlist=["generate_day"])
    return lambda out, scale, seed: module.generate_day(out, DAY, scale, seed)


def _size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.jsonl*") if p.is_file())


def jsonl_files(root: Path, source: str) -> list[str]:
    """The uncompressed `.jsonl` files of a source's bench day (what both steps read), sorted."""
    return sorted(str(p) for p in (root / source / DAY).iterdir() if p.name.endswith(".jsonl"))


def _imports(step: str) -> None:
    """Import what a step uses, so its time is the work (pyarrow.compute imports pandas)."""
    import duckdb  # noqa: F401

    if step == "bronze":
        import pandas  # noqa: F401

        import distill_assets.contracts.escalations
        import distill_assets.contracts.revisions
        import distill_assets.contracts.telemetry
        import distill_assets.contracts.traces
        import distill_assets.defs.ingest
        import distill_assets.defs.telemetry.assets  # noqa: F401


def copy_rows(files: list[str], target: Path) -> int:
    """The baseline: a bare DuckDB COPY of `files` to Parquet `target`; return its rows."""
    import duckdb

    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * FROM read_json({files!r}, format='newline_delimited', "
        f"ignore_errors=true)) TO '{target}' (FORMAT parquet)"
    )
    return int(con.execute(f"SELECT count(*) FROM '{target}'").fetchone()[0])


def bronze(source: str, files: list[str], root: Path, workdir: Path, *, exact: bool = False):
    """Run the source's bronze step on `files` as its asset binds it; return the `IngestResult`.

    Traces keep the raw line in bronze; the other sources keep it in quarantine only. `exact`
    runs the contract's exact parse statement instead of its fast one.
    """
    from distill_assets.defs.ingest import ingest_partition

    if source == "traces":
        from distill_assets.contracts.traces import RAW

        return ingest_partition(RAW, files, raw_root=str(root), workdir=workdir, exact=exact)
    contract, params = parse_inputs(source)
    return ingest_partition(
        contract,
        files,
        raw_root=str(root),
        params=params,
        bronze_exclude=("line",),
        workdir=workdir,
        exact=exact,
    )


def _work(step: str, source: str, root: Path, out: Path) -> int:
    """Run one step in this process; return the rows it wrote (bronze + quarantine for bronze)."""
    files = jsonl_files(root, source)
    if step == "copy":
        return copy_rows(files, out / "copy.parquet")
    result = bronze(source, files, root, out)
    return result.bronze_rows + result.quarantine_rows


def parse_inputs(source: str) -> tuple[RawContract, dict[str, object]]:
    """The raw contract and parse parameters of a validated source (as its asset binds them)."""
    if source == "escalations":
        from distill_assets.contracts.escalations import RAW

        return RAW, {}
    if source == "telemetry":
        from distill_assets.contracts.telemetry import RAW
        from distill_assets.defs.player_ids import PlayerIdHasher
        from distill_assets.defs.telemetry.assets import parse_params

        return RAW, parse_params(PlayerIdHasher(key="bench"))[0]
    from distill_assets.contracts.revisions import RAW

    return RAW, {}


def _child(step: str, source: str, root: str) -> None:
    """Entry point of a step's process: print `{wall_s, cpu_s, peak_rss_mib, rows}` as JSON."""
    _imports(step)
    print_measured(lambda out: {"rows": _work(step, source, Path(root), out)})


def measure(sizes: tuple[int, ...], repeats: int) -> dict[str, object]:
    """Measure every source at every size; return the results as a JSON-ready dict."""
    rows = []
    for size in sizes:
        for source in SOURCES:
            root = dataset(source, size)
            mb = _size(root / source / DAY) / 1e6
            best: dict[str, dict[str, float]] = {}
            for _ in range(repeats):
                for step in ("copy", "bronze"):
                    run = child_json("bench.ingest", ["--step", step, source, str(root)])
                    if step not in best or run["wall_s"] < best[step]["wall_s"]:
                        best[step] = run
            for step, run in best.items():
                rows.append(
                    {
                        "size_mb": size,
                        "source": source,
                        "input_mb": round(mb, 1),
                        "step": step,
                        **{k: round(v, 3) for k, v in run.items()},
                        "mb_per_s": round(mb / run["wall_s"], 1),
                        "x_copy_wall": round(run["wall_s"] / best["copy"]["wall_s"], 2),
                        "x_copy_cpu": round(run["cpu_s"] / best["copy"]["cpu_s"], 2),
                    }
                )
    return {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"), "rows": rows}


def table(result: dict[str, object]) -> str:
    """Render measured results as the README's Markdown table."""
    lines = [
        "| input | source | step | MB | wall s | CPU s | MB/s | × COPY (wall) | × COPY (CPU) "
        "| peak RSS MiB |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in result["rows"]:  # type: ignore[union-attr]
        lines.append(
            f"| {r['size_mb']} MB | {r['source']} | {r['step']} | {r['input_mb']:,.0f} "
            f"| {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['mb_per_s']:,.0f} "
            f"| {r['x_copy_wall']:.2f} | {r['x_copy_cpu']:.2f} | {r['peak_rss_mib']:,.0f} |"
        )
    return "\n".join(lines)


def compare(old: dict[str, object], new: dict[str, object]) -> str:
    """Render the change of each (size, source, step) between two results, as Markdown."""
    key = ("size_mb", "source", "step")
    before = {tuple(r[k] for k in key): r for r in old["rows"]}  # type: ignore[union-attr]
    lines = [
        "| input | source | step | × COPY (wall) old → new | × COPY (CPU) old → new "
        "| peak RSS MiB old → new |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in new["rows"]:  # type: ignore[union-attr]
        o = before.get(tuple(r[k] for k in key))
        if o is None:
            continue
        lines.append(
            f"| {r['size_mb']} MB | {r['source']} | {r['step']} "
            f"| {o['x_copy_wall']:.2f} → {r['x_copy_wall']:.2f} "
            f"| {o['x_copy_cpu']:.2f} → {r['x_copy_cpu']:.2f} "
            f"| {o['peak_rss_mib']:,.0f} → {r['peak_rss_mib']:,.0f} |"
        )
    return "\n".join(lines)


def run(quick: bool = False) -> str:
    """Run the benchmark, write `bench/results/ingest.json` and return its Markdown section."""
    sizes = QUICK_SIZES_MB if quick else FULL_SIZES_MB
    result = measure(sizes, 1 if quick else REPEATS)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "ingest-quick.json" if quick else "ingest.json"
    (RESULTS / name).write_text(json.dumps(result, indent=1) + "\n")
    return "### Ingest: raw JSONL → bronze + quarantine, every source\n\n" + table(result)


def main(argv: list[str] | None = None) -> int:
    """`--step STEP SOURCE ROOT` (one measured process), `--compare OLD NEW`, or a full run."""
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__)
    parser.add_argument("--step", nargs=3, metavar=("STEP", "SOURCE", "ROOT"))
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.step:
        _child(*args.step)
    elif args.compare:
        old, new = (json.loads(Path(p).read_text()) for p in args.compare)
        print(compare(old, new))
    else:
        print(run(quick=args.quick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
