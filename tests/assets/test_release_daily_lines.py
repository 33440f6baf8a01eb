"""The daily line scans: the release's scan reads no line they read, and publishes the same bytes.

`release/<config>_scanned_lines` (daily, with the day's ingest) runs the detectors over the day's
product lines; the release's scan of the curated partitions and the `independent_pii_scan` check
then read no line through the detectors, and the release (data files, card, manifest, withheld
rows) and every check's outcome are byte for byte those of a release without them.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from distill_assets.defs.release import scan
from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from tests.assets.test_curation_incremental import use_data_dir
from tests.assets.test_release import DAY1, SELECTION, land_feeds, land_ssn_leak, run_unchecked
from tests.conftest import materialize
from tests.unit.curation.feeds import feed_row

DAILY = 'tag:"distill/scope"="daily"'


def release_files(settings: Settings) -> dict[str, bytes]:
    """Every file of the published latest version and of the release's lake folder's tables."""
    latest = Path(settings.hub_root) / settings.dataset_name / "latest"
    lake = Path(settings.lake_root) / "release"
    files = {
        f"hub/{p.relative_to(latest)}": p.read_bytes() for p in latest.rglob("*") if p.is_file()
    }
    for name in ("withheld.parquet", "scanned_parts.parquet"):
        files[name] = (lake / name).read_bytes()
    return files


def night(settings: Settings, daily: bool) -> tuple[dg.ExecuteInProcessResult, list[str]]:
    """Land the day (a leak among clean rows), ingest its daily assets if `daily`, release."""
    land_feeds(settings, DAY1, 12)
    land_ssn_leak(
        settings,
        DAY1,
        feed_row("instruction", "ok", "served at 127.0.0.1", source="escalations", group="a"),
        feed_row(
            "instruction", "key", "token ghp_" + "A1b2C3d4E5" * 4, source="escalations", group="k"
        ),
    )
    if daily:
        materialize(DAILY, partition=DAY1)
    read: list[str] = []
    detectors = scan.line_findings

    def counted(candidates: pl.DataFrame) -> pl.DataFrame:
        read.extend(candidates.get_column("text"))
        return detectors(candidates)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "line_findings", counted)
        result = run_unchecked(SELECTION)
    return result, read


def test_a_release_after_the_daily_line_scans_reads_no_line_and_publishes_the_same_bytes(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_daily = use_data_dir(monkeypatch, tmp_path / "daily")
    result, read = night(with_daily, daily=True)
    assert result.success
    lines = partition_path(with_daily.lake_root, "release", "instruction_scanned_lines", DAY1)
    # the SSN's two lines (the scrubber replaced the token: no finding in its line)
    found = pl.read_parquet(lines).explode("types")["types"].drop_nulls().to_list()
    assert found == ["us_ssn", "us_ssn"]
    assert read == []
    outcome = {e.check_name: (e.passed, e.metadata) for e in result.get_asset_check_evaluations()}

    without = use_data_dir(monkeypatch, tmp_path / "release_only")
    result_without, read_without = night(without, daily=False)
    assert result_without.success
    assert "served at 127.0.0.1" in read_without
    assert outcome == {
        e.check_name: (e.passed, e.metadata) for e in result_without.get_asset_check_evaluations()
    }
    assert outcome["independent_pii_scan"][0] is True
    published = release_files(with_daily)
    assert published == release_files(without)
    withheld = pl.read_parquet(Path(with_daily.lake_root) / "release" / "withheld.parquet")
    assert withheld.select("id", "column", "kind").rows() == [
        ("leak", "instruction", "us_ssn"),
        ("leak", "output", "us_ssn"),
    ]
