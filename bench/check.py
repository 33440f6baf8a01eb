"""Regression check: compare a benchmark run's ratios with a recorded run, beyond the spread only.

`python -m bench.check NEW.json [--against OLD.json]` reads two runs in the history format
(`bench/history/<benchmark>-<date>.json`, see `bench/table.py`; without `--against`, the newest
history file of the same benchmark dated before NEW, or before NEW's file name) and compares every
ratio to the baseline of the rows both have (same `input` and `step`): `x_baseline_wall`,
`x_baseline_cpu`, `x_baseline_rss` (lower is better), `x_baseline_per_s`, `speedup` (higher is
better).

A run records, per row and ratio, the spread of its interleaved repeats: `ratio_spread:
{"x_baseline_cpu": [min, max], …}` (the ratio of each repeat to the baseline measured next to
it). A ratio is a **regression** only when the two runs' ranges do not overlap and the new one is
worse: the new run's best repeat is worse than the recorded run's worst. A run without a spread
counts as the single value it holds; when neither run has one, the ratio is reported as
unchecked (a single repeat cannot tell a regression from the machine's noise). Exit status 1 if
any ratio regressed, 0 otherwise.

`python -m bench` calls `run()`, which checks each benchmark's newest recorded run against the
one before it and only reports.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.table import HISTORY, read_run

# ratio fields and whether a higher value is better
RATIOS = {
    "x_baseline_wall": False,
    "x_baseline_cpu": False,
    "x_baseline_rss": False,
    "x_baseline_per_s": True,
    "speedup": True,
}
REGRESSION = "REGRESSION"
BETTER = "better"
WITHIN = "within spread"
UNCHECKED = "unchecked (no spread recorded)"


@dataclass(frozen=True)
class Verdict:
    """The comparison of one ratio of one row."""

    input: str
    step: str
    ratio: str
    old: tuple[float, float]
    new: tuple[float, float]
    verdict: str


def spread(row: dict[str, object], ratio: str) -> tuple[float, float]:
    """The (min, max) of a row's ratio over its repeats; (value, value) when none is recorded."""
    recorded = row.get("ratio_spread") or {}
    if isinstance(recorded, dict) and ratio in recorded:
        low, high = recorded[ratio]
        return float(low), float(high)
    value = float(row[ratio])  # type: ignore[arg-type]
    return value, value


def judge(old: tuple[float, float], new: tuple[float, float], higher_is_better: bool) -> str:
    """Regression only if the ranges do not overlap and the new one is on the worse side."""
    if old[0] == old[1] and new[0] == new[1]:
        return UNCHECKED
    worse = new[1] < old[0] if higher_is_better else new[0] > old[1]
    better = new[0] > old[1] if higher_is_better else new[1] < old[0]
    return REGRESSION if worse else BETTER if better else WITHIN


def compare(old: dict[str, object], new: dict[str, object]) -> list[Verdict]:
    """Every ratio both runs hold for the same (input, step), judged."""
    recorded = {(str(r["input"]), str(r["step"])): r for r in old["rows"]}  # type: ignore[union-attr]
    verdicts = []
    for row in new["rows"]:  # type: ignore[union-attr]
        key = (str(row["input"]), str(row["step"]))
        before = recorded.get(key)
        if before is None:
            continue
        for ratio, higher_is_better in RATIOS.items():
            if row.get(ratio) is None or before.get(ratio) is None:
                continue
            was, now = spread(before, ratio), spread(row, ratio)
            verdicts.append(Verdict(*key, ratio, was, now, judge(was, now, higher_is_better)))
    return verdicts


def previous(new: Path, history: Path | None = None) -> Path | None:
    """The newest history file of NEW's benchmark that sorts before NEW (None: there is none)."""
    history = history or HISTORY
    run = read_run(new)
    before = (str(run["measured_on"]), new.name)
    candidates = []
    for path in sorted(history.glob("*.json")):
        other = read_run(path)
        if (
            path.resolve() != new.resolve()
            and other["benchmark"] == run["benchmark"]
            and (str(other["measured_on"]), path.name) < before
        ):
            candidates.append((str(other["measured_on"]), path.name, path))
    return max(candidates)[2] if candidates else None


def _range(values: tuple[float, float]) -> str:
    low, high = values
    return f"{low:g}" if low == high else f"{low:g}–{high:g}"


def report(verdicts: list[Verdict], old: Path, new: Path) -> str:
    """A Markdown table of the verdicts."""
    lines = [
        f"Regression check: {new.name} against {old.name}",
        "",
        "| input | step | ratio | recorded | new | verdict |",
        "| --- | --- | --- | ---: | ---: | --- |",
    ]
    for v in verdicts:
        lines.append(
            f"| {v.input} | {v.step} | {v.ratio} | {_range(v.old)} | {_range(v.new)} | "
            f"{v.verdict} |"
        )
    regressions = sum(v.verdict == REGRESSION for v in verdicts)
    lines += ["", f"{regressions} regression(s) beyond the spread in {len(verdicts)} ratio(s)"]
    return "\n".join(lines)


def run(quick: bool = False) -> str:
    """`python -m bench` hook: each benchmark's newest recorded run against the one before it."""
    newest: dict[str, Path] = {}
    for path in sorted(HISTORY.glob("*.json")):
        newest[str(read_run(path)["benchmark"])] = path
    sections = ["### Regression check of the recorded runs (bench/history)"]
    for path in newest.values():
        old = previous(path)
        if old is not None:
            sections.append(report(compare(read_run(old), read_run(path)), old, path))
    return "\n\n".join(sections)


def main(argv: list[str] | None = None) -> int:
    """Compare NEW with a recorded run; exit 1 on a regression beyond the spread."""
    parser = argparse.ArgumentParser(prog="python -m bench.check", description=__doc__)
    parser.add_argument("new", type=Path, help="a run in the history format")
    parser.add_argument("--against", type=Path, default=None, help="the recorded run")
    args = parser.parse_args(argv)
    old = args.against or previous(args.new)
    if old is None:
        print(f"bench.check: no recorded run of this benchmark before {args.new}", file=sys.stderr)
        return 2
    verdicts = compare(read_run(old), read_run(args.new))
    print(report(verdicts, old, args.new))
    return 1 if any(v.verdict == REGRESSION for v in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
