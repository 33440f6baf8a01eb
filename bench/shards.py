"""Shards benchmark: one telemetry day's bronze ingest as 1 step vs 2 shard steps and the merge.

One generated telemetry day (`distill_assets.samples.telemetry.generate_day` at `SCALE`, default
300 or `DISTILL_BENCH_SCALE`; its files cut into `PIECES` files each, into
bench/data/shards/, reused by the next run) is ingested, in one invocation:

- `1 step`: `ingest_partition` over the whole day (the unsharded bronze step);
- `2 shards`: `ingest_shard` over each half of the day's files (`split_files`), the two in
  parallel in two worker processes, then `merge_shards` (the bronze step of a sharded day) in one.

Both run in the same two warmed-up worker processes (imports are not measured; Dagster's step
start-up is not either: see `scale_out` for that), `REPEATS` times, interleaved; the table gives
the fastest wall time and its spread (slowest minus fastest), the fastest CPU time (all threads
of the process) and the speed-up of the fastest walls. The CPU of one shard over all the files
(the shard's wrapped parse alone), of both shards and of the merge against the unsharded step's
is what sharding costs, whatever the cores. The merged files must be byte-identical to the
unsharded step's (checked every repeat).
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


def _whole(raw: str, out: str) -> tuple[float, float]:
    from distill_assets.contracts.telemetry import RAW
    from distill_assets.defs.ingest import ingest_partition
    from distill_assets.lib.rawfiles import list_raw_files

    started, cpu = time.perf_counter(), time.process_time()
    paths = list_raw_files(raw, "telemetry", DAY)
    ingest_partition(
        RAW, paths, raw_root=raw, params=_params(), bronze_exclude=("line",), workdir=Path(out)
    )
    return time.perf_counter() - started, time.process_time() - cpu


def _shard(raw: str, shard: int, out: str, shards: int = 2) -> tuple[float, float]:
    from distill_assets.contracts.telemetry import RAW
    from distill_assets.defs.shards import ingest_shard, split_files
    from distill_assets.lib.rawfiles import list_raw_files

    started, cpu = time.perf_counter(), time.process_time()
    files = split_files(list_raw_files(raw, "telemetry", DAY), shards)[shard]
    ingest_shard(
        RAW, files, raw_root=raw, params=_params(), bronze_exclude=("line",), workdir=Path(out)
    )
    return time.perf_counter() - started, time.process_time() - cpu


def _merge(raw: str, shards: list[str], out: str) -> tuple[float, float]:
    from distill_assets.contracts.telemetry import RAW
    from distill_assets.defs.shards import ShardFiles, merge_shards
    from distill_assets.lib.rawfiles import list_raw_files

    started, cpu = time.perf_counter(), time.process_time()
    parts = [ShardFiles(f"{s}/bronze.parquet", f"{s}/quarantine.parquet") for s in shards]
    merge_shards(RAW, parts, list_raw_files(raw, "telemetry", DAY), workdir=Path(out))
    return time.perf_counter() - started, time.process_time() - cpu


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
    cpu: dict[str, list[float]] = {"whole": [], "one": [], "shards": [], "merge": []}
    with (
        tempfile.TemporaryDirectory(prefix="distill-bench-shards-") as scratch,
        ProcessPoolExecutor(2, mp_context=get_context("spawn"), initializer=_warm) as pool,
    ):
        list(pool.map(time.sleep, [0.5, 0.5]))  # both workers started and warmed up
        for repeat in range(REPEATS):
            work = Path(scratch) / str(repeat)
            folders = [work / name for name in ("whole", "0", "1", "merged", "one")]
            for folder in folders:
                folder.mkdir(parents=True)
            wall, used = pool.submit(_whole, str(raw), str(folders[0])).result()
            whole.append(wall)
            cpu["whole"].append(used)
            cpu["one"].append(pool.submit(_shard, str(raw), 0, str(folders[4]), 1).result()[1])
            started = time.perf_counter()
            shards = [pool.submit(_shard, str(raw), k, str(folders[1 + k])) for k in range(2)]
            cpu["shards"].append(sum(future.result()[1] for future in shards))
            parallel.append(time.perf_counter() - started)
            wall, used = pool.submit(
                _merge, str(raw), [str(folders[1]), str(folders[2])], str(folders[3])
            ).result()
            merge.append(wall)
            cpu["merge"].append(used)
            sharded.append(time.perf_counter() - started)
            if not _same(folders[0], folders[3]):
                raise RuntimeError("the merged shards differ from the unsharded ingest")
    base = min(cpu["whole"])
    return "\n".join(
        [
            "## Shards (`bench/shards.py`)",
            "",
            f"One telemetry day, scale {scale}: {raw_mb:.1f} MB in {PIECES * 2} files; "
            f"{REPEATS} interleaved repeats, fastest wall and CPU s (+ spread of the wall); "
            "merged files byte-identical to the unsharded step: yes.",
            "",
            "| what | wall s | CPU s | ratio |",
            "| --- | ---: | ---: | ---: |",
            f"| 1 step (`ingest_partition`) | {_spread(whole)} | {base:.2f} | 1.00 |",
            f"| 1 shard of all files (`ingest_shard`) | | {min(cpu['one']):.2f} | "
            f"CPU × {min(cpu['one']) / base:.2f} |",
            f"| 2 shards in parallel | {_spread(parallel)} | {min(cpu['shards']):.2f} "
            f"(both) | CPU × {min(cpu['shards']) / base:.2f} |",
            f"| merge | {_spread(merge)} | {min(cpu['merge']):.2f} | "
            f"CPU × {min(cpu['merge']) / base:.2f} |",
            f"| 2 shards + merge | {_spread(sharded)} | | speedup "
            f"{min(whole) / min(sharded):.2f} |",
        ]
    )


if __name__ == "__main__":
    print(run())
