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

`python -m bench.shards --products dpo,correction` measures a config's day of curation products
instead (`run_products`, on the last day of the lake of `DISTILL_DATA_DIR`): the unsharded step
against the sharded day's steps with 2 shards (the 2 pieces of each checked rule's candidates,
the found step collecting them, each shard, the merge) and the found step alone (no pieces).

`python -m bench.shards --silver MB` measures a telemetry day's silver (`accepted_events`)
instead (`run_silver`, on `bench.telemetry_pipeline`'s generated day of MB megabytes): the
unsharded step against the sharded day's steps with 2 shards (2 token pieces, the keys, each
shard, the merge), with `SILVER_RANGE_ROWS` rows per sort range so the day has several.

`python -m bench.shards --triage MB` measures that day's `telemetry/triage` instead
(`run_triage`, on its silver): the unsharded step against the sharded day's steps with 2 shards
(2 candidate pieces, the context, each shard, the merge).

`python -m bench.shards --episodes MB` measures that day's `telemetry/episodes` (+ `episode_pairs`)
instead (`run_episodes`, on its silver, triage and competence, in buckets of `EPISODE_BUCKET`
episodes so the day has several): the unsharded step against the sharded day's steps with 2 shards
(each shard's range of buckets, the merge) and against what every shard costs whatever its range
(`fixed`: the inputs and the lift of the whole day's steps and ends); every step reads its inputs
(the trust walk, the pair exclusions) as the asset does, and the whole step and the merge make the
pairs (not their novelty, the same in both).

`python -m bench.shards --validation MB` measures that day's `telemetry/validation` instead
(`run_validation`, on its bronze, every 50th event's client clock skewed so the day fails
checks): the unsharded step (`validate_events`) against the sharded day's steps by player with
2 shards (each shard, the merge), and the first shard of 4 and of 8 alone (what a shard costs as
N grows: its players' share of the checks plus the day's read).
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


def _product_context(config: str):
    from distill_assets.defs.curation.decontaminate import load_eval_ngrams
    from distill_assets.defs.curation.products import ProductContext
    from distill_assets.lib.embed import load_embedder
    from distill_assets.lib.settings import Settings

    settings = Settings.resolve()
    embedder = load_embedder(settings.embedder, settings.embedder_model)
    return ProductContext(config, embedder, load_eval_ngrams(settings.eval_sets))


def _timed(work) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - started, time.process_time() - cpu


def _product_step(lake: str, config: str, day: str, step: str) -> tuple[float, float]:
    """Run one product step of a day in this (warm) worker; return its wall and CPU s.

    `whole`: the unsharded step (`refresh_day`; its file is then moved aside to `whole.parquet`,
    so the shards do not find the day fresh); `found <r> <k>` (piece k of the r-th checked
    rule's candidates), `found`, `shard <k>`, `merge`: the sharded steps' functions
    (`product_shards`), with 2 shards; `found alone`: the found step without pieces (what it
    was before the pieces: the day's candidates collected in one step).
    """
    from upath import UPath

    from distill_assets.defs.curation import product_shards
    from distill_assets.defs.curation.products import products_table, refresh_day
    from distill_assets.lib.lake import partition_path

    context = _product_context(config)
    if step == "whole":
        path = partition_path(lake, "curation", products_table(config), day)
        timing = _timed(lambda: refresh_day(lake, context, day))
        path.rename(UPath(lake) / "whole.parquet")
        return timing
    if step == "found alone":
        return _timed(lambda: product_shards.stage_found(lake, context, day))
    if step == "found":
        return _timed(lambda: product_shards.stage_found(lake, context, day, 2))
    if step.startswith("found "):
        rule, piece = (int(part) for part in step.split()[1:])
        return _timed(
            lambda: product_shards.stage_found_piece(
                lake, context, day, rule=rule, piece=piece, pieces=2
            )
        )
    if step == "merge":
        return _timed(lambda: product_shards.merge_or_compute(lake, context, day, 2))
    shard = int(step.split()[1])
    return _timed(
        lambda: product_shards.write_product_shard(lake, context, day, shard=shard, shards=2)
    )


def _scratch_lake(config: str, root: Path) -> tuple[str, str, int]:
    """Link the lake's feed partitions of `config` (one day) into a scratch lake `root`.

    Return the scratch lake, the day and the day's feed bytes (on disk).
    """
    from distill_assets.defs.curation.products import day_feed_files
    from distill_assets.lib.settings import Settings

    days = day_feed_files(Settings.resolve().lake_root, config)
    day = max(days)
    size = 0
    for source, table, path in days[day]:
        target = root / source / table / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(path.path)
        size += path.stat().st_size
    return str(root), day, size


PRODUCT_STEPS = (
    "whole",
    "found alone",
    "found 0 0",
    "found 0 1",
    "found 1 0",
    "found 1 1",
    "found",
    "shard 0",
    "shard 1",
    "merge",
)


def run_products(configs: list[str]) -> str:
    """Measure the product steps of the lake's last day (`DISTILL_DATA_DIR`), unsharded vs 2 shards.

    One warm worker process runs the steps one after another (CPU s per step, not contention):
    for each config and repeat, the unsharded step, the found step alone (no pieces), then the
    2 pieces of each checked rule's candidates, the found step collecting them, both shards
    and the merge; `REPEATS` interleaved repeats, fastest CPU. The merged file must be
    byte-identical to the unsharded step's (checked every repeat).
    """
    from distill_assets.defs.release.layout import file_sha256

    lines = [
        "## Product shards (`bench/shards.py --products`)",
        "",
        f"The lake's last day, per config; {REPEATS} interleaved repeats in one warm worker, "
        "fastest CPU s (+ spread); the wall of the fastest; merged file byte-identical to the "
        "unsharded step's: yes.",
        "",
        "| config | step | wall s | CPU s (+ spread) | × step CPU |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    with (
        tempfile.TemporaryDirectory(prefix="distill-bench-products-") as scratch,
        ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_warm) as pool,
    ):
        lakes = {c: _scratch_lake(c, Path(scratch) / c) for c in configs}
        cpu: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(REPEATS):
            for config in configs:
                lake, day, _ = lakes[config]
                for step in PRODUCT_STEPS:
                    timing = pool.submit(_product_step, lake, config, day, step).result()
                    cpu.setdefault((config, step), []).append(timing)
                merged = Path(lake) / "curation" / f"{config}_products" / f"{day}.parquet"
                whole = Path(lake) / "whole.parquet"
                if file_sha256(merged) != file_sha256(whole):
                    raise RuntimeError(f"{config}: the merged shards differ from the whole day")
                merged.unlink()
                whole.unlink()
        for config in configs:
            _, day, size = lakes[config]
            base = min(c for _, c in cpu[(config, "whole")])
            for step in PRODUCT_STEPS:
                runs = cpu[(config, step)]
                wall, best = min(runs, key=lambda run: run[1])
                spread = max(c for _, c in runs) - best
                lines.append(
                    f"| {config} ({size / 1e6:.0f} MB of feeds, {day}) | {step} | {wall:.1f} | "
                    f"{best:.1f} (+{spread:.1f}) | {best / base:.2f} |"
                )
    return "\n".join(lines)


SILVER_STEPS = ("whole", "tokens 0", "tokens 1", "keys", "shard 0", "shard 1", "merge")
# rows per sort range of the measured silver day (`privacy.SORT_CHUNK_ROWS` is 2,000,000: a
# 0.4 GB day of ~630,000 rows then has 5 ranges, as a 100 GB day has ~90)
SILVER_RANGE_ROWS = 150_000


def _silver_warm() -> None:
    from distill_assets.defs.telemetry import privacy, silver_shards  # noqa: F401

    privacy.SORT_CHUNK_ROWS = SILVER_RANGE_ROWS


def _silver_day(lake: str):
    """Return the silver inputs of DAY in the scratch `lake` (bronze, validation written)."""
    from distill_assets.defs.player_ids import PlayerIdHasher
    from distill_assets.defs.telemetry import assets, silver_shards
    from distill_assets.lib.lake import partition_path

    events = partition_path(lake, "telemetry", "events", DAY)
    return silver_shards.SilverDay(
        events_file=Path(events.path),
        validation=assets.scan_partition(lake, "telemetry", "validation", DAY),
        deleted=assets.deleted_up_to(lake, DAY),
        identity=assets.silver_identity(lake, DAY, PlayerIdHasher(key="bench")),
        staging=silver_shards.silver_shard_dir(lake, DAY),
        fingerprint=silver_shards.silver_fingerprint(lake, DAY),
        tokens_fingerprint=silver_shards.silver_fingerprint(lake, DAY, validation=False),
    )


def _silver_step(lake: str, step: str) -> tuple[float, float]:
    """Run one silver step of DAY in this (warm) worker; return its wall and CPU s.

    `whole`: the unsharded step (`privacy.write_accepted_events`, into `whole.parquet`); the
    others: the sharded steps' functions (`silver_shards`), with 2 shards, the merge into
    `merged.parquet`.
    """
    from distill_assets.defs.telemetry import privacy, silver_shards

    day = _silver_day(lake)
    if step == "whole":
        target = Path(lake) / "whole.parquet"
        return _timed(
            lambda: privacy.write_accepted_events(
                day.events_file, day.validation, day.deleted, target, day.identity
            )
        )
    if step == "keys":
        return _timed(lambda: silver_shards.stage_keys(day))
    if step == "merge":
        target = Path(lake) / "merged.parquet"
        return _timed(lambda: silver_shards.merge_or_compute(day, target, 2))
    kind, number = step.split()
    if kind == "tokens":
        return _timed(
            lambda: silver_shards.stage_tokens(
                day.events_file,
                day.identity,
                day.staging,
                day.tokens_fingerprint,
                piece=int(number),
                pieces=2,
            )
        )
    return _timed(lambda: silver_shards.write_shard(day, shard=int(number), shards=2))


def _silver_lake(size_mb: int, root: Path) -> int:
    """Ingest the generated telemetry day of `size_mb` into the scratch lake `root`.

    Bronze (`ingest_partition`) and validation (`validate_events`); return the bronze rows.
    """
    import polars as pl

    from bench.telemetry_pipeline import DAY as GENERATED_DAY
    from bench.telemetry_pipeline import dataset
    from distill_assets.contracts.telemetry import RAW
    from distill_assets.defs.ingest import ingest_partition
    from distill_assets.defs.player_ids import PlayerIdHasher
    from distill_assets.defs.telemetry.assets import parse_params
    from distill_assets.defs.telemetry.validation import validate_events
    from distill_assets.lib.lake import move_into_place, partition_path
    from distill_assets.lib.rawfiles import list_raw_files

    raw = str(dataset(size_mb))
    (root / "ingest").mkdir(parents=True)
    result = ingest_partition(
        RAW,
        list_raw_files(raw, "telemetry", GENERATED_DAY),
        raw_root=raw,
        params=parse_params(PlayerIdHasher(key="bench"))[0],
        bronze_exclude=("line",),
        workdir=root / "ingest",
    )
    events = partition_path(str(root), "telemetry", "events", DAY)
    move_into_place(result.bronze.path, events)
    validation = partition_path(str(root), "telemetry", "validation", DAY)
    validation.parent.mkdir(parents=True)
    validate_events(pl.scan_parquet(events.path)).write_parquet(validation.path)
    return result.bronze_rows


def run_silver(size_mb: int) -> str:
    """Measure a telemetry day's silver steps, unsharded vs 2 shards (see the module docstring).

    One warm worker process runs the steps one after another (CPU s per step, not contention),
    `REPEATS` interleaved repeats, fastest CPU. The merged file must be byte-identical to the
    unsharded step's (checked every repeat).
    """
    from distill_assets.defs.release.layout import file_sha256

    lines = [
        "## Silver shards (`bench/shards.py --silver`)",
        "",
        f"{REPEATS} interleaved repeats in one warm worker, fastest CPU s (+ spread); the wall "
        "of the fastest; merged file byte-identical to the unsharded step's: yes.",
        "",
        "| day | step | wall s | CPU s (+ spread) | × step CPU |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    with (
        tempfile.TemporaryDirectory(prefix="distill-bench-silver-") as scratch,
        ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_silver_warm) as pool,
    ):
        lake = Path(scratch)
        rows = _silver_lake(size_mb, lake)
        cpu: dict[str, list[tuple[float, float]]] = {}
        for _ in range(REPEATS):
            for step in SILVER_STEPS:
                cpu.setdefault(step, []).append(pool.submit(_silver_step, str(lake), step).result())
            if file_sha256(lake / "merged.parquet") != file_sha256(lake / "whole.parquet"):
                raise RuntimeError("silver: the merged shards differ from the whole day")
        base = min(c for _, c in cpu["whole"])
        for step in SILVER_STEPS:
            wall, best = min(cpu[step], key=lambda run: run[1])
            spread = max(c for _, c in cpu[step]) - best
            lines.append(
                f"| {size_mb} MB raw, {rows:,} bronze rows, ranges of {SILVER_RANGE_ROWS:,} | "
                f"{step} | {wall:.1f} | {best:.1f} (+{spread:.1f}) | {best / base:.2f} |"
            )
    return "\n".join(lines)


TRIAGE_STEPS = ("whole", "candidates 0", "candidates 1", "context", "shard 0", "shard 1", "merge")


def _triage_warm() -> None:
    from distill_assets.defs.telemetry import triage, triage_shards  # noqa: F401


def _triage_silver(lake: str) -> Path:
    """Return DAY's silver file in the scratch `lake`."""
    from distill_assets.lib.lake import partition_path

    return Path(partition_path(lake, "telemetry", "accepted_events", DAY).path)


def _triage_day(lake: str):
    """Return DAY's triage staging in the scratch `lake` (silver written)."""
    from upath import UPath

    from distill_assets.defs.telemetry import triage_shards

    return triage_shards.TriageDay(
        staging=triage_shards.triage_shard_dir(lake, DAY),
        fingerprint=triage_shards.triage_fingerprint(UPath(_triage_silver(lake))),
    )


def _triage_step(lake: str, step: str) -> tuple[float, float]:
    """Run one triage step of DAY in this (warm) worker; return its wall and CPU s.

    `whole`: the unsharded step (`triage.write_triage`, into `whole.parquet`); the others: the
    sharded steps' functions (`triage_shards`), with 2 shards, the merge into `merged.parquet`.
    """
    import polars as pl

    from distill_assets.defs.telemetry import triage, triage_shards

    day, silver = _triage_day(lake), _triage_silver(lake)
    if step == "whole":
        return _timed(
            lambda: triage.write_triage(pl.scan_parquet(silver), Path(lake) / "whole.parquet")
        )
    if step == "context":
        return _timed(lambda: triage_shards.stage_context(day, 2))
    if step == "merge":
        target = Path(lake) / "merged.parquet"
        return _timed(
            lambda: triage_shards.merge_or_compute(day, pl.scan_parquet(silver), target, 2)
        )
    kind, number = step.split()
    if kind == "candidates":
        return _timed(
            lambda: triage_shards.stage_candidates(day, silver, piece=int(number), pieces=2)
        )
    return _timed(lambda: triage_shards.write_shard(day, shard=int(number), shards=2))


def run_triage(size_mb: int) -> str:
    """Measure a telemetry day's triage steps, unsharded vs 2 shards (see the module docstring).

    The day's silver is written once (`privacy.write_accepted_events`); then as `run_silver`:
    one warm worker, `REPEATS` interleaved repeats, fastest CPU, the merged file checked
    byte-identical to the unsharded step's every repeat.
    """
    import polars as pl

    from distill_assets.defs.release.layout import file_sha256
    from distill_assets.defs.telemetry import privacy

    lines = [
        "## Triage shards (`bench/shards.py --triage`)",
        "",
        f"{REPEATS} interleaved repeats in one warm worker, fastest CPU s (+ spread); the wall "
        "of the fastest; merged file byte-identical to the unsharded step's: yes.",
        "",
        "| day | step | wall s | CPU s (+ spread) | × step CPU |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    with (
        tempfile.TemporaryDirectory(prefix="distill-bench-triage-") as scratch,
        ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_triage_warm) as pool,
    ):
        lake = Path(scratch)
        _silver_lake(size_mb, lake)
        silver = _silver_day(str(lake))
        target = _triage_silver(str(lake))
        target.parent.mkdir(parents=True)
        privacy.write_accepted_events(
            silver.events_file, silver.validation, silver.deleted, target, silver.identity
        )
        rows = pl.scan_parquet(target).select(pl.len()).collect().item()
        cpu: dict[str, list[tuple[float, float]]] = {}
        for _ in range(REPEATS):
            for step in TRIAGE_STEPS:
                cpu.setdefault(step, []).append(pool.submit(_triage_step, str(lake), step).result())
            if file_sha256(lake / "merged.parquet") != file_sha256(lake / "whole.parquet"):
                raise RuntimeError("triage: the merged shards differ from the whole day")
        base = min(c for _, c in cpu["whole"])
        for step in TRIAGE_STEPS:
            wall, best = min(cpu[step], key=lambda run: run[1])
            spread = max(c for _, c in cpu[step]) - best
            lines.append(
                f"| {size_mb} MB raw, {rows:,} silver rows | {step} | {wall:.1f} | "
                f"{best:.1f} (+{spread:.1f}) | {best / base:.2f} |"
            )
    return "\n".join(lines)


EPISODE_STEPS = ("whole", "fixed", "shard 0", "shard 1", "merge")
# episodes per bucket in `run_episodes`: several buckets on a bench-sized day
EPISODE_BUCKET = 2_000


def _episodes_warm() -> None:
    from distill_assets.defs.telemetry import episode_assets, episode_shards  # noqa: F401


def _episode_inputs(lake: str):
    """Return DAY's `episode_day.DayInputs` in the scratch `lake`, as the episodes asset does."""
    import polars as pl

    from distill_assets.defs.telemetry import witness
    from distill_assets.defs.telemetry.assets import trust_history
    from distill_assets.defs.telemetry.episode_day import DayInputs
    from distill_assets.defs.telemetry.training_assets import dpo_excluded
    from distill_assets.defs.telemetry.triage import TRIAGE_SCHEMA
    from distill_assets.lib.lake import scan_partition

    return DayInputs(
        events=scan_partition(lake, "telemetry", "accepted_events", DAY),
        triage=scan_partition(lake, "telemetry", "triage", DAY).cast(dict(TRIAGE_SCHEMA)),
        classes=scan_partition(lake, "telemetry", "competence", DAY),
        walk=trust_history(lake, DAY),
        excluded=dpo_excluded(lake, DAY),
        decisions=pl.DataFrame(schema=witness.DECISION_SCHEMA),
        lake_root=lake,
        partition=DAY,
        table="episodes",
    )


def _episode_step(lake: str, step: str) -> tuple[float, float]:
    """Run one episodes step of DAY in this (warm) worker; return its wall and CPU s.

    `whole`: the unsharded step (`build_episode_day` into `whole.parquet`, then the pairs);
    `fixed`: what every shard reads whatever its range (the inputs, the lift of the day's steps
    and ends: `built_buckets` over no bucket); the others: the sharded steps' functions
    (`episode_shards`), with 2 shards, the merge into `merged.parquet` (then the pairs). The
    pairs' rows go to `<whole|merged>-pairs.parquet`.
    """
    from distill_assets.defs.telemetry import episode_shards
    from distill_assets.defs.telemetry.competence import pairs_of_candidates
    from distill_assets.defs.telemetry.episode_day import (
        EpisodeDay,
        bucket_bounds,
        build_episode_day,
        built_buckets,
    )
    from distill_assets.defs.telemetry.trust import trust_weighted_pairs
    from distill_assets.lib.embed import load_embedder

    embedder = load_embedder()
    staging = episode_shards.EpisodeStaging(
        episode_shards.episode_shard_dir(lake, DAY), "bench", EPISODE_BUCKET
    )

    def work() -> None:
        inputs = _episode_inputs(lake)
        if step == "fixed":
            bounds = bucket_bounds(inputs.classes, EPISODE_BUCKET)
            with tempfile.TemporaryDirectory(prefix="distill-bench-lift-") as folder:
                lifted = built_buckets(
                    inputs,
                    embedder,
                    bounds=bounds,
                    buckets=range(0),
                    folder=Path(folder),
                    day=EpisodeDay(),
                )
                if list(lifted):
                    raise RuntimeError("episodes: a range of no bucket built rows")
            return
        if step.startswith("shard"):
            shard = int(step.split()[1])
            episode_shards.write_shard(staging, inputs, embedder, shard=shard, shards=2)
            return
        name = "whole" if step == "whole" else "merged"
        out = Path(lake) / f"{name}.parquet"
        if step == "whole":
            day = build_episode_day(inputs, embedder, out, EPISODE_BUCKET)
        else:
            merged = episode_shards.merge_or_compute(staging, inputs, embedder, out, 2)
            if merged.merged != 2:
                raise RuntimeError(f"episodes: the shards were not merged ({merged.not_merged})")
            day = merged.day
        pairs, _ = trust_weighted_pairs(pairs_of_candidates(day.candidates()), inputs.walk)
        pairs.write_parquet(Path(lake) / f"{name}-pairs.parquet")

    return _timed(work)


def run_episodes(size_mb: int) -> str:
    """Measure a telemetry day's episodes steps, unsharded vs 2 shards (see the module docstring).

    The day's silver, triage and competence are written once; then as `run_silver`: one warm
    worker, `REPEATS` interleaved repeats, fastest CPU, the merged rows and pairs checked
    byte-identical to the unsharded step's every repeat.
    """
    import polars as pl

    from distill_assets.defs.release.layout import file_sha256
    from distill_assets.defs.telemetry import privacy, triage
    from distill_assets.defs.telemetry.competence import write_competence
    from distill_assets.lib.embed import load_embedder
    from distill_assets.lib.lake import partition_path

    lines = [
        "## Episode shards (`bench/shards.py --episodes`)",
        "",
        f"{REPEATS} interleaved repeats in one warm worker, fastest CPU s (+ spread); the wall "
        "of the fastest; merged rows and pairs byte-identical to the unsharded step's: yes.",
        "",
        "| day | step | wall s | CPU s (+ spread) | × step CPU |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    with (
        tempfile.TemporaryDirectory(prefix="distill-bench-episodes-") as scratch,
        ProcessPoolExecutor(1, mp_context=get_context("spawn"), initializer=_episodes_warm) as pool,
    ):
        lake = Path(scratch)
        _silver_lake(size_mb, lake)
        silver = _silver_day(str(lake))
        paths = {
            table: Path(partition_path(str(lake), "telemetry", table, DAY).path)
            for table in ("accepted_events", "triage", "competence")
        }
        for path in paths.values():
            path.parent.mkdir(parents=True)
        privacy.write_accepted_events(
            silver.events_file,
            silver.validation,
            silver.deleted,
            paths["accepted_events"],
            silver.identity,
        )
        events = pl.scan_parquet(paths["accepted_events"])
        triage.write_triage(events, paths["triage"])
        episodes = write_competence(events, load_embedder(), paths["competence"])
        cpu: dict[str, list[tuple[float, float]]] = {}
        for _ in range(REPEATS):
            for step in EPISODE_STEPS:
                cpu.setdefault(step, []).append(
                    pool.submit(_episode_step, str(lake), step).result()
                )
            for name in ("", "-pairs"):
                merged, whole = lake / f"merged{name}.parquet", lake / f"whole{name}.parquet"
                if file_sha256(merged) != file_sha256(whole):
                    raise RuntimeError("episodes: the merged shards differ from the whole day")
        base = min(c for _, c in cpu["whole"])
        buckets = -(-episodes // EPISODE_BUCKET)
        for step in EPISODE_STEPS:
            wall, best = min(cpu[step], key=lambda run: run[1])
            spread = max(c for _, c in cpu[step]) - best
            lines.append(
                f"| {size_mb} MB raw, {episodes:,} episodes, {buckets} buckets | {step} | "
                f"{wall:.1f} | {best:.1f} (+{spread:.1f}) | {best / base:.2f} |"
            )
    return "\n".join(lines)


VALIDATION_BUCKETS = (2, 4, 8)


# the shards of one of N (the first) measured beside the 2 shards of the merged day
VALIDATION_FIRST_OF = (4, 8)
VALIDATION_STEPS = (
    "whole",
    *(f"shard 0 of {n}" for n in VALIDATION_FIRST_OF),
    "shard 0",
    "shard 1",
    "merge",
)


def _validation_warm() -> None:
    from distill_assets.defs.telemetry import validation, validation_shards  # noqa: F401


def _validation_step(lake: str, step: str) -> tuple[float, float]:
    """Run one validation step of DAY in this (warm) worker; return its wall and CPU s.

    `whole`: the unsharded step (`validate_events`, its rows written to `whole.parquet` as the
    lake's IO manager writes them, untimed); `shard 0 of N`: the first shard of N alone (its
    staged files removed after); `shard k`, `merge`: the sharded steps' functions
    (`validation_shards`) with 2 shards, the merge's rows written to `merged.parquet`.
    """
    from upath import UPath

    from distill_assets.defs.telemetry import validation_shards
    from distill_assets.defs.telemetry.assets import deleted_up_to
    from distill_assets.defs.telemetry.validation import validate_events
    from distill_assets.lib.lake import scan_partition, write_parquet_atomic

    day = validation_shards.ValidationDay(
        bronze=scan_partition(lake, "telemetry", "events", DAY),
        deleted=deleted_up_to(lake, DAY),
        staging=validation_shards.validation_shard_dir(lake, DAY),
        fingerprint=validation_shards.validation_fingerprint(lake, DAY),
    )
    found: list[object] = []
    if step == "whole":
        timing = _timed(lambda: found.append(validate_events(day.events())))
        write_parquet_atomic(found[0], UPath(lake) / "whole.parquet")
        return timing
    if step == "merge":
        timing = _timed(lambda: found.append(validation_shards.merge_or_compute(day, 2)))
        if found[0].merged != 2:
            raise RuntimeError(f"validation: the shards were not merged: {found[0].not_merged}")
        write_parquet_atomic(found[0].rows, UPath(lake) / "merged.parquet")
        return timing
    shard, _, of = step.removeprefix("shard ").partition(" of ")
    shards = int(of or 2)
    timing = _timed(lambda: validation_shards.write_shard(day, shard=int(shard), shards=shards))
    if shards != 2:
        day.staging.fs.rm(day.staging.path, recursive=True)
    return timing


# every this many-th bronze event of the measured day gets a client clock behind the server's
# beyond the skew limit (`_plant_clock_skew`), so that the day fails checks
VALIDATION_SKEWED_EVERY = 50


def _plant_clock_skew(lake: Path) -> int:
    """Put every `VALIDATION_SKEWED_EVERY`-th event's client clock 400 s behind; the rows failed.

    The generated day fails no check; a skewed clock fails `clock_skew` and, where it breaks
    its conversation's or episode's sequence, the turn or step order, so the byte check has
    rows to compare. Returns the validation rows of the planted day.
    """
    import polars as pl

    from distill_assets.defs.telemetry.validation import validate_events
    from distill_assets.lib.lake import partition_path

    events = Path(partition_path(str(lake), "telemetry", "events", DAY).path)
    skewed = pl.int_range(pl.len()) % VALIDATION_SKEWED_EVERY == 0
    planted = pl.read_parquet(events).with_columns(
        pl.when(skewed)
        .then(pl.col("server_ts") - 400.0)
        .otherwise(pl.col("client_ts"))
        .alias("client_ts")
    )
    planted.write_parquet(events)
    return validate_events(planted.lazy()).height


def run_validation(size_mb: int) -> str:
    """Measure a telemetry day's validation steps, unsharded vs by player (module docstring).

    The day's bronze is ingested once (`_silver_lake`) and given skewed clocks
    (`_plant_clock_skew`); then as `run_silver`: one warm worker, `REPEATS` interleaved repeats,
    fastest CPU, the merged file checked byte-identical to the unsharded step's every repeat.
    """
    from distill_assets.defs.release.layout import file_sha256

    lines = [
        "## Validation shards (`bench/shards.py --validation`)",
        "",
        f"{REPEATS} interleaved repeats in one warm worker, fastest CPU s (+ spread); the wall "
        "of the fastest; merged file byte-identical to the unsharded step's: yes.",
        "",
        "| day | step | wall s | CPU s (+ spread) | × step CPU |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    with (
        tempfile.TemporaryDirectory(prefix="distill-bench-validation-") as scratch,
        ProcessPoolExecutor(
            1, mp_context=get_context("spawn"), initializer=_validation_warm
        ) as pool,
    ):
        lake = Path(scratch)
        rows = _silver_lake(size_mb, lake)
        failed = _plant_clock_skew(lake)
        cpu: dict[str, list[tuple[float, float]]] = {}
        for _ in range(REPEATS):
            for step in VALIDATION_STEPS:
                cpu.setdefault(step, []).append(
                    pool.submit(_validation_step, str(lake), step).result()
                )
            if file_sha256(lake / "merged.parquet") != file_sha256(lake / "whole.parquet"):
                raise RuntimeError("validation: the merged shards differ from the whole day")
        base = min(c for _, c in cpu["whole"])
        for step in VALIDATION_STEPS:
            wall, best = min(cpu[step], key=lambda run: run[1])
            spread = max(c for _, c in cpu[step]) - best
            lines.append(
                f"| {size_mb} MB raw, {rows:,} bronze rows, {failed:,} failed checks | {step} | "
                f"{wall:.1f} | {best:.1f} (+{spread:.1f}) | {best / base:.2f} |"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.shards", description=__doc__)
    parser.add_argument(
        "--products",
        default=None,
        metavar="CONFIGS",
        help="measure the curation product steps of these configs (comma-separated) of the "
        "lake's last day (DISTILL_DATA_DIR) instead: unsharded vs 2 found pieces per checked "
        "rule + found + 2 shards + merge",
    )
    parser.add_argument(
        "--silver",
        type=int,
        default=None,
        metavar="MB",
        help="measure a generated telemetry day of MB megabytes' silver steps instead: "
        "unsharded vs 2 token pieces + keys + 2 shards + merge",
    )
    parser.add_argument(
        "--triage",
        type=int,
        default=None,
        metavar="MB",
        help="measure a generated telemetry day of MB megabytes' triage steps instead: "
        "unsharded vs 2 candidate pieces + context + 2 shards + merge",
    )
    parser.add_argument(
        "--episodes",
        type=int,
        default=None,
        metavar="MB",
        help="measure a generated telemetry day of MB megabytes' episodes steps instead: "
        "unsharded vs 2 shards of its episode buckets + merge",
    )
    parser.add_argument(
        "--validation",
        type=int,
        default=None,
        metavar="MB",
        help="measure a generated telemetry day of MB megabytes' validation steps instead: "
        "unsharded vs 2 shards by player + merge, and the first shard of 4 and of 8",
    )
    args = parser.parse_args()
    if args.validation:
        print(run_validation(args.validation))
    elif args.episodes:
        print(run_episodes(args.episodes))
    elif args.triage:
        print(run_triage(args.triage))
    elif args.silver:
        print(run_silver(args.silver))
    else:
        print(run_products(args.products.split(",")) if args.products else run())
