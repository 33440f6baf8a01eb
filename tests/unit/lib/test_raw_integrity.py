"""The raw_files table and the per-file reconciliation of raw lines with bronze and quarantine."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl

from distill_assets.defs.raw_integrity import reconcile_files
from distill_assets.lib.lake import partition_path, write_parquet_atomic
from distill_assets.lib.settings import Settings

DAY = "2026-11-19"


def lake_rows(settings: Settings, table: str, files: list[str]) -> None:
    write_parquet_atomic(
        pl.DataFrame({"source_file": files}, schema={"source_file": pl.String()}),
        partition_path(settings.lake_root, "revisions", table, DAY),
    )


def test_each_file_reconciles_and_the_integrity_table_is_written(tmp_path: Path) -> None:
    settings = Settings.resolve(
        raw_root=str(tmp_path / "raw"), lake_root=str(tmp_path / "lake"), hub_root=str(tmp_path)
    )
    day = tmp_path / "raw" / "revisions" / DAY
    day.mkdir(parents=True)
    (day / "a.jsonl").write_text('{"a": 1}\n{"a": 2}\n')
    member = gzip.compress(b'{"b": 1}\n', mtime=0)
    damaged = member[:12] + b"\xff" * 8 + member[20:]
    (day / "b.jsonl.gz").write_bytes(member + damaged + member)
    (day / "c.json").write_text("[]")
    paths = sorted(str(p) for p in day.iterdir())
    a, b, c = (f"revisions/2026-11-19/{name}" for name in ("a.jsonl", "b.jsonl.gz", "c.json"))
    # b: two intact members' lines in bronze, the damaged member's problem row in quarantine
    lake_rows(settings, "validations", [a, a, b, b])
    lake_rows(settings, "quarantine", [b, c])
    passed, meta = reconcile_files(settings, "revisions", DAY, paths, ("validations", "quarantine"))
    assert passed, meta
    assert (meta["raw_records"], meta["bronze_rows"], meta["quarantine_rows"]) == (6, 4, 2)
    assert meta["files_not_ok"] == {b: "damaged", c: "unreadable"}
    assert meta["lines_lost_estimated"] == 1
    table = pl.read_parquet(str(partition_path(settings.lake_root, "revisions", "raw_files", DAY)))
    assert table.select("source_file", "codec", "frames", "lines_recovered", "status").rows() == [
        (a, "none", 0, 2, "ok"),
        (b, "gzip", 3, 3, "damaged"),
        (c, "none", 0, 1, "unreadable"),
    ]

    # the same total, but one file's line counted under another: the check fails, naming them
    lake_rows(settings, "validations", [a, a, a, b])
    passed, meta = reconcile_files(settings, "revisions", DAY, paths, ("validations", "quarantine"))
    assert not passed
    assert meta["files_not_reconciled"] == [[a, 2, 3], [b, 3, 2]]
