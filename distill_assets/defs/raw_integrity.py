"""The `raw_files` integrity table of a partition and the per-file reconciliation.

`<lake>/<source>/raw_files/<partition>.parquet` holds one row per raw file of the partition
(`lib.rawfiles.INTEGRITY_SCHEMA`): codec, compressed bytes, frames (gzip members, zstd/lz4
frames), whether every frame carried a checksum and whether every checksum verified, the lines
recovered (records: lines and problem rows), the bytes lost in damaged or suspect frames with an
estimate of the lines they held, and a status (`ok`, `unverified`, `unreadable`, `truncated`,
`suspect`, `damaged`). The blocking `raw_reconciles` check writes it while it reads the raw files,
then checks every file, not only the partition's total: the lines the reader recovered from a file
must be exactly the bronze and quarantine rows whose `source_file` is that file. Lines lost in
damaged frames are reported (they cannot be in the lake), never silently dropped.
"""

from __future__ import annotations

import polars as pl

from distill_assets.lib.lake import partition_path, scan_partition, write_parquet_atomic
from distill_assets.lib.rawfiles import RawLineReader, integrity_table
from distill_assets.lib.settings import Settings

RAW_FILES_TABLE = "raw_files"


def reconcile_files(
    settings: Settings, source: str, partition: str, paths: list[str], tables: tuple[str, str]
) -> tuple[bool, dict[str, object]]:
    """Read the raw files, write `raw_files`, and reconcile them file by file with `tables`.

    `tables` are the bronze table and the quarantine table of the source.

    Returns whether every file's recovered lines equal its rows in `tables` (and the totals
    agree), and the check's metadata.
    """
    raw_root, lake_root = settings.raw_root, settings.lake_root
    reader = RawLineReader(sorted(paths), root=raw_root)
    for _ in reader.batches():
        pass
    files = pl.from_arrow(integrity_table(reader.stats))
    assert isinstance(files, pl.DataFrame)
    write_parquet_atomic(files, partition_path(lake_root, source, RAW_FILES_TABLE, partition))
    rows = {
        table: scan_partition(lake_root, source, table, partition).select("source_file").collect()
        for table in tables
    }
    in_lake = pl.concat(rows.values()).group_by("source_file").len("lake_rows")
    compared = files.select("source_file", "lines_recovered").join(
        in_lake, on="source_file", how="full", coalesce=True
    )
    mismatched = compared.filter(
        pl.col("lines_recovered").fill_null(0) != pl.col("lake_rows").fill_null(0)
    ).sort("source_file")
    raw = reader.stats.records
    lake = sum(frame.height for frame in rows.values())
    damaged = files.filter(~pl.col("status").is_in(["ok", "unverified"]))
    metadata: dict[str, object] = {
        "raw_records": raw,
        "bronze_rows": rows[tables[0]].height,
        "quarantine_rows": rows[tables[1]].height,
        "files": files.height,
        "files_not_ok": dict(damaged.select("source_file", "status").iter_rows()),
        "lines_lost_estimated": int(files["lines_lost_estimated"].sum()),
        "bytes_lost": int(files["bytes_lost"].sum()),
        "files_not_reconciled": [list(r) for r in mismatched.iter_rows()],
    }
    return raw == lake and mismatched.is_empty(), metadata
