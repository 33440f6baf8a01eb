import os
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from upath import UPath

from distill_assets.contracts import revisions
from distill_assets.defs.ingest import ingest_partition
from distill_assets.lib.cleanup import (
    remove_if_empty,
    remove_orphaned_workdirs,
    remove_orphans,
    working_dir,
)
from distill_assets.lib.lake import write_parquet_atomic


def test_working_dirs_of_ended_processes_are_removed(tmp_path: Path) -> None:
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    orphan = tmp_path / f"distill-{ended}-traces-abc"
    mine = tmp_path / f"distill-{os.getpid()}-traces-def"
    other = tmp_path / "distill-not-a-pid"
    for folder in (orphan, mine, other):
        folder.mkdir()
        (folder / "stage.parquet").write_bytes(b"x")
    assert remove_orphaned_workdirs(str(tmp_path)) == [str(orphan)]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, other.name])


def test_a_working_dir_goes_when_its_last_staged_file_has_moved() -> None:
    folder = working_dir("test")
    assert folder.name.startswith(f"distill-{os.getpid()}-test-")
    (folder / "a.parquet").write_bytes(b"x")
    remove_if_empty(folder)
    assert folder.exists()
    (folder / "a.parquet").unlink()
    remove_if_empty(folder)
    assert not folder.exists()


def test_a_failed_ingest_removes_its_working_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    raw = tmp_path / "a.jsonl"
    raw.write_text('{"a": 1}\n')
    with pytest.raises(Exception, match="nonsense"):
        ingest_partition(revisions.RAW, [str(raw)], parse_sql="SELECT nonsense")
    assert [p for p in tmp_path.iterdir() if p.name.startswith("distill-")] == []


def test_orphaned_temporaries_older_than_the_limit_are_removed(tmp_path: Path) -> None:
    write_parquet_atomic(pl.DataFrame({"a": [1]}), UPath(tmp_path / "lake" / "t" / "x.parquet"))
    hex32 = "0123456789abcdef" * 2
    old_dir = tmp_path / "hub" / "distill" / f".latest.{hex32}.tmp"
    old_dir.mkdir(parents=True)
    (old_dir / "README.md").write_text("unscrubbed?")
    old_file = tmp_path / "lake" / "t" / f".y.parquet.{hex32}.tmp"
    old_file.write_bytes(b"x")
    fresh = tmp_path / "lake" / "t" / f".z.parquet.{hex32}.tmp"
    fresh.write_bytes(b"x")
    hour_ago = time.time() - 3600
    for path in (old_dir, old_file):
        os.utime(path, (hour_ago, hour_ago))
    assert remove_orphans(str(tmp_path / "hub")) == [str(old_dir)]
    assert remove_orphans(str(tmp_path / "lake")) == [str(old_file)]
    assert fresh.exists()
    assert (tmp_path / "lake" / "t" / "x.parquet").exists()
    assert remove_orphans("s3://bucket/lake") == []
