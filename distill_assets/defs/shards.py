"""One day's raw → bronze ingest split across workers: shards by file, merged byte-identically.

With `DISTILL_INGEST_SHARDS=N` (default 1: no shard step, the bronze asset ingests the day
itself), every source's bronze asset gains N shard assets of the same daily partitions
(`<source>/ingest_shard_<k>`, one step each, so an executor runs them in parallel) and its own
step becomes the merge. The day's raw files (`list_raw_files` order) are cut into N contiguous
ranges of about equal bytes (`split_files`): a shard is a stable range of the sorted file names,
so shard k's lines come before shard k+1's in the day's order. Each shard step runs
`ingest_partition` on its files with the contract's de-duplication turned off and its parse
wrapped (`shard_statement`) to keep, in the shard's bronze, what de-duplication needs: the key
(`shard_dedup_key`) and the line a repeat is quarantined with (`shard_line`: the raw line, or
for a contract that rewrites it, e.g. telemetry's redacted player id, the rewritten line, so no
raw player id is written). Its quarantine file carries what it read (files, records, reader
problems) in the Parquet footer. Shard files are staged under `<lake>/_shards/<source>/<day>/`
and removed by the merge.

The merge (`merge_shards`) reads the shards in order, runs the source's `Deduplicator` over their
accepted records exactly as the unsharded sink runs it over the day's chunks (the first accepted
record of a key in the day's file order is kept; a later one is quarantined with the same reason,
detail and line), and writes the day's bronze and quarantine through the same `RowGroupWriter`:
the parse rejects and repeats in (`source_file`, `line_no`) order, then the reader's problems, as
the unsharded ingest writes them. The day tables are byte-identical to the unsharded ingest's
(tests/unit/defs/test_shards.py), so the reconcile check and every downstream asset are
unchanged. The merge rewrites bronze once: its cost is in docs/scaling-out.md.

The same knob splits a config's day of curation products by slice range
(`defs/curation/product_shards.py`, with `split_sizes` and `shard_dir` from here), a day's
silver telemetry by `event_seq` range (`defs/telemetry/silver_shards.py`), a day's telemetry
triage by range of silver's row groups (`defs/telemetry/triage_shards.py`), a day's telemetry
validation by player (`defs/telemetry/validation_shards.py`) and a day's telemetry episodes by
range of episode buckets (`defs/telemetry/episode_shards.py`).
"""

import json
import re
from bisect import bisect_left
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from upath import UPath

from distill_assets.defs.ingest import IngestResult, ingest_partition, quarantine_writer
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import StagedParquet
from distill_assets.lib.cleanup import remove_if_empty, working_dir
from distill_assets.lib.lake import (
    PARQUET_COMPRESSION,
    ROW_GROUP_SIZE,
    RowGroupWriter,
    local_file,
    move_into_place,
    parquet_key_values,
)
from distill_assets.lib.rawcontract import RawContract
from distill_assets.lib.rawfiles import PROBLEM_SCHEMA, ReadStats
from distill_assets.lib.seen import KEY, Deduplicator
from distill_assets.lib.settings import Settings
from distill_assets.lib.sql import load_sql
from distill_assets.lib.startup import resolve_settings

SHARD_PREFIX = "shard_"
SHARD_KEY = "shard_dedup_key"
SHARD_LINE = "shard_line"
# the Parquet footer key of a shard's quarantine file: what the shard read (`ShardStats`)
STATS_KEY = b"distill.shard"
# the lake folder staging shards until their day is merged
SHARDS_FOLDER = "_shards"


def shard_count() -> int:
    """Return `DISTILL_INGEST_SHARDS` as resolved when the definitions load (1: no shard step)."""
    return resolve_settings().shards


def split_sizes(sizes: list[int], shards: int) -> list[range]:
    """Cut consecutive items of `sizes` into `shards` contiguous index ranges of about equal size.

    An item goes to the range its middle falls in, so the ranges follow the items' order and
    depend only on the sizes (stable); a range may be empty. All sizes 0: one each.
    """
    if not sum(sizes):
        sizes = [1] * len(sizes)
    total = sum(sizes)
    owners, before = [], 0
    for size in sizes:
        owners.append(min((2 * before + size) * shards // (2 * total), shards - 1))
        before += size
    # the owners never decrease: range k runs from the first item of k to the first of k + 1
    return [range(bisect_left(owners, k), bisect_left(owners, k + 1)) for k in range(shards)]


def split_files(paths: list[str], shards: int, sizes: list[int] | None = None) -> list[list[str]]:
    """Cut a day's files (sorted by path) into `shards` contiguous ranges of about equal bytes.

    A file goes to the shard its middle byte falls in (`split_sizes`), so the ranges follow the
    day's file order and depend only on the names and sizes (stable); a shard may be empty.
    `sizes` default to the files' sizes on their filesystem (all empty: one each).
    """
    ordered = sorted(paths)
    sizes = [UPath(p).stat().st_size for p in ordered] if sizes is None else sizes
    return [ordered[r.start : r.stop] for r in split_sizes(sizes, shards)]


def shard_statement(contract: RawContract, statement: str | None = None) -> str:
    """Return the contract's parse, keeping what the merge de-duplicates with in bronze.

    The wrapped parse adds the key (`shard_dedup_key`) and the line a repeat is quarantined with
    (`shard_line`: the input line, or the contract's `line_rewrite` of it, fed the input line and
    the parse's columns as the sink feeds it); rows and their order are the parse's. A contract
    without de-duplication keeps its parse.
    """
    statement = statement or contract.parse()
    if contract.dedup is None:
        return statement
    body = re.sub(r";\s*$", "", statement.rstrip())
    if contract.line_rewrite is None:
        return (
            f"SELECT parsed.*, parsed.{KEY} AS {SHARD_KEY}, raw_lines.line AS {SHARD_LINE}\n"
            f"FROM (\n{body}\n) AS parsed POSITIONAL JOIN raw_lines"
        )
    if contract.dedup.conflict_detail is not None:
        raise ValueError(
            f"{contract.source}: a contract that rewrites lines cannot compare them (conflicts)"
        )
    rewrite = re.sub(r";\s*$", "", load_sql(contract.line_rewrite).rstrip())
    return (
        f"WITH parsed AS MATERIALIZED (\n{body}\n),\n"
        "repeated_lines AS (SELECT parsed.* EXCLUDE (line), raw_lines.line AS line "
        "FROM parsed POSITIONAL JOIN raw_lines)\n"
        f"SELECT parsed.*, parsed.{KEY} AS {SHARD_KEY}, rewritten.line AS {SHARD_LINE}\n"
        f"FROM parsed POSITIONAL JOIN (\n{rewrite}\n) AS rewritten"
    )


@dataclass(frozen=True)
class ShardStats:
    """What a shard step read: its files and the counts `ingest_metadata` reports."""

    files: list[str]
    records: int
    blank_lines: int
    utf8_replaced: int
    problems: int

    def encode(self) -> bytes:
        """Return the footer value of the shard's quarantine file."""
        return json.dumps(self.__dict__, sort_keys=True).encode()

    @staticmethod
    def read(quarantine: str | Path) -> "ShardStats":
        """Read the stats from a shard's quarantine file."""
        metadata = pq.read_schema(quarantine).metadata or {}
        if STATS_KEY not in metadata:
            raise ValueError(f"{quarantine} is not a shard's quarantine file (no shard stats)")
        return ShardStats(**json.loads(metadata[STATS_KEY]))


def ingest_shard(
    contract: RawContract,
    raw_paths: list[str],
    raw_root: str | None = None,
    *,
    params: Mapping[str, object] | None = None,
    bronze_exclude: tuple[str, ...] = (),
    workdir: Path | None = None,
) -> IngestResult:
    """Ingest one shard's files for `merge_shards` (see the module docstring).

    Bronze holds every record the parse accepts (no de-duplication) with the `shard_*` columns;
    the quarantine file's footer holds the `ShardStats`.
    """
    workdir = workdir or working_dir(contract.source)
    result = ingest_partition(
        replace(contract, dedup=None),
        raw_paths,
        raw_root=raw_root,
        parse_sql=shard_statement(contract),
        params=params,
        bronze_exclude=bronze_exclude,
        workdir=workdir,
    )
    stats = ShardStats(
        files=sorted(raw_paths),
        records=result.stats.records,
        blank_lines=result.stats.blank_lines,
        utf8_replaced=result.stats.utf8_replaced,
        problems=len(result.stats.problems),
    )
    quarantine = pq.read_table(result.quarantine.path)
    schema = quarantine.schema.with_metadata({STATS_KEY: stats.encode()})
    pq.write_table(
        quarantine.replace_schema_metadata(schema.metadata),
        result.quarantine.path,
        compression=PARQUET_COMPRESSION,
    )
    return result


@dataclass(frozen=True)
class ShardFiles:
    """A shard's bronze and quarantine files, as its step wrote them."""

    bronze: str
    quarantine: str


def merge_shards(
    contract: RawContract,
    shards: list[ShardFiles],
    raw_paths: list[str],
    workdir: Path | None = None,
) -> IngestResult:
    """Merge a day's shards, in order, into the day's bronze and quarantine files.

    Byte-identical to `ingest_partition` over `raw_paths` (see the module docstring). Raises a
    one-line error when the shards did not read exactly the day's files in shard order (a file
    landed or vanished after a shard ran: run the day's shards again).
    """
    stats = [ShardStats.read(shard.quarantine) for shard in shards]
    read = [name for shard in stats for name in shard.files]
    if read != sorted(raw_paths):
        raise RuntimeError(
            f"{contract.source}: the shards read {len(read)} files, the day has "
            f"{len(raw_paths)} (or others): its raw files changed, run its shards again"
        )
    merger = _Merger(contract, workdir or working_dir(contract.source))
    problems = []
    for shard, shard_stats in zip(shards, stats, strict=True):
        quarantine = pq.read_table(shard.quarantine).replace_schema_metadata(None)
        lines = quarantine.num_rows - shard_stats.problems
        problems.append(quarantine.slice(lines))
        merger.shard(shard.bronze, quarantine.slice(0, lines))
    for table in problems:
        merger.write_quarantine(table)
    bronze_rows = merger.close()
    read_stats = ReadStats(
        files=len(raw_paths),
        records=sum(s.records for s in stats),
        blank_lines=sum(s.blank_lines for s in stats),
        utf8_replaced=sum(s.utf8_replaced for s in stats),
    )
    return IngestResult(
        bronze=StagedParquet(merger.bronze_path),
        quarantine=StagedParquet(merger.quarantine_path),
        stats=read_stats,
        bronze_rows=bronze_rows,
        quarantine_by_reason=merger.quarantine_by_reason,
    )


class _Merger:
    """Write the shards' accepted rows (less repeats) and quarantine rows as one day."""

    def __init__(self, contract: RawContract, workdir: Path) -> None:
        self.contract = contract
        self.bronze_path = workdir / "bronze.parquet"
        self.quarantine_path = workdir / "quarantine.parquet"
        self.dedup = Deduplicator(contract.dedup) if contract.dedup is not None else None
        self.bronze: RowGroupWriter | None = None
        self.quarantine = quarantine_writer(self.quarantine_path, contract)
        self.quarantine_by_reason: dict[str, int] = {}

    def shard(self, bronze: str, rejected: pa.Table) -> None:
        """Add one shard: its accepted rows to bronze, its rejects and repeats to quarantine."""
        repeats: list[pa.Table] = []
        parquet = pq.ParquetFile(bronze)
        names = [n for n in parquet.schema_arrow.names if not n.startswith(SHARD_PREFIX)]
        if self.bronze is None:
            self.bronze = RowGroupWriter(
                self.bronze_path,
                pa.schema([parquet.schema_arrow.field(n) for n in names]),
                self.contract.bronze_compression or PARQUET_COMPRESSION,
                dictionary=list(self.contract.dictionary),
            )
        for batch in parquet.iter_batches(batch_size=ROW_GROUP_SIZE):
            keep = np.ones(batch.num_rows, bool)
            if self.dedup is not None:
                repeated = self._repeats(batch)
                if repeated.height:
                    rows = repeated["row"].to_numpy()
                    keep[rows] = False
                    repeats.append(self._quarantined(batch, rows, repeated["detail"]))
            kept = batch.select(names)
            self.bronze.write(kept if keep.all() else kept.filter(pa.array(keep)))
        rows = pa.concat_tables([rejected, *repeats]) if repeats else rejected
        if repeats:
            order = pl.from_arrow(rows.select(["source_file", "line_no"])).with_row_index()
            assert isinstance(order, pl.DataFrame)
            line_order = order.sort(["source_file", "line_no"], maintain_order=True)
            rows = rows.take(line_order["index"].to_numpy())
        self.write_quarantine(rows)

    def _repeats(self, batch: pa.RecordBatch) -> pl.DataFrame:
        assert self.dedup is not None
        keys = pl.from_arrow(batch.select([SHARD_KEY, "source_file", "line_no", SHARD_LINE]))
        assert isinstance(keys, pl.DataFrame)
        return self.dedup.apply(keys.rename({SHARD_KEY: KEY, SHARD_LINE: "line"}))

    def _quarantined(self, batch: pa.RecordBatch, rows: np.ndarray, detail: pl.Series) -> pa.Table:
        """Return the quarantine rows of the repeats at `rows` of a shard's bronze batch."""
        assert self.dedup is not None
        picked = pa.Table.from_batches([batch]).take(rows)
        return pa.table(
            {
                "source": pa.array([self.contract.source] * len(rows), pa.string()),
                "source_file": picked.column("source_file"),
                "line_no": picked.column("line_no"),
                "reason": pa.array([self.dedup.rule.reason] * len(rows), pa.string()),
                "detail": detail.to_arrow(),
                "raw_line": picked.column(SHARD_LINE),
            }
        ).cast(PROBLEM_SCHEMA)

    def write_quarantine(self, rows: pa.Table) -> None:
        """Append quarantine rows (in order) and count their reasons."""
        for count in pc.value_counts(rows.column("reason")).to_pylist():
            reason = count["values"]
            self.quarantine_by_reason[reason] = (
                self.quarantine_by_reason.get(reason, 0) + count["counts"]
            )
        for batch in rows.cast(PROBLEM_SCHEMA).to_batches():
            self.quarantine.write(batch)

    def close(self) -> int:
        """Close both files; return the bronze rows written."""
        self.quarantine.close()
        return self.bronze.close() if self.bronze is not None else 0


def shard_dir(lake_root: str, *parts: str) -> UPath:
    """Return the staging folder `<lake>/_shards/<parts…>` of a day's shards.

    A source's ingest shards: `shard_dir(lake, source, day)` (`<k>/bronze.parquet`, …); a
    config's product shards: `shard_dir(lake, "curation", config, day)`.
    """
    return UPath(lake_root).joinpath(SHARDS_FOLDER, *parts)


def staged_footer(key: bytes, fingerprint: str, **holds: object) -> dict[bytes, bytes]:
    """Return a staged file's footer: under `key`, its inputs' fingerprint and `holds` (JSON)."""
    return {key: json.dumps({"fingerprint": fingerprint, **holds}, sort_keys=True).encode()}


def staged_current(path: UPath, key: bytes, fingerprint: str, **holds: object) -> bool:
    """Return whether the staged file `path` exists with `staged_footer(key, fingerprint, …)`."""
    value = parquet_key_values(path).get(key)
    return value is not None and json.loads(value) == {"fingerprint": fingerprint, **holds}


def merge_description(
    shards: int, steps: str, computes: str, module: str, when: str = "they are missing or stale"
) -> str:
    """Return what a day split's merge step adds to its description (nothing with one shard).

    `steps`: the shard steps it merges; `computes`: its verb when it makes the day itself; `when`:
    when it does; `module`: the module of its `merge_or_compute`.
    """
    if shards == 1:
        return ""
    return (
        f" With {shards} shards it merges the day's {steps} (the same bytes), or {computes} the "
        f"day itself when {when} (`{module}.merge_or_compute`)."
    )


def shard_key(source: str, shard: int) -> dg.AssetKey:
    """Return the asset key of a source's shard step `shard` (from 0)."""
    return dg.AssetKey([source, f"ingest_shard_{shard}"])


def shard_keys(source: str) -> list[dg.AssetKey]:
    """Return the keys of a source's shard steps (none with one shard): the merge's deps."""
    shards = shard_count()
    return [shard_key(source, k) for k in range(shards)] if shards > 1 else []


def shard_assets(
    contract: RawContract,
    list_files: Callable[[str, str], list[str]],
    *,
    bronze_exclude: tuple[str, ...] = (),
    params: Callable[[dg.AssetExecutionContext], Mapping[str, object]] | None = None,
    resource_keys: frozenset[str] = frozenset(),
) -> list[dg.AssetsDefinition]:
    """Return a source's shard steps (none with one shard; see the module docstring).

    `list_files(raw_root, day)` lists the day's raw files as the bronze asset does; `params`
    gives the parse's bind parameters from the step's context (its resources: `resource_keys`).
    """
    shards = shard_count()
    if shards == 1:
        return []
    return [
        _shard_asset(
            contract,
            k,
            shards,
            list_files=list_files,
            bronze_exclude=bronze_exclude,
            params=params,
            resource_keys=resource_keys,
        )
        for k in range(shards)
    ]


def _shard_asset(
    contract: RawContract,
    shard: int,
    shards: int,
    *,
    list_files: Callable[[str, str], list[str]],
    bronze_exclude: tuple[str, ...],
    params: Callable[[dg.AssetExecutionContext], Mapping[str, object]] | None,
    resource_keys: frozenset[str],
) -> dg.AssetsDefinition:
    source = contract.source

    @dg.asset(
        key=shard_key(source, shard),
        partitions_def=daily_partitions(),
        group_name=source,
        kinds={"duckdb", "parquet"},
        required_resource_keys={"settings", *resource_keys},
        description=(
            f"Shard {shard + 1} of {shards} of a day's raw {source} files (a range of the "
            "sorted names, about 1/N of the bytes) parsed into staged bronze and quarantine "
            "files; the bronze step merges the day's shards and removes them."
        ),
    )
    def _shard(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        cfg = context.resources.settings.resolved()
        day = context.partition_key
        files = split_files(list_files(cfg.raw_root, day), shards)[shard]
        result = ingest_shard(
            contract,
            files,
            raw_root=cfg.raw_root,
            params=params(context) if params is not None else None,
            bronze_exclude=bronze_exclude,
        )
        target = shard_dir(cfg.lake_root, source, day) / str(shard)
        for staged in (result.bronze, result.quarantine):
            move_into_place(staged.path, target / staged.path.name)
        remove_if_empty(result.bronze.path.parent)
        return dg.MaterializeResult(
            metadata={
                "shard": f"{shard + 1} of {shards}",
                "raw_files": result.stats.files,
                "raw_records": result.stats.records,
                "accepted_rows": result.bronze_rows,
                "quarantine_rows": result.quarantine_rows,
            }
        )

    return _shard


def ingest_day(
    context: dg.AssetExecutionContext,
    contract: RawContract,
    raw_paths: list[str],
    settings: Settings,
    *,
    params: Mapping[str, object] | None = None,
    bronze_exclude: tuple[str, ...] = (),
) -> IngestResult:
    """Ingest a day of a source: itself with one shard, else by merging its shard steps' files.

    The merged day's staging folder is removed once the day's files are written. Without one
    (the bronze step run alone, e.g. a stale-only backfill, after its shards were merged) the
    step ingests the whole day itself: the same bytes, in one step.
    """
    shards = settings.shards
    staging = shard_dir(settings.lake_root, contract.source, context.partition_key)
    if shards == 1 or not staging.exists():
        if shards > 1:
            context.log.info(f"no staged shards in {staging}: ingesting the whole day here")
        return ingest_partition(
            contract,
            raw_paths,
            raw_root=settings.raw_root,
            params=params,
            bronze_exclude=bronze_exclude,
        )
    with ExitStack() as stack:
        parts = []
        for k in range(shards):
            files = [staging / str(k) / name for name in ("bronze.parquet", "quarantine.parquet")]
            if not all(f.exists() for f in files):
                raise RuntimeError(
                    f"{contract.source} {context.partition_key}: shard {k} is missing "
                    f"({staging}/{k}): run the day's shard steps ({shard_key(contract.source, k)})"
                )
            local = [str(stack.enter_context(local_file(f))) for f in files]
            parts.append(ShardFiles(*local))
        result = merge_shards(contract, parts, raw_paths)
    staging.fs.rm(staging.path, recursive=True)
    return result
