"""The release's `rlds` TFDS folder (`tfrecord.write_tfds_folder`) vs a Parquet write of its rows.

The candidate writes every published episode as a `tf.train.Example` in `rlds/tfds/` beside the
Parquet data files (docs/sources/telemetry.md#tfds-folder). Baseline: the same rows written as one
Parquet file (Polars, zstd: what a release data file costs), in the same process, interleaved
with the TFDS write, `--repeats` times; CPU is the process's (every thread), medians with the
spread. Rows: generated episodes (`episodes`, deterministic, 5 to 30 steps each), or the curated
`rlds` files of a kept night (`--rows '<lake>/curation/rlds/*.parquet'`).
`python -m bench.tfds_export --episodes 20000 [--history]` records a run in `bench/history/`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

from distill_assets.contracts.published import RLDS_STEPS_DTYPE
from distill_assets.defs.telemetry.tfrecord import write_tfds_folder
from distill_assets.rules import action_tokens as rules

FULL_EPISODES = 20_000
QUICK_EPISODES = 200
REPEATS = 3
HISTORY = Path(__file__).resolve().parent / "history"
ITEMS = ("prepared_clay_5kg", "water_vessel", 'glaze "celadon"', "kiln_key")


def _step(episode: int, index: int, steps: int) -> dict:
    last = index == steps - 1
    level = (episode * 7 + index * 3) % 100 / 100
    return {
        "step_index": index,
        "is_first": index == 0,
        "is_last": last,
        "is_terminal": last and episode % 3 == 0,
        "observation": {
            "game_state": json.dumps({"clay_moisture": level, "wheel_speed": 1 - level}),
            "game_state_values": {
                "clay_moisture": level,
                "wheel_speed": 1 - level,
                "wall_thickness": None if index % 4 else level / 2,
                "symmetry": None,
            },
            "inventory": list(ITEMS[: (episode + index) % (len(ITEMS) + 1)]),
            "skill_state": json.dumps({"pottery": episode % 9}),
            "skill_state_values": {"pottery": float(episode % 9), "wheel_throwing": None},
            "natural_language_instruction": f"shape the jar, step {index}",
        },
        "action": {
            "action_type": "" if last else "wheel_manipulation",
            "action_details": json.dumps({"hand_pressure": level, "lift_rate": 0.3}),
            "action_tokens": [(episode + index * k) % rules.PAD_TOKEN for k in range(4)],
        },
        "reward": 0.0 if last else level,
        "discount": 0.0 if last else rules.DISCOUNT,
    }


def episodes(count: int) -> pl.DataFrame:
    """Return `count` generated `rlds` rows with a `split` column (deterministic)."""
    lengths = [5 + (e * 11) % 26 for e in range(count)]
    return pl.DataFrame(
        {
            "id": [f"rlds-{e:08d}" for e in range(count)],
            "source": ["telemetry"] * count,
            "source_ref": [f"episode:e{e}" for e in range(count)],
            "quality_score": [(e % 10) / 10 for e in range(count)],
            "metadata": [json.dumps({"task_id": f"t{e % 50}"}) for e in range(count)],
            "episode_id": [f"e{e}" for e in range(count)],
            "task_description": [f"make jar {e % 50}" for e in range(count)],
            "success": [e % 3 == 0 for e in range(count)],
            "steps": [[_step(e, i, n) for i in range(n)] for e, n in enumerate(lengths)],
            "split": ["test" if e % 10 == 0 else "train" for e in range(count)],
        },
        schema_overrides={"steps": RLDS_STEPS_DTYPE},
    )


def _timed(work) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def measure(rows: pl.DataFrame, repeats: int) -> dict[str, dict[str, list[float]]]:
    """Interleave the Parquet baseline and the TFDS write `repeats` times; their wall/CPU s."""
    spent: dict[str, dict[str, list[float]]] = {
        name: {"wall": [], "cpu": []} for name in ("parquet", "tfds")
    }
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(repeats):
            folder = Path(tmp) / str(repeat)
            steps = (
                (
                    "parquet",
                    lambda out=folder: rows.write_parquet(out / "rows.parquet", mkdir=True),
                ),
                ("tfds", lambda out=folder: write_tfds_folder(rows, out / "tfds")),
            )
            for name, work in steps:
                wall, cpu = _timed(work)
                spent[name]["wall"].append(wall)
                spent[name]["cpu"].append(cpu)
    return spent


def result_rows(label: str, episodes_n: int, spent: dict) -> list[dict[str, object]]:
    """Return the recorded rows: medians, spread and ratio to the Parquet baseline."""
    base = statistics.median(spent["parquet"]["cpu"])
    out = []
    for name, step in (("parquet", "Parquet write (baseline)"), ("tfds", "TFDS folder")):
        cpu = statistics.median(spent[name]["cpu"])
        ratios = [c / b for c, b in zip(spent[name]["cpu"], spent["parquet"]["cpu"], strict=True)]
        out.append(
            {
                "input": label,
                "step": step,
                "wall_s": round(statistics.median(spent[name]["wall"]), 2),
                "cpu_s": round(cpu, 2),
                "episodes_per_cpu_s": round(episodes_n / cpu),
                "x_baseline_cpu": round(cpu / base, 2),
                "spread": f"{min(ratios):.2f}-{max(ratios):.2f}",
            }
        )
    return out


def _table(rows: list[dict[str, object]]) -> str:
    lines = [
        f"### rlds TFDS folder vs Parquet ({rows[0]['input']})",
        "",
        "| step | wall s | CPU s | episodes / CPU s | × Parquet CPU | spread |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    lines += [
        f"| {r['step']} | {r['wall_s']} | {r['cpu_s']} | {r['episodes_per_cpu_s']:,} | "
        f"{r['x_baseline_cpu']} | {r['spread']} |"
        for r in rows
    ]
    return "\n".join(lines)


def run(
    quick: bool = False, count: int | None = None, files: str = "", repeats: int = REPEATS
) -> str:
    """Run the benchmark and return its Markdown section (`python -m bench` calls this)."""
    return _table(_measured(quick, count, files, repeats))


def _measured(quick: bool, count: int | None, files: str, repeats: int) -> list[dict]:
    if files:
        rows, kind = pl.read_parquet(sorted(glob.glob(files))), "curated"
    else:
        rows, kind = episodes(count or (QUICK_EPISODES if quick else FULL_EPISODES)), "generated"
    steps = rows.get_column("steps").list.len().sum()
    label = f"{rows.height:,} {kind} episodes ({steps:,} steps)"
    return result_rows(label, rows.height, measure(rows, repeats))


def main(argv: list[str] | None = None) -> int:
    """Run once from the command line; with `--history`, also record it in `bench/history/`."""
    parser = argparse.ArgumentParser(prog="python -m bench.tfds_export", description=__doc__)
    parser.add_argument("--episodes", type=int, default=FULL_EPISODES)
    parser.add_argument("--rows", default="", help="glob of curated rlds Parquet files")
    parser.add_argument("--repeats", type=int, default=REPEATS)
    parser.add_argument("--history", action="store_true", help="record in bench/history/")
    parser.add_argument("--conditions", default="2 shared cores")
    args = parser.parse_args(argv)
    rows = _measured(False, args.episodes, args.rows, args.repeats)
    print(_table(rows))
    if args.history:
        today = dt.datetime.now(dt.UTC).date().isoformat()
        record = {
            "benchmark": "tfds_export",
            "measured_on": today,
            "command": "python -m bench.tfds_export " + " ".join(argv or sys.argv[1:]),
            "baseline": "the same rows written as one Parquet file (Polars, zstd), interleaved",
            "conditions": f"{args.conditions}; {args.repeats} interleaved repeats, medians",
            "rows": rows,
        }
        path = HISTORY / f"tfds_export-{today}.json"
        path.write_text(json.dumps(record, indent=1) + "\n")
        print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
