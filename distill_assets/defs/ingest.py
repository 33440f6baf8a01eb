"""Shared raw → bronze ingest: stream raw lines through a source's parse SQL into two tables.

Every source's bronze asset is a multi-asset `(<source>/<bronze table>, <source>/quarantine)`. Its
parse statement `sql/<source>/select_parsed_<table>.sql` reads the view `raw_lines`
(`source_file, line_no, line, utf8_replaced, is_last_line`, see `lib.rawfiles`) and returns one row
per raw record with the bronze columns plus `quarantine_reason` (NULL for a good record) and
`quarantine_detail`. This module streams the raw files through it once into a local stage file,
then splits the stage into the bronze table and the quarantine table (`source, source_file,
line_no, reason, detail, raw_line`), so every record lands in exactly one of them. Files and
records the reader cannot turn into lines (`unsupported_file`, `undecodable_file`, `too_large`,
see `lib.rawfiles`) are quarantine rows too. The stage folder is removed when the asset fails,
else when the IO manager has moved both files away.
"""

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import polars as pl

from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, StagedParquet
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import ROW_GROUP_SIZE, scan_partition
from distill_assets.lib.metadata import funnel
from distill_assets.lib.rawfiles import RawLineReader, ReadStats, list_raw_files, problem_table
from distill_assets.lib.sql import connect, load_sql

QUARANTINE_TABLE = "quarantine"
RECONCILE_CHECK = "raw_reconciles"
_COPY_OPTIONS = f"(FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_SIZE})"


@dataclass
class IngestResult:
    """The staged bronze and quarantine files and what was read."""

    bronze: StagedParquet
    quarantine: StagedParquet
    stats: ReadStats
    bronze_rows: int
    quarantine_by_reason: dict[str, int]

    @property
    def quarantine_rows(self) -> int:
        """Total quarantined records."""
        return sum(self.quarantine_by_reason.values())


def ingest_partition(
    source: str,
    table: str,
    raw_paths: list[str],
    raw_root: str | None = None,
    parse_sql: str | None = None,
    *,
    params: Mapping[str, object] | None = None,
    bronze_exclude: tuple[str, ...] = (),
) -> IngestResult:
    """Parse `raw_paths` with `sql/<source>/select_parsed_<table>.sql` into staged Parquet files.

    `source_file` values are relative to `raw_root` (e.g. `traces/2026-11-19/a.jsonl`). `params`
    are the parse statement's bind parameters; `bronze_exclude` names parse columns kept out of
    bronze (e.g. `line` when only quarantine may hold the raw text).
    """
    statement = parse_sql or load_sql(f"{source}/select_parsed_{table}")
    reader = RawLineReader(raw_paths, root=raw_root)
    workdir = working_dir(source)
    stage, bronze, quarantine = (workdir / n for n in ("stage", "bronze", "quarantine"))
    con = connect()
    try:
        con.execute("SET preserve_insertion_order = true")
        con.register("raw_lines", reader.reader())
        con.execute(f"COPY ({statement}) TO '{stage}.parquet' {_COPY_OPTIONS}", params or {})
        con.execute(f"CREATE VIEW stage AS SELECT * FROM read_parquet('{stage}.parquet')")
        excluded = ", ".join(("quarantine_reason", "quarantine_detail", *bronze_exclude))
        con.execute(
            f"COPY (SELECT * EXCLUDE ({excluded}) FROM stage "
            f"WHERE quarantine_reason IS NULL) TO '{bronze}.parquet' {_COPY_OPTIONS}"
        )
        con.register("file_problems", problem_table(reader.stats.problems, source))
        con.execute(_quarantine_copy(quarantine), {"source": source})
        bronze_rows = con.execute(
            f"SELECT count(*) FROM read_parquet('{bronze}.parquet')"
        ).fetchone()[0]
        reasons = con.execute(
            f"SELECT reason, count(*) FROM read_parquet('{quarantine}.parquet') GROUP BY reason"
        ).fetchall()
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    finally:
        con.close()
    Path(f"{stage}.parquet").unlink(missing_ok=True)
    return IngestResult(
        bronze=StagedParquet(Path(f"{bronze}.parquet")),
        quarantine=StagedParquet(Path(f"{quarantine}.parquet")),
        stats=reader.stats,
        bronze_rows=int(bronze_rows),
        quarantine_by_reason={str(r): int(n) for r, n in reasons},
    )


def _quarantine_copy(target: Path) -> str:
    return (
        "COPY (SELECT $source AS source, source_file, line_no, quarantine_reason AS reason, "
        "quarantine_detail AS detail, line AS raw_line FROM stage "
        "WHERE quarantine_reason IS NOT NULL "
        "UNION ALL SELECT source, source_file, line_no, reason, detail, raw_line "
        f"FROM file_problems) TO '{target}.parquet' {_COPY_OPTIONS}"
    )


def bronze_outs(
    source: str, table: str, bronze_description: str, quarantine_description: str
) -> dict[str, dg.AssetOut]:
    """Return the two outputs of a source's bronze multi-asset, keyed by table name."""
    return {
        table: dg.AssetOut(
            key=[source, table], description=bronze_description, kinds={"duckdb", "parquet"}
        ),
        QUARANTINE_TABLE: dg.AssetOut(
            key=[source, QUARANTINE_TABLE],
            description=quarantine_description,
            kinds={"duckdb", "parquet"},
        ),
    }


def ingest_metadata(result: IngestResult) -> dict[str, object]:
    """Metadata shared by every bronze materialization: files, records, quarantine funnel."""
    return {
        "raw_files": result.stats.files,
        "raw_records": result.stats.records,
        "blank_lines": result.stats.blank_lines,
        "utf8_replaced": result.stats.utf8_replaced,
        "bronze_rows": result.bronze_rows,
        "quarantine_rows": result.quarantine_rows,
        "quarantine_by_reason": funnel(result.quarantine_by_reason),
    }


def count_raw_records(raw_paths: list[str]) -> ReadStats:
    """Count the records (non-blank lines) of raw files, independently of any parsing."""
    reader = RawLineReader(raw_paths)
    for _ in reader.batches():
        pass
    return reader.stats


def reconcile_check(
    source: str, bronze_table: str, suffixes: tuple[str, ...] | None = None
) -> dg.AssetChecksDefinition:
    """Build the blocking check `raw records = bronze rows + quarantine rows` for a partition."""
    bronze_key = dg.AssetKey([source, bronze_table])

    @dg.asset_check(
        partitions_def=daily_partitions,
        asset=bronze_key,
        name=RECONCILE_CHECK,
        blocking=True,
        additional_deps=[dg.AssetKey([source, QUARANTINE_TABLE])],
        description=f"Every raw {source} record is in {bronze_table} or quarantine, exactly once.",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, settings: DistillSettings
    ) -> dg.AssetCheckResult:
        partition = context.partition_key
        cfg = settings.resolved()
        paths = list_raw_files(cfg.raw_root, source, partition, *([suffixes] if suffixes else []))
        raw = count_raw_records(paths).records
        counts: Mapping[str, int] = {
            name: scan_partition(cfg.lake_root, source, name, partition)
            .select(pl.len())
            .collect()
            .item()
            for name in (bronze_table, QUARANTINE_TABLE)
        }
        bronze, quarantine = counts[bronze_table], counts[QUARANTINE_TABLE]
        return dg.AssetCheckResult(
            passed=raw == bronze + quarantine,
            metadata={"raw_records": raw, "bronze_rows": bronze, "quarantine_rows": quarantine},
        )

    return _check
