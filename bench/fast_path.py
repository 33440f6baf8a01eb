"""Ingest fast path: the bronze step at a chosen bad-line rate, fast and exact paths against COPY.

Issue 31's third deliverable: the optimistic fast parse (`defs.ingest.parse_chunk`) when bad lines
are rare, and no regression when they are not. For each validated source (escalations, revisions,
telemetry) and each bad-line rate (`RATES`: 0.1 %, 1 % and 5 %):

- **Data**: the ingest benchmark's partition of the source (`bench.ingest.dataset`, ~5 % bad lines
  of every quarantine kind), with its bad lines thinned out evenly (every k-th kept, in file and
  line order; the good lines all kept) to the rate, under
  `bench/data/fast_path-<source>-<MB>MB-<rate>/`. Which lines are bad is what the exact ingest
  of the full partition quarantines; the rate printed is the one measured on the thinned files
  (quarantine rows / raw records of the `exact` step).
- **Steps**, each in its own process after its imports (`python -m bench.fast_path --step STEP
  SOURCE ROOT`), reporting wall and CPU time (user + system, all threads): `copy` (`COPY (SELECT *
  FROM read_json(files, format='newline_delimited', ignore_errors=true)) TO '…parquet'`), `exact`
  (`ingest_partition(..., exact=True)`: the contract's exact statement) and `fast` (the default:
  its fast parse, the same rows), as the source's asset binds them.
- **Method**: the three steps run interleaved, `REPEATS` times; each repeat's ratios are to the
  COPY of that repeat. The table gives the median ratio and its spread (lowest to highest) over the
  repeats, and `fast ÷ exact` likewise.

`python -m bench.fast_path [MB] [--repeats N]` prints the table (default 100 MB per source, 3
repeats) and writes `bench/results/fast_path.json`; `python -m bench --only fast_path` runs the
default. `python -m bench.fast_path [MB] --floor` decomposes the bronze step at 0.1 % bad lines
instead, all in one process, best of two by CPU (`bench/results/fast_path-floor.json`): COPY, the
raw line reader alone, the exact and the fast parse alone over the reader's chunks, the sink alone
(de-duplication, splitting, Parquet writing) fed the fast parse's rows, and the whole step both
ways; the reader and the sink are what the step costs whatever the parse.
`python -m bench.fast_path [MB] --typed-floor [--repeats N]` measures typed readers against the
fast parse at 0.1 % bad lines, what each does with each kind of bad line, and the projected
lower bound of an exact typed fast path (`bench._typed_readers`;
`bench/results/fast_path-typed-floor.json`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.first_product import clock
from bench.ingest import (
    DATA,
    DAY,
    RESULTS,
    _imports,
    bronze,
    copy_rows,
    dataset,
    jsonl_files,
    parse_inputs,
)
from bench.process import child_json, print_measured

SOURCES = ("escalations", "revisions", "telemetry")
RATES = (0.001, 0.01, 0.05)
STEPS = ("copy", "exact", "fast")
FULL_SIZE_MB = 100
QUICK_SIZE_MB = 2
REPEATS = 3


def _label(rate: float) -> str:
    return f"{rate * 100:g}%"


def _bad_lines(source: str, root: Path) -> set[tuple[str, int]]:
    """Return the (file, line) of every line the exact ingest of a partition quarantines."""
    import pyarrow.parquet as pq

    with tempfile.TemporaryDirectory() as tmp:
        result = bronze(source, jsonl_files(root, source), root, Path(tmp), exact=True)
        rows = pq.read_table(result.quarantine.path, columns=["source_file", "line_no"])
    return set(zip(*(rows.column(n).to_pylist() for n in rows.column_names), strict=True))


def thinned(source: str, size_mb: int, rate: float) -> Path:
    """Return a raw root of the source's bench partition with its bad lines thinned to `rate`.

    The bad lines kept are spread evenly over the day (every k-th, in file and line order); the
    good lines are all kept, in order. Written once.
    """
    root = DATA / f"fast_path-{source}-{size_mb}MB-{_label(rate)}"
    marker = root / ".complete"
    if marker.is_file():
        return root
    full = dataset(source, size_mb)
    bad = _bad_lines(source, full)
    files = jsonl_files(full, source)
    texts = {path: Path(path).read_bytes().split(b"\n") for path in files}
    total = sum(len(lines) - (lines[-1] == b"") for lines in texts.values())
    # keep a share `keep` of the bad lines so that bad / (good + kept bad) = rate
    keep = min(1.0, rate * (total - len(bad)) / ((1 - rate) * max(len(bad), 1)))
    folder = root / source / DAY
    folder.mkdir(parents=True, exist_ok=True)
    seen = 0
    for path in files:
        name = str(Path(path).relative_to(full))
        kept = []
        for number, line in enumerate(texts[path], start=1):
            if (name, number) in bad:
                seen += 1
                if int(seen * keep) == int((seen - 1) * keep):
                    continue
            kept.append(line)
        (folder / Path(path).name).write_bytes(b"\n".join(kept))
    marker.write_text(json.dumps({"keep": keep}))
    return root


def _work(step: str, source: str, root: Path, out: Path) -> dict[str, int]:
    """Run one step in this process; return its rows (and the quarantine's for the ingest)."""
    files = jsonl_files(root, source)
    if step == "copy":
        return {"rows": copy_rows(files, out / "copy.parquet")}
    result = bronze(source, files, root, out, exact=step == "exact")
    return {
        "rows": result.bronze_rows + result.quarantine_rows,
        "quarantined": result.quarantine_rows,
    }


def _child(step: str, source: str, root: str) -> None:
    """Entry point of a step's process: print `{wall_s, cpu_s, peak_rss_mib, rows, ...}`."""
    _imports("copy" if step == "copy" else "bronze")
    print_measured(lambda out: _work(step, source, Path(root), out))


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}"


def measure(size_mb: int, repeats: int) -> dict[str, object]:
    """Measure every source at every rate; return the results as a JSON-ready dict."""
    rows = []
    for source in SOURCES:
        for rate in RATES:
            root = thinned(source, size_mb, rate)
            mb = sum(Path(p).stat().st_size for p in jsonl_files(root, source)) / 1e6
            runs: dict[str, list[dict[str, float]]] = {step: [] for step in STEPS}
            for _ in range(repeats):
                for step in STEPS:
                    runs[step].append(
                        child_json("bench.fast_path", ["--step", step, source, str(root)])
                    )
            measured = runs["exact"][0]["quarantined"] / runs["exact"][0]["rows"]
            for step in STEPS:
                x_cpu = [
                    r["cpu_s"] / c["cpu_s"] for r, c in zip(runs[step], runs["copy"], strict=True)
                ]
                x_wall = [
                    r["wall_s"] / c["wall_s"] for r, c in zip(runs[step], runs["copy"], strict=True)
                ]
                row = {
                    "input": f"{mb:,.0f} MB {source}, {measured * 100:.2f}% bad",
                    "step": step,
                    "wall_s": round(statistics.median(r["wall_s"] for r in runs[step]), 2),
                    "cpu_s": round(statistics.median(r["cpu_s"] for r in runs[step]), 2),
                    "mb_per_s": round(mb / statistics.median(r["wall_s"] for r in runs[step]), 1),
                    "x_baseline_wall": round(statistics.median(x_wall), 2),
                    "x_baseline_cpu": round(statistics.median(x_cpu), 2),
                    "spread": f"CPU × COPY {_spread(x_cpu)}",
                }
                if step == "fast":
                    vs = [
                        f["cpu_s"] / e["cpu_s"]
                        for f, e in zip(runs["fast"], runs["exact"], strict=True)
                    ]
                    row["spread"] += (
                        f"; fast ÷ exact CPU {statistics.median(vs):.2f} ({_spread(vs)})"
                    )
                rows.append(row)
    return {
        "benchmark": "fast_path",
        "measured_on": datetime.now(UTC).date().isoformat(),
        "command": f"python -m bench.fast_path {size_mb} --repeats {repeats}",
        "baseline": (
            "COPY (SELECT * FROM read_json(files, format='newline_delimited', "
            "ignore_errors=true)) TO '…parquet' of the same files, same repeat"
        ),
        "conditions": (
            f"2 shared cores; {size_mb} MB per source, bad lines thinned to 0.1 %, 1 %, 5 %; "
            f"copy, exact, fast interleaved {repeats} times, each in its own process; "
            "medians, spread lowest–highest"
        ),
        "rows": rows,
    }


def _best_cpu(work: Callable[[], object]) -> tuple[float, float]:
    """Return the (wall, CPU) seconds of the run of `work` with the least CPU, of two."""
    runs = []
    for _ in range(2):
        wall0, cpu0 = clock()
        work()
        wall1, cpu1 = clock()
        runs.append((wall1 - wall0, cpu1 - cpu0))
    return min(runs, key=lambda run: run[1])


def _floor_of(source: str, size_mb: int) -> list[dict[str, object]]:
    """Return the floor rows of one source (see `floor`)."""
    import duckdb

    from distill_assets.defs import ingest
    from distill_assets.defs.ingest import _EXTRA_COPY_WARNING
    from distill_assets.lib.lake import ROW_GROUP_SIZE
    from distill_assets.lib.rawfiles import RawLineReader, problem_table
    from distill_assets.lib.sql import connect

    root = thinned(source, size_mb, RATES[0])
    files = jsonl_files(root, source)
    contract, params = parse_inputs(source)
    assert contract.fast_parse is not None
    chunks: list[object] = []
    parsed: list[object] = []
    results: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect()
        results["COPY"] = _best_cpu(
            lambda: con.execute(
                f"COPY (SELECT * FROM read_json({files!r}, format='newline_delimited', "
                f"ignore_errors=true)) TO '{tmp}/copy.parquet' (FORMAT parquet)"
            )
        )
        con.close()
    results["raw line reader alone"] = _best_cpu(
        lambda: chunks.__setitem__(
            slice(None),
            list(RawLineReader(files, root=str(root)).chunks(contract.chunk_bytes, ROW_GROUP_SIZE)),
        )
    )
    con = connect(private=True)
    con.execute("SET preserve_insertion_order = true")
    usual = ingest.UsualExtras(con)

    def parse(statement: str, keep: bool = False) -> None:
        out = []
        for chunk in chunks:
            con.register("raw_lines", chunk)
            bound = dict(params) | usual.params()
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_EXTRA_COPY_WARNING)
                out.append(con.execute(statement, bound).to_arrow_table())
            con.unregister("raw_lines")
            usual.add(out[-1])
        if keep:
            parsed[:] = out

    results["exact parse alone"] = _best_cpu(lambda: parse(contract.parse()))
    results["fast parse alone"] = _best_cpu(lambda: parse(contract.fast_parse(), keep=True))
    con.close()

    def sink() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = ingest._Sink(contract, Path(tmp), ("line",))
            for chunk, rows_ in zip(chunks, parsed, strict=True):
                out.put(chunk, rows_)
            out.close(problem_table([], source))

    results["sink alone (dedup, split, write)"] = _best_cpu(sink)
    for name, exact in (("whole bronze step, exact", True), ("whole bronze step, fast", False)):

        def whole(exact: bool = exact) -> None:
            with tempfile.TemporaryDirectory() as tmp:
                ingest.ingest_partition(
                    contract,
                    files,
                    raw_root=str(root),
                    params=params,
                    bronze_exclude=("line",),
                    workdir=Path(tmp),
                    exact=exact,
                )

        results[name] = _best_cpu(whole)
    copy_cpu = results["COPY"][1]
    mb = sum(Path(p).stat().st_size for p in files) / 1e6
    return [
        {
            "input": f"{mb:,.0f} MB {source}, 0.1% bad",
            "step": name,
            "wall_s": round(wall, 2),
            "cpu_s": round(cpu, 2),
            "x_baseline_cpu": round(cpu / copy_cpu, 2),
        }
        for name, (wall, cpu) in results.items()
    ]


def floor(size_mb: int) -> dict[str, object]:
    """Decompose the bronze step of every source at 0.1 % bad lines (see the module docstring)."""
    rows = [row for source in SOURCES for row in _floor_of(source, size_mb)]
    return {
        "benchmark": "fast_path_floor",
        "measured_on": datetime.now(UTC).date().isoformat(),
        "command": f"python -m bench.fast_path {size_mb} --floor",
        "baseline": "COPY (read_json → Parquet) of the same files, same process",
        "conditions": (
            f"2 shared cores; {size_mb} MB per source at 0.1 % bad lines; all in one process, "
            "best of two by CPU"
        ),
        "rows": rows,
    }


def table(result: dict[str, object]) -> str:
    """Render measured results as a Markdown table."""
    lines = [
        "| input | step | wall s | CPU s | × COPY (wall) | × COPY (CPU) | spread |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in result["rows"]:  # type: ignore[union-attr]
        lines.append(
            f"| {r['input']} | {r['step']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} "
            f"| {r['x_baseline_wall']:.2f} | {r['x_baseline_cpu']:.2f} | {r['spread']} |"
        )
    return "\n".join(lines)


def run(quick: bool = False, size_mb: int | None = None, repeats: int | None = None) -> str:
    """Run the benchmark, write `bench/results/fast_path.json` and return its Markdown section."""
    size = size_mb or (QUICK_SIZE_MB if quick else FULL_SIZE_MB)
    result = measure(size, repeats or (1 if quick else REPEATS))
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "fast_path-quick.json" if quick else "fast_path.json"
    (RESULTS / name).write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")
    return "### Ingest fast path: bad-line rates 0.1 %, 1 %, 5 %\n\n" + table(result)


def main(argv: list[str] | None = None) -> int:
    """`--step STEP SOURCE ROOT` (one measured process), `--floor`, or a run at one size."""
    parser = argparse.ArgumentParser(prog="python -m bench.fast_path", description=__doc__)
    parser.add_argument("size_mb", nargs="?", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--floor", action="store_true")
    parser.add_argument("--typed-floor", action="store_true")
    parser.add_argument("--step", nargs=3, metavar=("STEP", "SOURCE", "ROOT"))
    args = parser.parse_args(argv)
    if args.step:
        _child(*args.step)
    elif args.typed_floor:
        from bench import _typed_readers

        size = args.size_mb or FULL_SIZE_MB
        roots = {source: thinned(source, size, RATES[0]) for source in SOURCES}
        result = _typed_readers.typed_floor(roots, size, args.repeats or REPEATS)
        _typed_readers.write(result, RESULTS)
        print(_typed_readers.tables(result))
    elif args.floor:
        result = floor(args.size_mb or FULL_SIZE_MB)
        RESULTS.mkdir(parents=True, exist_ok=True)
        text = json.dumps(result, indent=1, ensure_ascii=False) + "\n"
        (RESULTS / "fast_path-floor.json").write_text(text)
        lines = [
            "| input | what | wall s | CPU s | × COPY CPU |",
            "| --- | --- | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {r['input']} | {r['step']} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} "
            f"| {r['x_baseline_cpu']:.2f} |"
            for r in result["rows"]  # type: ignore[union-attr]
        ]
        print("\n".join(lines))
    else:
        print(run(size_mb=args.size_mb, repeats=args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
