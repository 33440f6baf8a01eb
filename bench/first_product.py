"""First product step vs bronze on the same partition (issue 17, item 2): escalations, revisions.

On the ingest benchmark's partition of each source (`bench.ingest.dataset`, 250 MB by default),
one fresh process per source runs the shared ingest (bronze + quarantine, as the bronze asset
does) and then the source's first product step on that bronze, as its asset does:

- escalations: `distillation_examples` — `examples.example_batches` written by
  `lake.write_frames`;
- revisions: `revision_pairs` — `pairing.pair_turns`, both tables written to Parquet.

Wall and CPU time (user + sys) of each; the target is product ≤ bronze. Telemetry's first product
(`dialogues`) is a lap of `telemetry_pipeline`, traces' (`sft_steps`) a row of `traces_ingest`.
`python -m bench.first_product 250` runs one size (MB).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.ingest import DAY, dataset

SOURCES = ("escalations", "revisions")
FULL_SIZE_MB = 250
QUICK_SIZE_MB = 2


def clock() -> tuple[float, float]:
    """Return this process's wall clock and CPU time (user + system, all threads) in seconds."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return time.perf_counter(), usage.ru_utime + usage.ru_stime


def _product(source: str, bronze: Path, out: Path) -> int:
    """Run `source`'s first product step on its bronze file; return the rows it wrote."""
    import polars as pl

    if source == "escalations":
        from distill_assets.defs.escalations.examples import example_batches
        from distill_assets.lib.lake import write_frames

        batches = example_batches(pl.scan_parquet(bronze))
        return write_frames(batches, out / "distillation_examples.parquet")
    from distill_assets.defs.revisions.pairing import pair_turns

    pairs, unpaired = pair_turns(pl.scan_parquet(bronze))
    pairs.write_parquet(out / "revision_pairs.parquet")
    unpaired.write_parquet(out / "unpaired_turns.parquet")
    return pairs.height + unpaired.height


def _child(source: str, root: str, out: str) -> None:
    from distill_assets.contracts import revisions
    from distill_assets.defs.escalations.records import ingest_records
    from distill_assets.defs.ingest import ingest_partition

    files = sorted(str(p) for p in (Path(root) / source / DAY).iterdir())
    wall0, cpu0 = clock()
    if source == "escalations":
        result = ingest_records(files, raw_root=root)
    else:
        result = ingest_partition(revisions.RAW, files, raw_root=root, bronze_exclude=("line",))
    wall1, cpu1 = clock()
    rows = _product(source, result.bronze.path, Path(out))
    wall2, cpu2 = clock()
    print(
        json.dumps(
            {
                "bronze_rows": result.bronze_rows,
                "product_rows": rows,
                "bronze_wall_s": wall1 - wall0,
                "bronze_cpu_s": cpu1 - cpu0,
                "product_wall_s": wall2 - wall1,
                "product_cpu_s": cpu2 - cpu1,
            }
        )
    )


def measure(source: str, size_mb: int) -> dict[str, float]:
    """Measure one source in a fresh process; return its times and rows."""
    root = dataset(source, size_mb)
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "bench.first_product", "--step", source, str(root), out]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"first product step of {source} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False, size_mb: int | None = None) -> str:
    """Run the benchmark and return its Markdown section."""
    size = size_mb or (QUICK_SIZE_MB if quick else FULL_SIZE_MB)
    lines = [
        f"### First product step vs bronze ({size} MB partition of the ingest benchmark)",
        "",
        "| source | product step | bronze wall s | product wall s | × bronze wall | "
        "bronze cpu s | product cpu s | × bronze cpu |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    steps = {"escalations": "distillation_examples", "revisions": "revision_pairs"}
    for source in SOURCES:
        r = measure(source, size)
        lines.append(
            f"| {source} | {steps[source]} | {r['bronze_wall_s']:.2f} | "
            f"{r['product_wall_s']:.2f} | {r['product_wall_s'] / r['bronze_wall_s']:.2f} | "
            f"{r['bronze_cpu_s']:.2f} | {r['product_cpu_s']:.2f} | "
            f"{r['product_cpu_s'] / r['bronze_cpu_s']:.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--step"]:
        _child(*sys.argv[2:5])
    else:
        print(run(size_mb=int(sys.argv[1]) if sys.argv[1:2] else None))
