"""The corrupt-file matrix: no raw file or folder stops a night.

Beside the committed samples, every source gets a plain-text file named `.jsonl.gz`, gzip bytes
named `.jsonl`, a `.json` and a `.bz2` file; telemetry gets a 50 MB record; and there are folders
named `2026-13-45`, `2026_11_21` and a future date. `distill run` publishes, reports the
skipped folders, and every raw record is counted in bronze or quarantine with its reason.
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from distill_assets.cli import main
from distill_assets.defs.ingest import count_raw_records
from distill_assets.lib.lake import partition_path
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.lib.settings import SOURCES, Settings
from tests.conftest import SAMPLES, land

DAY = "2026-11-19"
BRONZE = {
    "traces": "events",
    "escalations": "records",
    "revisions": "validations",
    "telemetry": "events",
}
HUGE_BYTES = 50 << 20


@pytest.mark.e2e
def test_corrupt_files_and_folders_do_not_stop_the_release(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DISTILL_ENV", "development")
    scratch = Path(distill_env.data_dir).parent / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    shutil.copytree(SAMPLES, distill_env.raw_root)
    for source in SOURCES:
        land(distill_env, source, DAY, "plain-named-gz.jsonl.gz", '{"a": 1}\n')
        land(distill_env, source, DAY, "gzip-named-plain.jsonl", gzip.compress(b'{"a": 1}\n'))
        land(distill_env, source, DAY, "export.json", '[{"a": 1}]')
        land(distill_env, source, DAY, "old.jsonl.bz2", b"BZh91AY&SY")
    for folder in ("2026-13-45", "2026_11_21", "2099-01-01"):
        land(distill_env, "revisions", folder, "a.jsonl", '{"turn_id": "x"}\n')
    huge = '{"event_id": "huge", "payload": {"text": "' + "z" * HUGE_BYTES + '"}}\n'
    land(distill_env, "telemetry", "2026-11-20", "huge.jsonl", huge)

    assert main(["run", "--samples", "none"]) == 0
    out = capsys.readouterr().out
    assert "skipped raw folder revisions/2026-13-45: not a valid date" in out
    assert "skipped raw folder revisions/2026_11_21: not a valid date" in out
    assert "skipped raw folder revisions/2099-01-01: a date after the last complete day" in out
    assert "published at" in out
    assert list(scratch.iterdir()) == []  # every working folder was removed
    candidate = dg.DagsterInstance.get().get_latest_materialization_event(
        dg.AssetKey(["release", "candidate"])
    )
    assert candidate is not None and candidate.asset_materialization is not None
    assert candidate.asset_materialization.metadata["skipped_raw_folders"].value == {
        "revisions/2026-13-45": "not_a_date",
        "revisions/2026_11_21": "not_a_date",
        "revisions/2099-01-01": "future_date",
    }

    lake = distill_env.lake_root
    for source, table in BRONZE.items():
        for day in ("2026-11-19", "2026-11-20"):
            raw = count_raw_records(list_raw_files(distill_env.raw_root, source, day)).records
            bronze = pl.read_parquet(partition_path(lake, source, table, day)).height
            quarantine = pl.read_parquet(partition_path(lake, source, "quarantine", day))
            assert raw == bronze + quarantine.height, (source, day)
        reasons = dict(
            quarantine_of(lake, source, DAY)
            .filter(pl.col("reason").is_in(["undecodable_file", "unsupported_file"]))
            .group_by("reason")
            .len()
            .iter_rows()
        )
        assert reasons == {"undecodable_file": 2, "unsupported_file": 2}, source
    too_large = quarantine_of(lake, "telemetry", "2026-11-20").filter(
        pl.col("reason") == "too_large"
    )
    assert too_large.select("source_file", "line_no").rows() == [
        ("telemetry/2026-11-20/huge.jsonl", 1)
    ]
    assert len(too_large["raw_line"][0]) == 1024
    undecodable = quarantine_of(lake, "traces", DAY).filter(pl.col("reason") == "undecodable_file")
    assert sorted(undecodable["source_file"]) == [
        "traces/2026-11-19/gzip-named-plain.jsonl",
        "traces/2026-11-19/plain-named-gz.jsonl.gz",
    ]


def quarantine_of(lake: str, source: str, day: str) -> pl.DataFrame:
    return pl.read_parquet(Path(str(partition_path(lake, source, "quarantine", day))))
