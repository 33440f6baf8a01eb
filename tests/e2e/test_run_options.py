"""`distill run --partitions FROM..TO --source S`: only those dates and that source's assets."""

from __future__ import annotations

import pytest

from distill_assets.cli import main
from distill_assets.lib.settings import Settings
from tests.conftest import SAMPLE_DATES

pytestmark = pytest.mark.e2e


def test_run_one_source_over_one_date(
    sample_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    day = SAMPLE_DATES[1]
    argv = ["run", "--samples", "none", "--source", "revisions", "--partitions", f"{day}..{day}"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    ingest = [x for x in lines if x.startswith("[distill] daily_ingest ")]
    assert ingest == [
        f"[distill] daily_ingest {day} revisions/validations: 21 rows",
        f"[distill] daily_ingest {day} revisions/quarantine: 11 rows",
        f"[distill] daily_ingest {day} revisions/revision_pairs: 6 rows",
        f"[distill] daily_ingest {day} revisions/unpaired_turns: 5 rows",
        f"[distill] daily_ingest {day}: ok (4 materializations, 3 checks)",
    ]
    assert f"[distill] quarantine {day}: revisions 11 (invalid_iteration 1, " in "\n".join(lines)
    assert "[distill] publish_release: ok (10 materializations, 6 checks)" in lines
