"""One day's raw → bronze ingest split across workers: shards by file, merged byte-identically.

With `DISTILL_INGEST_SHARDS=N` (default 1: no shard step, the bronze asset ingests the day
itself), every source's bronze asset gains N shard assets of the same daily partitions
(`<source>/shard_<k>_<table>` and `<source>/shard_<k>_quarantine`, one step each), and its own
step becomes the merge. The day's raw files (`list_raw_files` order) are cut into N contiguous
ranges of about equal bytes (`split_files`): a shard is a stable range of the sorted file names,
so shard k's lines come before shard k+1's in the day's order. Each shard step runs
`ingest_partition` on its files with the contract's de-duplication turned off and its parse
wrapped (`shard_statement`) to keep, in the shard's bronze, what de-duplication needs: the key
(`shard_dedup_key`), the raw line (`shard_line`) and the parse's `rewrite_*` columns. Its
quarantine file carries what it read (files, records, reader problems) in the Parquet footer.

The merge (`merge_shards`) reads the shards in order, runs the source's `Deduplicator` over their
accepted records exactly as the unsharded sink runs it over the day's chunks (the first accepted
record of a key in the day's file order is kept; a later one is quarantined with the same reason
and detail, its line rewritten by the contract's `line_rewrite` if it has one), and writes the
day's bronze and quarantine through the same `RowGroupWriter`: the parse rejects and repeats in
(`source_file`, `line_no`) order, then the reader's problems, as the unsharded ingest writes them.
The day tables are byte-identical to the unsharded ingest's (tests/unit/defs/test_shards.py), so
the reconcile check and every downstream asset are unchanged. The merge rewrites bronze once:
its cost is in docs/scaling-out.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import dagster as dg
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from upath import UPath

from distill_assets.defs.ingest import QUARANTINE_TABLE, IngestResult, ingest_partition
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, StagedParquet
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import PARQUET_COMPRESSION, ROW_GROUP_SIZE, RowGroupWriter
from distill_assets.lib.metadata import funnel
from distill_assets.lib.rawcontract import RawContract
from distill_assets.lib.rawfiles import PROBLEM_SCHEMA, ReadStats
from distill_assets.lib.seen import KEY, Deduplicator
from distill_assets.lib.sql import connect, load_sql
from distill_assets.lib.startup import resolve_settings

SHARD_PREFIX = "shard_"
SHARD_KEY = "shard_dedup_key"
SHARD_LINE = "shard_line"
SHARD_REWRITE = "shard_rewrite_"
# the Parquet footer key of a shard's quarantine file: what the shard read (`ShardStats`)
STATS_KEY = b"distill.shard"


def shard_count() -> int:
    """Return `DISTILL_INGEST_SHARDS` as resolved when the definitions load (1: no shard step)."""
    return resolve_settings().ingest_shards


def split_files(paths: list[str], shards: int, sizes: list[int] | None = None) -> list[list[str]]:
    """Cut a day's files (sorted by path) into `shards` contiguous ranges of about equal bytes.

    A file goes to the shard its middle byte falls in, so the ranges follow the day's file
    order and depend only on the names and sizes (stable); a shard may be empty. `sizes`
    default to the files' sizes on their filesystem (all empty: one each).
    """
    ordered = sorted(paths)
    sizes = [UPath(p).stat().st_size for p in ordered] if sizes is None else sizes
    if not sum(sizes):
        sizes = [1] * len(ordered)
    total = sum(sizes)
    ranges: list[list[str]] = [[] for _ in range(shards)]
    before = 0
    for path, size in zip(ordered, sizes, strict=True):
        ranges[min((2 * before + size) * shards // (2 * total), shards - 1)].append(path)
        before += size
    return ranges


def shard_statement(contract: RawContract, statement: str | None = None) -> str:
    """Return the contract's parse, keeping what the merge de-duplicates with in bronze.

    The wrapped parse adds the key (`shard_dedup_key`), the input line (`shard_line`) and the
    `rewrite_*` columns of a contract with a `line_rewrite`, renamed `shard_rewrite_*` (the sink
    keeps these out of bronze); rows and
    their order are the parse's. A contract without de-duplication keeps its parse.
    """
    statement = statement or contract.parse()
    if contract.dedup is None:
        return statement
    body = re.sub(r";\s*$", "", statement.rstrip())
    rewrite = (
        f"COLUMNS('^rewrite_(.*)$') AS '{SHARD_REWRITE}\\1', " if contract.line_rewrite else ""
    )
    return (
        f"SELECT parsed.*, parsed.{KEY} AS {SHARD_KEY}, {rewrite}raw_lines.line AS {SHARD_LINE}\n"
        f"FROM (\n{body}\n) AS parsed POSITIONAL JOIN raw_lines"
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
    def read(quarantine: str | Path) -> ShardStats:
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
    merger.close()
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
        bronze_rows=merger.bronze.close() if merger.bronze is not None else 0,
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
        self.quarantine = RowGroupWriter(
            self.quarantine_path,
            PROBLEM_SCHEMA,
            PARQUET_COMPRESSION,
            dictionary=list(contract.dictionary),
        )
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
            rows = rows.take(order.sort(["source_file", "line_no"])["index"].to_numpy())
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
        raw_line = picked.column(SHARD_LINE)
        if self.contract.line_rewrite is not None:
            raw_line = _rewritten(picked, load_sql(self.contract.line_rewrite))
        return pa.table(
            {
                "source": pa.array([self.contract.source] * len(rows), pa.string()),
                "source_file": picked.column("source_file"),
                "line_no": picked.column("line_no"),
                "reason": pa.array([self.dedup.rule.reason] * len(rows), pa.string()),
                "detail": detail.to_arrow(),
                "raw_line": raw_line,
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

    def close(self) -> None:
        """Close the quarantine file (bronze is closed by the caller, which counts its rows)."""
        self.quarantine.close()


def _rewritten(picked: pa.Table, statement: str) -> pa.ChunkedArray:
    """Return the contract's `line_rewrite` of repeats: the input line and `rewrite_*` columns."""
    columns = {
        (SHARD_REWRITE.removeprefix(SHARD_PREFIX) + n.removeprefix(SHARD_REWRITE))
        if n.startswith(SHARD_REWRITE)
        else n: picked.column(n)
        for n in picked.column_names
        if n not in (SHARD_KEY, SHARD_LINE)
    }
    repeated = pa.table({**columns, "line": picked.column(SHARD_LINE).cast(pa.string())})
    con = connect(private=True)
    try:
        con.register("repeated_lines", repeated)
        lines = con.sql(statement).to_arrow_table().column("line")
    finally:
        con.close()
    if lines.null_count:
        raise RuntimeError("the line rewrite returned NULL lines")
    return lines
