"""`distill run` prints the withheld rows and what a failed check found, never a value."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import dagster as dg
import polars as pl
import pytest

from distill_assets.commands.run import release_outcome
from distill_assets.defs.release.withhold import WITHHELD_SCHEMA, WITHHELD_TABLE
from distill_assets.lib.lake import global_path, write_parquet_atomic
from distill_assets.lib.settings import Settings


def test_withheld_rows_and_check_failures_are_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings.resolve(
        raw_root=str(tmp_path / "raw"), lake_root=str(tmp_path / "lake"), hub_root=str(tmp_path)
    )
    write_parquet_atomic(
        pl.DataFrame(
            [("sft", "2026-11-19", "r1", "messages", "us_ssn")],
            schema=WITHHELD_SCHEMA,
            orient="row",
        ),
        global_path(settings.lake_root, "release", WITHHELD_TABLE),
    )
    failed = SimpleNamespace(
        passed=False,
        asset_check_key=dg.AssetCheckKey(
            dg.AssetKey(["release", "candidate"]), "independent_pii_scan"
        ),
        metadata={
            "failures": dg.MetadataValue.json({"sft": {"withheld_rows": 21, "threshold": 20}})
        },
    )
    result = SimpleNamespace(success=False, get_asset_check_evaluations=lambda: [failed])
    assert release_outcome(settings, result) == 1  # type: ignore[arg-type]
    assert capsys.readouterr().out.splitlines() == [
        "[distill] withheld sft row r1 column messages: us_ssn",
        "[distill] check independent_pii_scan failed: "
        '{"sft": {"threshold": 20, "withheld_rows": 21}}',
    ]
