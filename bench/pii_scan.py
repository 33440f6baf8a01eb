"""The independent PII/secret scan: the candidate prefilter against the detectors on every line.

The corpus is the text of generated raw records of all four sources (`distill sample`'s
generators, one day at `--scale`): one row per record, its string leaves joined by newlines, so
it holds the personal data and secrets the samples plant before any scrubbing (a release holds
fewer; the candidate share here is an upper bound), and every `PLANT_EVERY`-th row also carries
one text of the labelled corpus (`tests/unit/curation/pii_corpus.py`: secrets, personal data and
their look-alikes), so the findings compared cover every kind. Both methods read the same frame
and return `(id, column, type)` findings, which must be equal:

- `exhaustive` (the baseline): every distinct line through every detector, as the scan did before
  the prefilter (`scan.line_findings` with every line marked for every detector group);
- `prefiltered`: `scan.scan_frame`, the detectors only on the lines `scan.candidate_lines` marks.

Repeats are interleaved (baseline, candidate, baseline, ...) in one process; the table gives the
median rows/s of each, the spread (min-max) and the ratio of the medians.

`python -m bench.pii_scan [--scale N] [--repeats R]`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from distill_assets.defs.release import scan
from distill_assets.samples import escalations, revisions, telemetry, traces
from tests.unit.curation.pii_corpus import NEGATIVES, POSITIVES

DAY = "2026-11-20"
FULL_SCALE = 20
QUICK_SCALE = 1
REPEATS = 3
PLANT_EVERY = 25
COLUMNS = {"text": pl.String()}


def _leaves(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return []


def _lines(path: Path) -> list[bytes]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    elif path.suffix == ".zst":
        import zstandard

        data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    elif path.suffix == ".lz4":
        import lz4.frame

        data = lz4.frame.decompress(data)
    return data.splitlines()


def corpus(scale: int) -> pl.DataFrame:
    """Return `(id, text)`: one row per generated raw record of one day of every source."""
    texts: list[str] = []
    with tempfile.TemporaryDirectory() as out:
        for module in (escalations, revisions, traces, telemetry):
            module.generate_day(Path(out), DAY, scale, 0)
        for path in sorted(Path(out).rglob("*.jsonl*")):
            for line in _lines(path):
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # the samples' planted bad lines: not text a release holds
                texts.append("\n".join(_leaves(record)))
    planted = [t for group in (POSITIVES, NEGATIVES) for values in group.values() for t in values]
    for n, index in enumerate(range(0, len(texts), PLANT_EVERY)):
        texts[index] += "\n" + planted[n % len(planted)]
    return pl.DataFrame({"id": [f"r{i}" for i in range(len(texts))], "text": texts})


def exhaustive(frame: pl.DataFrame) -> pl.DataFrame:
    """Return the findings with every distinct line read by every detector (the baseline)."""
    lines = scan.lines_of(frame, COLUMNS)
    every = lines.select(pl.col("text").unique().sort()).with_columns(
        pl.lit(True).alias(group) for group in scan.GROUPS
    )
    hits = scan.line_findings(every)
    return lines.join(hits, on="text", how="inner").select(scan.FINDING_SCHEMA.keys())


def prefiltered(frame: pl.DataFrame) -> pl.DataFrame:
    """Return the findings of the scan as the release runs it."""
    return scan.scan_frame(frame, COLUMNS)


def _timed(method, frame: pl.DataFrame) -> tuple[float, pl.DataFrame]:
    start = time.perf_counter()
    found = method(frame)
    return time.perf_counter() - start, found.sort(pl.all())


def run(quick: bool = False, scale: int | None = None, repeats: int = REPEATS) -> str:
    """Run the benchmark and return its Markdown section."""
    frame = corpus(scale or (QUICK_SCALE if quick else FULL_SCALE))
    lines = scan.lines_of(frame, COLUMNS).get_column("text")
    candidates = scan.candidate_lines(lines)
    walls: dict[str, list[float]] = {"exhaustive": [], "prefiltered": []}
    findings: dict[str, pl.DataFrame] = {}
    for _ in range(repeats):
        for name, method in (("exhaustive", exhaustive), ("prefiltered", prefiltered)):
            wall, findings[name] = _timed(method, frame)
            walls[name].append(wall)
    if not findings["exhaustive"].equals(findings["prefiltered"]):
        raise SystemExit("the prefiltered scan's findings differ from the exhaustive scan's")
    rate = {name: [frame.height / w for w in ws] for name, ws in walls.items()}
    median = {name: statistics.median(values) for name, values in rate.items()}
    distinct = lines.n_unique()
    out = [
        f"### Independent PII scan ({frame.height:,} rows, {distinct:,} distinct lines, "
        f"{candidates.height:,} candidates = {candidates.height / distinct:.1%}; "
        f"{findings['prefiltered'].height:,} findings, equal)",
        "",
        "| method | median rows/s | spread rows/s | × exhaustive |",
        "| --- | ---: | --- | ---: |",
    ]
    for name, values in rate.items():
        out.append(
            f"| {name} | {median[name]:,.0f} | {min(values):,.0f}-{max(values):,.0f} | "
            f"{median[name] / median['exhaustive']:.1f} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.pii_scan", description=__doc__)
    parser.add_argument("--scale", type=int, default=FULL_SCALE)
    parser.add_argument("--repeats", type=int, default=REPEATS)
    args = parser.parse_args()
    print(run(scale=args.scale, repeats=args.repeats))
    sys.exit(0)
