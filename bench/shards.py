"""Shards benchmark: one telemetry day's bronze ingest as 1 step vs 2 shard steps and the merge.

One generated telemetry day (`distill_assets.samples.telemetry.generate_day` at `SCALE`, default
300 or `DISTILL_BENCH_SCALE`; its files cut into `PIECES` files each, into
bench/data/shards/, reused by the next run) is ingested, in one invocation:

- `1 step`: `ingest_partition` over the whole day (the unsharded bronze step);
- `2 shards`: `ingest_shard` over each half of the day's files (`split_files`), the two in
  parallel in two worker processes, then `merge_shards` (the bronze step of a sharded day) in one.

Both run in the same two warmed-up worker processes (imports are not measured; Dagster's step
start-up is not either: see `scale_out` for that), `REPEATS` times, interleaved; the table gives
the fastest wall time and the spread (slowest minus fastest) of each, and the speed-up of the
fastest. The merged files must be byte-identical to the unsharded step's (checked every repeat).
"""

import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

SCALE = int(os.environ.get("DISTILL_BENCH_SCALE", "300"))
QUICK_SCALE = 5
PIECES = 8
REPEATS = 3
DAY = "2026-11-19"
DATA = Path(__file__).resolve().parent / "data" / "shards"


def _generate(scale: int) -> Path:
    from distill_assets.samples.telemetry import generate_day

    raw = DATA / f"scale-{scale}" / "raw"
    if not (raw / ".complete").exists():
        generate_day(raw, DAY, scale, 0)
        folder = raw / "telemetry" / DAY
        for path in sorted(folder.glob("*.jsonl")):
            lines = path.read_bytes().splitlines(keepends=True)
            step = -(-len(lines) // PIECES)
            for piece in range(PIECES):
                part = folder / f"{path.stem}-{piece}.jsonl"
                part.write_bytes(b"".join(lines[piece * step : (piece + 1) * step]))
            path.unlink()
        (raw / ".complete").touch()
    return raw


def _warm() -> None:
    import distill_assets.defs.shards  # noqa: F401  (imports are not part of the measured time)


def _params() -> dict[str, object]:
    from distill_assets.defs.player_ids import PlayerIdHasher
    from distill_assets.defs.telemetry.assets import parse_params

    return parse_params(PlayerIdHasher(key="bench-key-" * 4))[0]


def _whole(raw: str, out: str) -> float:
    from distill_assets.contracts.telemetry import RAW
    from distill_assets.defs.ingest import ingest_partition
    from distill_assets.lib.rawfiles import list_raw_files

    started = time.perf_counter()
    paths = list_raw_files(raw, "telemetry", DAY)
    ingest_partition(
        RAW, paths, raw_root=raw, params=_params(), bronze_exclude=("line",), workdir=Path(out)
    )
    return time.perf_counter() - started


def _shard(raw: str, shard: int, out: str) -> float:
    from distill_assets.contracts.telemetry import RAW
    from distill_assets.defs.shards import ingest_shard, split_files
    from distill_assets.lib.rawfiles import list_raw_files

    started = time.perf_counter()
    files = split_files(list_raw_files(raw, "telemetry", DAY), 2)[shard]
    ingest_shard(
        RAW, files, raw_root=raw, params=_params(), bronze_exclude=("line",), workdir=Path(out)
    )
    return time.perf_counter() - started


def _merge(raw: str, shards: list[str], out: str) -> float:
    from distill_assets.contracts.telemetry import RAW
    from distill_assets.defs.shards import ShardFiles, merge_shards
    from distill_assets.lib.rawfiles import list_raw_files

    started = time.perf_counter()
    parts = [ShardFiles(f"{s}/bronze.parquet", f"{s}/quarantine.parquet") for s in shards]
    merge_shards(RAW, parts, list_raw_files(raw, "telemetry", DAY), workdir=Path(out))
    return time.perf_counter() - started


def _same(a: Path, b: Path) -> bool:
    return all(
        (a / name).read_bytes() == (b / name).read_bytes()
        for name in ("bronze.parquet", "quarantine.parquet")
    )


def _spread(values: list[float]) -> str:
    return f"{min(values):.2f} (+{max(values) - min(values):.2f})"


def run(quick: bool = False) -> str:
    scale = QUICK_SCALE if quick else SCALE
    raw = _generate(scale)
    raw_mb = sum(p.stat().st_size for p in raw.rglob("*.jsonl")) / 1e6
    whole, parallel, merge, sharded = [], [], [], []
    with (
        tempfile.TemporaryDirectory(prefix="distill-bench-shards-") as scratch,
        ProcessPoolExecutor(2, mp_context=get_context("spawn"), initializer=_warm) as pool,
    ):
        list(pool.map(time.sleep, [0.5, 0.5]))  # both workers started and warmed up
        for repeat in range(REPEATS):
            work = Path(scratch) / str(repeat)
            folders = [work / name for name in ("whole", "0", "1", "merged")]
            for folder in folders:
                folder.mkdir(parents=True)
            whole.append(pool.submit(_whole, str(raw), str(folders[0])).result())
            started = time.perf_counter()
            shards = [pool.submit(_shard, str(raw), k, str(folders[1 + k])) for k in range(2)]
            for future in shards:
                future.result()
            parallel.append(time.perf_counter() - started)
            merge.append(
                pool.submit(
                    _merge, str(raw), [str(folders[1]), str(folders[2])], str(folders[3])
                ).result()
            )
            sharded.append(time.perf_counter() - started)
            if not _same(folders[0], folders[3]):
                raise RuntimeError("the merged shards differ from the unsharded ingest")
    return "\n".join(
        [
            "## Shards (`bench/shards.py`)",
            "",
            f"One telemetry day, scale {scale}: {raw_mb:.1f} MB in {PIECES * 2} files; "
            f"{REPEATS} interleaved repeats, fastest wall s (+ spread); merged files "
            "byte-identical to the unsharded step: yes.",
            "",
            "| what | wall s | ratio |",
            "| --- | ---: | ---: |",
            f"| 1 step (`ingest_partition`) | {_spread(whole)} | 1.00 |",
            f"| 2 shards in parallel | {_spread(parallel)} | |",
            f"| merge | {_spread(merge)} | × {min(merge) / min(whole):.2f} of 1 step |",
            f"| 2 shards + merge | {_spread(sharded)} | speedup {min(whole) / min(sharded):.2f} |",
        ]
    )


if __name__ == "__main__":
    print(run())
