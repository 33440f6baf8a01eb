"""The night benchmark: one generated day of every source, raw → published release, step by step.

`python -m bench.night --telemetry-gb G` generates one ingest day (`DAY`) with ~G GB of raw
telemetry and the other three sources at the volumes the committed sample generators give them
at the same `--scale` (the mix of `distill sample`, the project's one model of a day: traces
~0.29, escalations ~0.15, revisions ~0.13 times telemetry's bytes, so the day is ~1.6 times its
telemetry; before the telemetry samples were reworked, with longer dialogue, it was ~1.06, ~0.57
and ~0.47, ~3.1 times, which `--others 3.7` reproduces). The specification states a daily
volume for telemetry only (~100 GB raw); `--others F` scales the other sources' share (1.0:
the sample mix, 0: telemetry alone). Each source is written in parts of at most `PART_MB` MB,
each with its own seed, so ids do not repeat between parts (`bench/data/night-<G>GB-<F>/`,
reused by the next run).

Then, in one fresh process with a fresh lake and Dagster instance, the two jobs of a night as the
nightly schedule and its sensor run them: `daily_ingest` for the day, then `publish_release`
(publishing into the local hub folder), on the executor a deployment sets: in-process (one step
after another in that process, the default) or, with `--executor multiprocess`, each step in a
process of its own (at most `--max-concurrent` at once). Each step's wall time comes from its
`STEP_START` and `STEP_SUCCESS` events in the run's event log; a sampler thread reads the CPU time
(user + system, all threads) and RSS of the process and every process under it every `SAMPLE_S`
seconds. A step's CPU is that of its own process if it had one, else the tree's across its
window; its peak RSS the highest sample of the tree in its window (`start_rss_mib`: the last
sample before it started, what earlier steps left). Each run's peak RSS is on its total row.

Baseline: a bare DuckDB `COPY (SELECT * FROM read_json(files, format='newline_delimited',
ignore_errors=true)) TO '…parquet'` of every source's raw files, in its own process, in the same
invocation; with `--repeats R` the COPY and the night alternate R times, the fastest of each
counts, and each row records the spread (min, max) of its ratio over the R pairs, which
`python -m bench.check` compares with the recorded history. Prints the table and writes
`bench/history/night-<date>[suffix].json` (`--out` elsewhere).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

from bench.process import child_json

BENCH = Path(__file__).resolve().parent
DATA = BENCH / "data"
HISTORY = BENCH / "history"
RESULTS = BENCH / "results"
DAY = "2026-11-19"
SOURCES = ("telemetry", "traces", "escalations", "revisions")
PART_MB = 200
CALIBRATION_SCALE = 20
SAMPLE_S = 0.1
FULL_GB = 0.1
QUICK_GB = 0.005
COPY_STEP = "COPY baseline (every source's raw files)"
RAW_SUFFIXES = (".jsonl", ".jsonl.gz")


def _generator(source: str):
    """Return `generate(out_dir, scale, seed)` of a source's committed sample generator."""
    module = __import__(f"distill_assets.samples.{source}", fromlist=["generate_day"])
    return lambda out, scale, seed: module.generate_day(out, DAY, scale, seed)


def _bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and p.name != ".complete")


def per_scale_bytes() -> dict[str, float]:
    """Bytes each source's generator writes per unit of scale (one calibration day each)."""
    sizes = {}
    for source in SOURCES:
        with tempfile.TemporaryDirectory() as tmp:
            _generator(source)(Path(tmp), CALIBRATION_SCALE, 0)
            sizes[source] = _bytes(Path(tmp)) / CALIBRATION_SCALE
    return sizes


def generate(telemetry_gb: float, others: float) -> Path:
    """Return a raw root holding the night's day for every source (generated once)."""
    root = DATA / f"night-{telemetry_gb:g}GB-{others:g}"
    marker = root / ".complete"
    if marker.is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    per_scale = per_scale_bytes()
    scale = telemetry_gb * 1e9 / per_scale["telemetry"]
    written = {}
    for source in SOURCES:
        target = scale * per_scale[source] * (1.0 if source == "telemetry" else others)
        folder = root / source / DAY
        folder.mkdir(parents=True)
        part, size = 0, 0
        while size < target:
            want = min(PART_MB * 1e6, target - size)
            with tempfile.TemporaryDirectory() as tmp:
                _generator(source)(Path(tmp), max(1, math.ceil(want / per_scale[source])), part + 1)
                for path in sorted((Path(tmp) / source / DAY).rglob("*")):
                    if path.is_file():
                        name = "-".join(path.relative_to(Path(tmp) / source / DAY).parts)
                        moved = folder / f"part{part:03d}-{name}"
                        shutil.move(path, moved)
                        size += moved.stat().st_size
            part += 1
        written[source] = size
    marker.write_text(json.dumps({"bytes": written, "scale": scale, "others": others}))
    return root


def _env(
    work: Path, raw: Path, executor: str = "in_process", concurrent: int = 1
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILL_", "DAGSTER_"))}
    env.update(
        DISTILL_ENV=os.environ.get("DISTILL_ENV", "development"),
        DISTILL_DATA_DIR=str(work / "data"),
        DISTILL_RAW_ROOT=str(raw),
        DAGSTER_HOME=str(work / "dagster_home"),
        DISTILL_EXECUTOR=executor,
        DISTILL_MAX_CONCURRENT=str(concurrent),
    )
    (work / "dagster_home").mkdir(parents=True, exist_ok=True)
    return env


def descendants(root: int) -> dict[int, tuple[float, int]]:
    """Every live descendant process of `root`: pid → (CPU seconds, RSS bytes), from `/proc`."""
    tick, page = os.sysconf("SC_CLK_TCK"), os.sysconf("SC_PAGE_SIZE")
    stats: dict[int, tuple[int, float, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text(encoding="ascii", errors="replace")
        except OSError:  # it ended between the listing and the reading
            continue
        fields = text[text.rindex(")") + 2 :].split()
        cpu = (int(fields[11]) + int(fields[12])) / tick
        stats[int(entry.name)] = (int(fields[1]), cpu, int(fields[21]) * page)
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    found, frontier = {}, list(children.get(root, []))
    while frontier:
        pid = frontier.pop()
        found[pid] = stats[pid][1:]
        frontier.extend(children.get(pid, []))
    return found


class Sampler(threading.Thread):
    """Samples the CPU seconds (user + system) and RSS of this process and its descendants.

    Every `interval` seconds: this process's CPU (all threads) plus the last CPU seen of every
    descendant process, alive or gone (a step process of the multiprocess executor, its
    forkserver), and the sum of the live processes' RSS (pages a child shares with its
    forkserver count in both: an upper bound). `own` keeps each descendant's last CPU seconds
    and `peaks` its highest RSS, by pid.
    """

    def __init__(self, interval: float = SAMPLE_S) -> None:
        super().__init__(daemon=True)
        self.interval = interval
        self.samples: list[tuple[float, float, int]] = []
        self.own: dict[int, float] = {}
        self.peaks: dict[int, int] = {}
        self._stop_event = threading.Event()
        self._page = os.sysconf("SC_PAGE_SIZE")

    def sample(self) -> None:
        """Record one (time, CPU seconds, RSS bytes) sample of the process tree."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with open("/proc/self/statm", encoding="ascii") as statm:
            rss = int(statm.read().split()[1]) * self._page
        for pid, (cpu, child_rss) in descendants(os.getpid()).items():
            self.own[pid] = cpu
            self.peaks[pid] = max(self.peaks.get(pid, 0), child_rss)
            rss += child_rss
        cpu = usage.ru_utime + usage.ru_stime + sum(self.own.values())
        self.samples.append((time.time(), cpu, rss))

    def run(self) -> None:
        """Sample until `stop`."""
        while not self._stop_event.is_set():
            self.sample()
            self._stop_event.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling (one last sample is taken)."""
        self._stop_event.set()
        self.join()
        self.sample()

    def window(self, start: float, end: float) -> tuple[float, float]:
        """CPU seconds spent between `start` and `end` (interpolated) and the peak RSS in MiB."""
        import numpy as np

        samples = list(self.samples)  # one snapshot: the thread keeps appending
        times = np.array([s[0] for s in samples])
        cpu = np.array([s[1] for s in samples])
        spent = float(np.interp(end, times, cpu) - np.interp(start, times, cpu))
        # the samples inside the window and the first one after it (a short step has none inside)
        after = int(np.searchsorted(times, end))
        inside = [s[2] for s in samples[int(np.searchsorted(times, start)) : after + 1]]
        return spent, max(inside, default=0) / 2**20

    def rss_at(self, moment: float) -> float:
        """The RSS in MiB of the last sample at or before `moment` (the first sample if none)."""
        samples = list(self.samples)
        before = [s[2] for s in samples if s[0] <= moment]
        return (before[-1] if before else samples[0][2]) / 2**20


def _peak_rss_mib(sampler: Sampler | None = None, start: float = 0.0) -> int:
    """The peak RSS so far in MiB: this process's `ru_maxrss`, or the process tree's sampled
    peak since `start` if higher (steps in processes of their own)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if sampler is not None:
        peak = max(peak, sampler.window(start, time.time())[1])
    return round(peak)


def _steps(instance, run_id: str, sampler: Sampler, job: str) -> list[dict[str, object]]:
    """One row per step of a finished run: wall from its events, CPU and peak RSS sampled.

    A step that ran in a process of its own (multiprocess executor) is charged that process's
    CPU, whatever ran beside it; a step in this process, the CPU of the tree across its window.
    Its peak RSS is the tree's across its window.
    """
    import dagster as dg

    kinds = {
        dg.DagsterEventType.STEP_START,
        dg.DagsterEventType.STEP_SUCCESS,
        dg.DagsterEventType.STEP_FAILURE,
    }
    starts: dict[str, float] = {}
    rows = []
    for entry in instance.all_logs(run_id, of_type=kinds):
        key = entry.step_key or ""
        if entry.dagster_event.event_type == dg.DagsterEventType.STEP_START:
            starts[key] = entry.timestamp
            continue
        cpu, rss = sampler.window(starts[key], entry.timestamp)
        cpu = sampler.own.get(entry.dagster_event.pid, cpu)
        rows.append(
            {
                "step": f"{job}: {key}",
                "wall_s": round(entry.timestamp - starts[key], 2),
                "cpu_s": round(cpu, 2),
                "peak_rss_mib": round(rss),
                "start_rss_mib": round(sampler.rss_at(starts[key])),
            }
        )
    return rows


@functools.cache
def _definitions():
    """The project's definitions, loaded once per process."""
    from distill_assets.definitions import defs

    return defs()


def night_job(name: str):
    """The definitions' job `name`, on the executor the settings choose (`DISTILL_EXECUTOR`).

    Importable by name, so that the multiprocess executor's step processes rebuild it.
    """
    return _definitions().resolve_job_def(name)


def _execute(
    job: str, partition: str | None, instance, executor: str, failed_run: str | None = None
) -> tuple[str, str]:
    """Run `job` as the settings' executor runs it; return its run id and why it failed ("").

    With `failed_run`, re-execute that run of `job` from its failure (Dagster's re-execution:
    the steps that failed or did not run, on the outputs of those that succeeded).
    """
    import dagster as dg

    from distill_assets.operations.launch import QUIET_RUN_CONFIG, failure_lines

    if failed_run is not None:
        reconstructable = dg.build_reconstructable_job(
            __name__, night_job.__name__, reconstructable_kwargs={"name": job}
        )
        options = dg.ReexecutionOptions.from_failure(failed_run, instance)
        with dg.execute_job(reconstructable, instance, reexecution_options=options) as run:
            return run.run_id, "" if run.success else "; ".join(failure_lines(run))
    if executor == "in_process":
        run = night_job(job).execute_in_process(
            instance=instance,
            partition_key=partition,
            run_config=QUIET_RUN_CONFIG,
            raise_on_error=False,
        )
        return run.run_id, "" if run.success else "; ".join(failure_lines(run))
    reconstructable = dg.build_reconstructable_job(
        __name__, night_job.__name__, reconstructable_kwargs={"name": job}
    )
    tags = {"dagster/partition": partition} if partition else None
    with dg.execute_job(reconstructable, instance, run_config=QUIET_RUN_CONFIG, tags=tags) as run:
        return run.run_id, "" if run.success else "; ".join(failure_lines(run))


def night() -> dict[str, object]:
    """Run `daily_ingest` for `DAY`, then `publish_release`; return per-step and per-run rows.

    Runs in the process of `--child night`, with the settings of its environment: with
    `DISTILL_EXECUTOR=multiprocess` each step runs in a process of its own, as a scheduled night
    of such a deployment runs it, and the rows count the whole process tree.
    """
    import dagster as dg

    from distill_assets.defs.jobs import INGEST_JOB, RELEASE_JOB

    executor = os.environ.get("DISTILL_EXECUTOR", "in_process")
    _definitions()  # loading the definitions is not part of the measured night
    sampler = Sampler()
    sampler.start()
    rows: list[dict[str, object]] = []
    started = time.time()
    with dg.DagsterInstance.get() as instance:
        for job, partition in ((INGEST_JOB, DAY), (RELEASE_JOB, None)):
            run_start = time.time()
            run_id, failed = _execute(job, partition, instance, executor)
            sampler.sample()
            wall = time.time() - run_start
            cpu = sampler.window(run_start, time.time())[0]
            steps = _steps(instance, run_id, sampler, job)
            rows.extend(steps)
            rows.append(
                {
                    "step": f"{job} (whole run)",
                    "wall_s": round(wall, 2),
                    "cpu_s": round(cpu, 2),
                    "peak_rss_mib": _peak_rss_mib(sampler, run_start),
                    "dagster_overhead_s": round(wall - sum(s["wall_s"] for s in steps), 2),
                }
            )
            if failed:  # what ran is kept; the night stops where a run failed
                sampler.stop()
                return {"rows": rows, "executor": executor, "failed": f"{job}: {failed}"}
    sampler.stop()
    rows.append(
        {
            "step": "night (both runs)",
            "wall_s": round(time.time() - started, 2),
            "cpu_s": round(sampler.window(started, time.time())[0], 2),
            "peak_rss_mib": _peak_rss_mib(sampler, started),
        }
    )
    return {"rows": rows, "executor": executor}


def curate_parts(lake: str) -> dict[str, list[float]]:
    """Run `curate_lakes` on a kept night's lake from scratch; wall and CPU s of each of its parts.

    The parts: `refresh_products` (per-row products of each feed partition), `decide_products`
    (decisions over all history's compact keys), `with_splits`, `refresh_curated` (the curated
    partition files). The lake's `curation/` folder is removed first, so every product is
    recomputed as on the first night.
    """
    from distill_assets.contracts.published import CONFIG_FEEDS
    from distill_assets.defs.curation import pipeline
    from distill_assets.defs.curation.decontaminate import NO_EVAL_SETS
    from distill_assets.defs.curation.products import ProductContext
    from distill_assets.lib.embed import load_embedder

    shutil.rmtree(Path(lake) / "curation", ignore_errors=True)
    spent: dict[str, list[float]] = {}

    def timed(name, function):
        def wrapper(*args, **kwargs):
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                total = spent.setdefault(name, [0.0, 0.0])
                total[0] += time.perf_counter() - wall
                total[1] += time.process_time() - cpu

        return wrapper

    for name in ("refresh_products", "decide_products", "with_splits", "refresh_curated"):
        setattr(pipeline, name, timed(name, getattr(pipeline, name)))
    contexts = [ProductContext(c, load_embedder(), NO_EVAL_SETS) for c in CONFIG_FEEDS]
    timed("curate_lakes", pipeline.curate_lakes)(lake, contexts, pipeline.scan_exclusions(lake))
    return {name: [round(v, 1) for v in values] for name, values in spent.items()}


def raw_files(raw: Path, source: str) -> list[str]:
    """The raw JSONL files (plain or gzip) of a source's day, sorted."""
    folder = raw / source / DAY
    return sorted(str(p) for p in folder.iterdir() if p.name.endswith(RAW_SUFFIXES))


def copy_baseline(raw: Path, out: Path) -> dict[str, object]:
    """COPY every source's raw files to Parquet with DuckDB; return wall, CPU and peak RSS."""
    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    started, cpu = time.perf_counter(), time.process_time()
    with duckdb.connect() as con:
        for source in SOURCES:
            files = ", ".join(f"'{f}'" for f in raw_files(raw, source))
            con.execute(
                f"COPY (SELECT * FROM read_json([{files}], format='newline_delimited', "
                f"ignore_errors=true)) TO '{out / source}.parquet' (FORMAT parquet)"
            )
    return {
        "wall_s": round(time.perf_counter() - started, 2),
        "cpu_s": round(time.process_time() - cpu, 2),
        "peak_rss_mib": _peak_rss_mib(),
    }


def _ratio_rows(copies: list[dict], nights: list[dict]) -> list[dict[str, object]]:
    """The fastest COPY and the fastest of each night row, with ratios and their spread."""
    best_copy = min(copies, key=lambda c: c["cpu_s"])
    rows = [{"step": COPY_STEP, **best_copy, "x_baseline_wall": 1.0, "x_baseline_cpu": 1.0}]
    for i, first in enumerate(nights[0]["rows"]):
        same = [n["rows"][i] for n in nights]
        best = dict(min(same, key=lambda r: r["wall_s"]))
        best["peak_rss_mib"] = min(r["peak_rss_mib"] for r in same)
        best["x_baseline_wall"] = round(best["wall_s"] / best_copy["wall_s"], 2)
        best["x_baseline_cpu"] = round(best["cpu_s"] / max(best_copy["cpu_s"], 1e-9), 2)
        pairs = list(zip(copies, same, strict=True))
        best["ratio_spread"] = {
            key: [
                round(min(r[field] / max(c[field], 1e-9) for c, r in pairs), 2),
                round(max(r[field] / max(c[field], 1e-9) for c, r in pairs), 2),
            ]
            for key, field in (("x_baseline_wall", "wall_s"), ("x_baseline_cpu", "cpu_s"))
        }
        assert best["step"] == first["step"]
        rows.append(best)
    return rows


RESUMED_RUN = "re-executed from failure"


def resume() -> dict[str, object]:
    """Re-execute the kept instance's failed `publish_release` run from its failure; its rows.

    Runs in the process of `--child resume`, with the environment of the kept night (its lake
    and Dagster instance): what a night's operator does once the cause is fixed.
    """
    import dagster as dg

    from distill_assets.defs.jobs import RELEASE_JOB

    executor = os.environ.get("DISTILL_EXECUTOR", "in_process")
    _definitions()
    sampler = Sampler()
    sampler.start()
    with dg.DagsterInstance.get() as instance:
        (failed,) = instance.get_run_records(
            dg.RunsFilter(job_name=RELEASE_JOB, statuses=[dg.DagsterRunStatus.FAILURE]), limit=1
        )
        started = time.time()
        run_id, failure = _execute(RELEASE_JOB, None, instance, executor, failed.dagster_run.run_id)
        sampler.sample()
        rows = _steps(instance, run_id, sampler, RELEASE_JOB)
        rows.append(
            {
                "step": f"{RELEASE_JOB} ({RESUMED_RUN})",
                "wall_s": round(time.time() - started, 2),
                "cpu_s": round(sampler.window(started, time.time())[0], 2),
                "peak_rss_mib": _peak_rss_mib(sampler, started),
            }
        )
    sampler.stop()
    return {"rows": rows, "failed": f"{RELEASE_JOB}: {failure}" if failure else None}


def resumed_record(failed: dict[str, object], resumed: dict[str, object]) -> dict[str, object]:
    """A failed night's record completed by the re-execution of its failed run (`resume`).

    The re-executed steps' rows replace the failed attempts' (the COPY baseline of the failed
    record gives their ratios); the failed run's total row stays, renamed, beside the
    re-execution's; the night's total adds every run's wall and CPU, failed attempt included,
    and takes the highest peak.
    """
    copy = next(r for r in failed["rows"] if r["step"] == COPY_STEP)
    label = copy["input"]
    redone = {r["step"] for r in resumed["rows"]}
    rows = []
    renamed = {"publish_release (whole run)": "publish_release (whole run, until failed)"}
    for kept in failed["rows"]:
        if kept["step"] not in redone:
            rows.append({**kept, "step": renamed.get(kept["step"], kept["step"])})
    for row in resumed["rows"]:
        rows.append(
            {
                "input": label,
                **row,
                "x_baseline_wall": round(row["wall_s"] / copy["wall_s"], 2),
                "x_baseline_cpu": round(row["cpu_s"] / max(copy["cpu_s"], 1e-9), 2),
            }
        )
    runs = [r for r in rows if r["step"].endswith(")") and r["step"] != COPY_STEP]
    total = {
        "input": label,
        "step": "night (every run)",
        "wall_s": round(sum(r["wall_s"] for r in runs), 2),
        "cpu_s": round(sum(r["cpu_s"] for r in runs), 2),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in runs),
    }
    total["x_baseline_wall"] = round(total["wall_s"] / copy["wall_s"], 2)
    total["x_baseline_cpu"] = round(total["cpu_s"] / max(copy["cpu_s"], 1e-9), 2)
    return {
        **failed,
        "command": f"{failed['command']}; then python -m bench.night --resume <failed record>",
        "conditions": f"{failed['conditions']}; the failed publish_release run "
        f"({failed['failed']}) re-executed from its failure on the kept instance",
        "failed": resumed["failed"],
        "rows": [*rows, total],
    }


def measure(
    telemetry_gb: float,
    others: float,
    repeats: int,
    keep: Path | None = None,
    *,
    executor: str = "in_process",
    concurrent: int = 1,
) -> dict[str, object]:
    """Generate (or reuse) the day, run COPY and the night `repeats` times interleaved.

    `keep`: the last night's work folder (lake, hub, Dagster instance) is left there.
    `executor`, `concurrent`: the night's `DISTILL_EXECUTOR` and `DISTILL_MAX_CONCURRENT`.
    """
    raw = generate(telemetry_gb, others)
    sizes = json.loads((raw / ".complete").read_text())["bytes"]
    copies, nights = [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="distill-night-") as scratch:
            copies.append(
                child_json(
                    "bench.night", ["--child", "copy", str(raw), str(Path(scratch) / "copy")]
                )
            )
        with tempfile.TemporaryDirectory(prefix="distill-night-") as scratch:
            work = Path(scratch) if keep is None else keep
            shutil.rmtree(work / "data", ignore_errors=True)
            shutil.rmtree(work / "dagster_home", ignore_errors=True)
            env = _env(work, raw, executor, concurrent)
            nights.append(child_json("bench.night", ["--child", "night"], env))
        if nights[-1].get("failed"):  # no later repeat: this night's steps are the record
            break
    total_mb = sum(sizes.values()) / 1e6
    at_once = f", at most {concurrent} step(s) at once" if executor != "in_process" else ""
    label = (
        f"telemetry {sizes['telemetry'] / 1e9:.2f} GB + others ×{others:g} "
        f"({total_mb / 1e3:.2f} GB raw)"
    )
    rows = [{"input": label, **r} for r in _ratio_rows(copies, nights)]
    for r in rows:
        r["mb_per_s"] = round(total_mb / r["wall_s"], 1) if r["wall_s"] else None
    return {
        "benchmark": "night",
        "measured_on": date.today().isoformat(),
        "command": f"python -m bench.night --telemetry-gb {telemetry_gb:g} --others {others:g} "
        f"--repeats {repeats}"
        + (
            f" --executor {executor} --max-concurrent {concurrent}"
            if executor != "in_process"
            else ""
        ),
        "baseline": "DuckDB COPY (SELECT * FROM read_json(files, format='newline_delimited', "
        "ignore_errors=true)) TO '…parquet' of every source's raw files, same invocation",
        "conditions": f"2 shared cores; {repeats} interleaved repeat(s), fastest counts, ratio "
        f"spread over the pairs; the night in one fresh process ({executor.replace('_', '-')} "
        f"executor{at_once}), CPU and RSS of its process tree sampled every {SAMPLE_S} s",
        "raw_bytes": sizes,
        "failed": nights[-1].get("failed"),
        "rows": rows,
    }


def table(result: dict[str, object]) -> str:
    """The Markdown table of a result."""
    rows = result["rows"]
    lines = [
        f"### Night (`bench/night.py`): {rows[0]['input']}",
        "",
        "| step | wall s | CPU s | peak RSS MiB | × COPY wall | × COPY CPU | CPU spread |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        spread = r.get("ratio_spread", {}).get("x_baseline_cpu")
        lines.append(
            f"| {r['step']} | {r['wall_s']} | {r['cpu_s']} | {r['peak_rss_mib']:,} | "
            f"{r['x_baseline_wall']} | {r['x_baseline_cpu']} | "
            f"{f'{spread[0]}–{spread[1]}' if spread else ''} |"
        )
    return "\n".join(lines)


# the steps a day's shards split (`DISTILL_INGEST_SHARDS`) -> (the share of the unsharded step's
# cost the shards divide, the share that stays serial). Bronze: a shard's parse costs what its
# files cost unsharded, the merge 0.09 (docs/scaling-out.md). A config's products: the shards
# divide 0.79 (dpo) and 0.78 (correction) of the step (`shards-2026-11-27`), the day's candidates
# are divided too, in one round of pieces per checked rule costing together what the found pass
# cost in one step, 0.25 and 0.23 (the pieces 0.25 against the found step alone 0.27 on a
# generated day: `bench.shards --products`, docs/scaling-out.md); the merge stays serial, 0.11
# and 0.04 (collecting the pieces costs nothing measurable); the configs not measured take dpo's.
# Silver (`telemetry/accepted_events`): the token pieces and the shards divide 0.40 + 0.58 of the
# step, the day's keys and the merge stay serial, 0.08 + 0.09 (`bench.shards --silver 400`,
# docs/scaling-out.md). Triage (`telemetry/triage`): the candidate pieces and the shards divide
# 0.39 + 0.28 of the step, the day's context and the merge stay serial, 0.37 + 0.06
# (`bench.shards --triage 400`, docs/scaling-out.md). Validation (`telemetry/validation`, by
# player): a shard of N costs 0.09 + 0.99 / N of the step (its players' scratch copy and checks
# divide, its read of the day does not), the merge 0.04 (`bench.shards --validation 200` on a
# day failing checks, `shards-2026-11-27-validation-b`, docs/scaling-out.md); a day whose
# conversation or episode ids span shards is validated whole. Episodes (`telemetry_episodes`):
# the shards divide 0.68 of the step (their ranges of episode buckets), what every shard reads
# whatever its range (the inputs, the lift of the day's steps and ends) and the merge (novelty,
# the ordered write, the pairs) stay serial, 0.16 + 0.22 (`bench.shards --episodes 400`).
BRONZE_SHARDS = (1.0, 0.09)
PRODUCT_SHARDS = {"dpo": (0.79 + 0.25, 0.11), "correction": (0.78 + 0.23, 0.04)}
SILVER_SHARDS = (0.98, 0.17)
TRIAGE_SHARDS = (0.67, 0.43)
VALIDATION_SHARDS = (0.99, 0.13)
EPISODE_SHARDS = (0.68, 0.38)
SHARDED_STEPS: dict[str, tuple[float, float]] = {
    **dict.fromkeys(
        ("escalation_records", "revision_validations", "telemetry_bronze", "traces_bronze"),
        BRONZE_SHARDS,
    ),
    **{
        f"curation__{config}_products": PRODUCT_SHARDS.get(config, PRODUCT_SHARDS["dpo"])
        for config in ("sft", "sft_tools", "dpo", "rlds", "cot", "instruction", "correction")
    },
    "telemetry__accepted_events": SILVER_SHARDS,
    "telemetry__triage": TRIAGE_SHARDS,
    "telemetry__validation": VALIDATION_SHARDS,
    "telemetry_episodes": EPISODE_SHARDS,
}
TWO_HOURS_S = 7200.0
# steps recorded under an earlier name -> their name in today's graph (the review folders' refresh
# and the Witness queue were multi-assets with their exclusions until those became steps of
# their own)
RENAMED_STEPS = {
    "review_state": "escalations__review_state",
    "telemetry_witness_review": "telemetry__witness_queue",
}


def step_dependencies() -> dict[str, dict[str, list[str]]]:
    """Each night job's steps and the steps each waits for (from Dagster's execution plan)."""
    from dagster._core.execution.api import create_execution_plan

    from distill_assets.defs.jobs import INGEST_JOB, RELEASE_JOB

    found = {}
    for job, tags in ((INGEST_JOB, {"dagster/partition": DAY}), (RELEASE_JOB, {})):
        plan = create_execution_plan(night_job(job), tags=tags)
        found[job] = {
            step.key: sorted(plan.get_step_by_key(step.key).get_execution_dependency_keys())
            for step in plan.get_all_steps_in_topo_order()
        }
    return found


def scaled_walls(
    result: dict[str, object],
    gb: float,
    workers: int,
    alone: dict[tuple[str, str], float] | None = None,
) -> dict[tuple[str, str], float]:
    """Each step's wall seconds at `gb` of telemetry on `workers` workers, by `(job, step)`.

    Every step's wall scales with the day from the recorded night (linear through zero:
    conservative for fixed costs); `alone` replaces a recorded step's wall by one measured since
    at the night's scale (a step changed after the night, run alone on its kept lake), or gives
    the wall of a step added since the night. On several
    workers a step the shards split (`SHARDED_STEPS`) runs as that many shards, 1/`workers` of
    its divided share each, plus its serial share.
    """
    factor = gb / (result["raw_bytes"]["telemetry"] / 1e9)
    recorded = {}
    for row in result["rows"]:
        job, _, step = str(row["step"]).partition(": ")
        if step:
            recorded[(job, RENAMED_STEPS.get(step, step))] = float(row["wall_s"])
    walls = {}
    for (job, step), at_night in {**recorded, **(alone or {})}.items():
        wall = at_night * factor
        if step in SHARDED_STEPS and workers > 1:
            divided, serial = SHARDED_STEPS[step]
            wall = wall * divided / workers + wall * serial
        walls[(job, step)] = wall
    return walls


def critical_paths(
    walls: dict[tuple[str, str], float], deps: dict[str, dict[str, list[str]]]
) -> dict[str, list[str]]:
    """Each job's longest chain of dependent steps (by `walls`), first step first."""
    paths = {}
    for job, steps in deps.items():
        finish: dict[str, float] = {}
        before: dict[str, str | None] = {}
        for step, waits in steps.items():  # topological order
            last = max(waits, key=lambda w: finish[w], default=None)
            before[step] = last
            finish[step] = walls.get((job, step), 0.0) + (finish[last] if last else 0.0)
        step: str | None = max(finish, key=lambda s: finish[s])
        path = []
        while step is not None:
            path.append(step)
            step = before[step]
        paths[job] = path[::-1]
    return paths


def project(
    result: dict[str, object],
    deps: dict[str, dict[str, list[str]]],
    gb: float,
    workers: int,
    alone: dict[tuple[str, str], float] | None = None,
) -> dict[str, float]:
    """Bounds on the night's wall seconds at `gb` of telemetry on `workers` 2-core workers.

    The steps' walls are `scaled_walls`. Each job is scheduled on the workers, one step per
    worker at a time: its wall is at least the longer of its critical path and its work over the
    workers, and at most their sum (Graham's bound for any greedy scheduler).
    `publish_release` starts after `daily_ingest`. A step of today's graph the record does not
    hold (added since the night) counts 0 s (`unrecorded_steps` lists them).
    """
    walls = scaled_walls(result, gb, workers, alone)
    bounds = {"lower_s": 0.0, "upper_s": 0.0}
    for job, path in critical_paths(walls, deps).items():
        critical = sum(walls.get((job, s), 0.0) for s in path)
        work = sum(walls.get((job, s), 0.0) for s in deps[job])
        bounds["lower_s"] += max(critical, work / workers)
        bounds["upper_s"] += critical + work / workers
    return {key: round(value) for key, value in bounds.items()}


def unrecorded_steps(
    result: dict[str, object],
    deps: dict[str, dict[str, list[str]]],
    alone: dict[tuple[str, str], float] | None = None,
) -> list[str]:
    """The steps of today's graph (`job: step`) neither the recorded night nor `alone` times."""
    recorded = {f"{job}: {step}" for job, step in alone or {}}
    for row in result["rows"]:
        job, _, step = str(row["step"]).partition(": ")
        recorded.add(f"{job}: {RENAMED_STEPS.get(step, step)}")
    return [
        f"{job}: {step}"
        for job, steps in deps.items()
        for step in steps
        if f"{job}: {step}" not in recorded
    ]


def parse_alone(values: list[str], night_gb: float | None = None) -> dict[tuple[str, str], float]:
    """`--alone 'JOB: STEP=SECONDS[@GB]'` values as `scaled_walls`' `alone` (a clear error if not).

    Without `@GB` the wall was measured at the recorded night's scale; with it, on a day of `GB`
    of telemetry (another kept night's lake), and it is scaled linearly to the recorded night's
    `night_gb`, as `scaled_walls` scales every step.
    """
    alone = {}
    for value in values:
        name, _, measured = value.rpartition("=")
        job, _, step = name.partition(": ")
        seconds, at, scale = measured.partition("@")
        try:
            wall, gb = float(seconds), float(scale) if at else night_gb
        except ValueError:
            wall, gb = -1.0, night_gb
        if not step or wall < 0 or (at and (gb is None or gb <= 0)):
            raise ValueError(f"--alone {value!r}: expected 'JOB: STEP=SECONDS[@GB]'")
        if at and night_gb is None:
            raise ValueError(f"--alone {value!r}: @GB needs the recorded night's telemetry GB")
        alone[(job, step)] = wall * (night_gb / gb if at else 1.0)
    return alone


def projection_table(
    result: dict[str, object],
    gb: float,
    most: int = 64,
    alone: dict[tuple[str, str], float] | None = None,
) -> str:
    """The Markdown table of `project` for 1, 2, 4, … workers, and the fewest inside 2 hours."""
    deps = step_dependencies()
    lines = [
        f"### {gb:g} GB of telemetry a day, from {result['command']}",
        "",
        "| 2-core workers | night wall s, at least | at most |",
        "| ---: | ---: | ---: |",
    ]
    fewest = None
    for workers in range(1, most + 1):
        bounds = project(result, deps, gb, workers, alone)
        if workers & (workers - 1) == 0:
            lines.append(f"| {workers} | {bounds['lower_s']:,} | {bounds['upper_s']:,} |")
        if fewest is None and bounds["upper_s"] <= TWO_HOURS_S:
            fewest = workers
    final = project(result, deps, gb, most, alone)
    lines += [
        "",
        f"Fewest workers inside 2 hours (upper bound): {fewest or f'none up to {most}'}; on "
        f"{most} the night still takes at least {final['lower_s']:,} s (its critical paths).",
    ]
    if alone:
        measured = ", ".join(f"`{job}: {step}` {wall:.1f} s" for (job, step), wall in alone.items())
        lines += [
            "",
            f"Walls measured alone since the night (at its scale, or of steps added since): "
            f"{measured}.",
        ]
    missing = unrecorded_steps(result, deps, alone)
    if missing:
        lines += ["", f"Not in the record, counted 0 s: {', '.join(f'`{s}`' for s in missing)}."]
    walls = scaled_walls(result, gb, most, alone)
    for job, path in critical_paths(walls, deps).items():
        chain = " → ".join(f"`{s}` {walls.get((job, s), 0.0):,.0f}" for s in path)
        lines += ["", f"Critical path of `{job}` on {most} workers (wall s): {chain}."]
    return "\n".join(lines)


def history_path(measured_on: str, history: Path = HISTORY) -> Path:
    """`night-<date>.json`, or with the first free suffix b, c, … if the day has one."""
    path = history / f"night-{measured_on}.json"
    for suffix in "bcdefghijklmnopqrstuvwxyz":
        if not path.exists():
            return path
        path = history / f"night-{measured_on}{suffix}.json"
    raise FileExistsError(f"too many night runs recorded on {measured_on}")


def run(quick: bool = False) -> str:
    """`python -m bench` hook: one night at `FULL_GB` (`QUICK_GB`) of telemetry; its table."""
    return table(measure(QUICK_GB if quick else FULL_GB, 1.0, 1))


def print_projection(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`--project`: print the projection of a recorded night (a usage error for a bad `--alone`)."""
    result = json.loads(args.project.read_text())
    try:
        alone = parse_alone(args.alone, result["raw_bytes"]["telemetry"] / 1e9)
    except ValueError as error:
        parser.error(str(error))
    print(projection_table(result, args.to_gb, alone=alone))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Measure a night and record it (or, with `--child`, run one measured part of it)."""
    parser = argparse.ArgumentParser(prog="python -m bench.night", description=__doc__)
    parser.add_argument("--telemetry-gb", type=float, default=FULL_GB)
    parser.add_argument("--others", type=float, default=1.0, help="others' share (1: sample mix)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", type=Path, default=None, help="JSON path (default: history)")
    parser.add_argument("--keep", type=Path, default=None, help="leave the night's lake here")
    parser.add_argument(
        "--executor",
        choices=("in_process", "multiprocess"),
        default="in_process",
        help="the night's executor (multiprocess: each step in a process of its own)",
    )
    parser.add_argument(
        "--max-concurrent", type=int, default=1, help="steps at once (multiprocess)"
    )
    parser.add_argument("--curate-parts", default=None, help="time curate's parts on LAKE")
    parser.add_argument(
        "--project", type=Path, default=None, help="project a recorded night (JSON) to --to-gb"
    )
    parser.add_argument("--to-gb", type=float, default=100.0, help="telemetry GB a day (--project)")
    parser.add_argument(
        "--alone",
        action="append",
        default=[],
        help="'JOB: STEP=SECONDS[@GB]': a step's wall measured alone since the night, at its "
        "scale or on a day of GB of telemetry (--project)",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        default=None,
        help="re-execute the failed release of the night kept in --keep, recorded in this JSON",
    )
    parser.add_argument("--child", nargs="+", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.project:
        return print_projection(parser, args)
    if args.curate_parts:
        print(json.dumps(curate_parts(args.curate_parts)))
        return 0
    if args.child:
        what, *rest = args.child
        if what == "copy":
            result = copy_baseline(Path(rest[0]), Path(rest[1]))
        elif what == "resume":
            result = resume()
        else:
            import dagster  # noqa: F401  (imports are not part of the measured time)

            result = night()
        print(json.dumps(result))
        return 0
    if args.resume:
        if args.keep is None:
            parser.error("--resume needs --keep: the folder of the night that failed")
        failed = json.loads(args.resume.read_text())
        raw = generate(args.telemetry_gb, args.others)
        env = _env(args.keep, raw, args.executor, args.max_concurrent)
        result = resumed_record(failed, child_json("bench.night", ["--child", "resume"], env))
    else:
        result = measure(
            args.telemetry_gb,
            args.others,
            args.repeats,
            args.keep,
            executor=args.executor,
            concurrent=args.max_concurrent,
        )
    if result["failed"]:  # kept for reading, out of the history the table and check use
        out = args.out or RESULTS / f"night-failed-{result['measured_on']}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
    else:
        out = args.out or history_path(str(result["measured_on"]))
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(table(result))
    print(f"\nwritten: {out}")
    if result["failed"]:
        print(f"the night failed: {result['failed']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
