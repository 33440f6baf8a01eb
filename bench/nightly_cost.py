"""Nightly cost benchmark: curation + release of one new day on top of 2, 4 and 8 days of history.

For each history length H a lake gets H days of `traces/sft_steps` feed rows (a fixed number of
~1 KB rows per day, generated with a seeded NumPy generator, 5% planted near duplicates of the
previous day) and one curation and release run (untimed) leaves its per-partition products,
curated partition files and the previous version's folder. Then one new day lands and a fresh
process runs, timed: `curate_lakes` (products of the new day only, global decisions over compact
columns, the curated files of the partitions whose decisions changed, removed rows, funnel) and
`build_release` into a temporary folder, reusing the previous version's unchanged shards. The
process reports the wall time of that work (not imports) and its peak RSS
(`resource.getrusage(RUSAGE_SELF).ru_maxrss`). The night runs `REPEATS` times (the new day's
products and curated file deleted before each) and the fastest run counts. Targets (issue 13):
8-day / 2-day time ratio <= 1.3 and RSS ratio <= 1.2.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

DATA = Path(__file__).resolve().parent / "data" / "nightly"
HISTORIES = (2, 4, 8)
FULL_ROWS_PER_DAY = 20_000
QUICK_ROWS_PER_DAY = 500
WORDS = 150
VOCABULARY = 50_000
SEED = 13
REPEATS = 5


def day_name(index: int) -> str:
    """Return the partition key of day `index` (0-based, from 2026-11-01)."""
    return f"2026-11-{index + 1:02d}"


def day_frame(index: int, rows: int) -> pl.DataFrame:
    """Return one day of `sft` feed rows (deterministic for a given index and size)."""
    from distill_assets.contracts.published import feed_schema

    rng = np.random.default_rng(SEED + index)
    vocabulary = np.array([f"w{i:x}" for i in range(VOCABULARY)])
    words = rng.integers(0, VOCABULARY, size=(rows, WORDS))
    if index:
        previous = np.random.default_rng(SEED + index - 1).integers(
            0, VOCABULARY, size=(rows, WORDS)
        )
        planted = rows // 20
        words[:planted] = previous[:planted]
        words[:planted, 7] = rng.integers(0, VOCABULARY, size=planted)
    texts = [" ".join(row) for row in vocabulary[words]]
    ids = [f"d{index}-r{i}" for i in range(rows)]
    frame = pl.DataFrame(
        {
            "id": ids,
            "source": ["traces"] * rows,
            "source_ref": [f"runs/{i}.jsonl" for i in ids],
            "quality_score": (np.arange(rows) % 10 / 10).tolist(),
            "metadata": ["{}"] * rows,
            "user": texts,
            "split_group": [f"task-{index}-{i % 500}" for i in range(rows)],
            "event_time": (np.arange(rows, dtype=np.float64) + index * 86400).tolist(),
        }
    )
    return frame.select(
        "id",
        "source",
        "source_ref",
        "quality_score",
        "metadata",
        pl.concat_list(
            pl.struct(pl.lit("user").alias("role"), pl.col("user").alias("content")),
            pl.struct(
                pl.lit("assistant").alias("role"),
                (pl.lit("answer: ") + pl.col("user").str.slice(0, 200)).alias("content"),
            ),
        ).alias("messages"),
        "split_group",
        "event_time",
    ).cast(dict(feed_schema("sft")))


def land(lake: Path, index: int, rows: int) -> None:
    """Write day `index` into the lake."""
    from distill_assets.lib.lake import partition_path, write_parquet_atomic

    write_parquet_atomic(
        day_frame(index, rows), partition_path(str(lake), "traces", "sft_steps", day_name(index))
    )


def nightly(lake: str, release_dir: str, previous_dir: str) -> dict[str, float]:
    """Curate `sft` from the lake's products and build a release; return seconds and peak RSS.

    The release reuses the unchanged shards of the version in `previous_dir`, if there is one.
    """
    import resource
    import time

    from distill_assets.contracts.release import ReleaseManifest
    from distill_assets.defs.curation.decontaminate import NO_EVAL_SETS
    from distill_assets.defs.curation.funnel import write_funnel
    from distill_assets.defs.curation.pipeline import curate_lakes, feed_partitions
    from distill_assets.defs.curation.products import ProductContext
    from distill_assets.defs.release.build import (
        PreviousShards,
        ReleaseInputs,
        all_rules_versions,
        build_release,
    )
    from distill_assets.defs.release.candidate import curated_parts
    from distill_assets.defs.release.layout import MANIFEST
    from distill_assets.lib.embed import load_embedder
    from distill_assets.lib.lake import global_path, write_parquet_atomic

    start = time.perf_counter()
    context = ProductContext("sft", load_embedder(), NO_EVAL_SETS)
    result = curate_lakes(lake, [context])["sft"]
    write_parquet_atomic(result.duplicates, global_path(lake, "curation", "sft_duplicates"))
    write_funnel(lake, "sft", result.funnel)
    inputs = ReleaseInputs(
        name="bench",
        curated={"sft": curated_parts(result.partitions)},
        duplicates_removed={"sft": result.duplicates.height},
        created_from=feed_partitions(lake, "sft"),
        rules=all_rules_versions(),
        funnels={"sft": result.funnel},
    )
    previous = Path(previous_dir)
    manifest = (
        ReleaseManifest.model_validate_json((previous / MANIFEST).read_text(encoding="utf-8"))
        if (previous / MANIFEST).is_file()
        else None
    )
    shards = PreviousShards(manifest, previous)
    build_release(inputs, Path(release_dir), lambda _version: None, previous_shards=shards)
    seconds = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "seconds": seconds,
        "peak_rss_mb": peak_kb / 1024,
        "computed": len(result.products_computed),
        "curated_rewritten": len(result.curated_rewritten),
        "shards_reused": len(shards.reused),
        "rows": result.curated.height,
    }


def measure(lake: Path, release_dir: Path) -> dict[str, float]:
    """Run `nightly` in a fresh process building into `release_dir`; return its report.

    The version it compares with and reuses shards from is `<lake>/../previous`.
    """
    code = (
        "import json, sys; from bench.nightly_cost import nightly; "
        "print(json.dumps(nightly(sys.argv[1], sys.argv[2], sys.argv[3])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(lake), str(release_dir), str(lake.parent / "previous")],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure_night(lake: Path, history: int) -> dict[str, float]:
    """Measure the night that adds day `history`, starting from the history's products only."""
    day = f"{day_name(history)}.parquet"
    (lake / "curation" / "sft_products" / day).unlink(missing_ok=True)
    (lake / "curation" / "sft" / day).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(dir=lake.parent) as release_dir:
        return measure(lake, Path(release_dir))


def run(quick: bool = False, rows: int | None = None) -> str:
    """Run the benchmark and return its Markdown section."""
    per_day = rows or (QUICK_ROWS_PER_DAY if quick else FULL_ROWS_PER_DAY)
    results = {}
    for history in HISTORIES:
        lake = DATA / f"h{history}-{per_day}" / "lake"
        shutil.rmtree(lake.parent, ignore_errors=True)
        for index in range(history):
            land(lake, index, per_day)
        # the earlier nights: products, curated files and the previous version of the history
        measure(lake, lake.parent / "previous")
        land(lake, history, per_day)
        # the same night re-run from the same products: the fastest of REPEATS counts
        runs = [measure_night(lake, history) for _ in range(REPEATS)]
        results[history] = min(runs, key=lambda r: r["seconds"])
        shutil.rmtree(lake.parent, ignore_errors=True)
    base = results[HISTORIES[0]]
    lines = [
        f"### Nightly cost: one new day of {per_day:,} `sft` rows on top of H days of history",
        "",
        "| history days | products computed | curated files written | shards reused "
        "| published rows | seconds | peak RSS MB | time / 2-day | RSS / 2-day |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for history, r in results.items():
        lines.append(
            f"| {history} | {r['computed']:.0f} | {r['curated_rewritten']:.0f} | "
            f"{r['shards_reused']:.0f} | {r['rows']:,.0f} | {r['seconds']:.1f} | "
            f"{r['peak_rss_mb']:.0f} | {r['seconds'] / base['seconds']:.2f} | "
            f"{r['peak_rss_mb'] / base['peak_rss_mb']:.2f} |"
        )
    return "\n".join(lines)
