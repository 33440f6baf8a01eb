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
    assert all(x.startswith(f"[distill] daily_ingest {day} revisions/") for x in ingest[:-1])
    for line in (
        f"[distill] daily_ingest {day} revisions/validations: 21 rows",
        f"[distill] daily_ingest {day} revisions/quarantine: 11 rows",
        f"[distill] daily_ingest {day} revisions/revision_pairs: 6 rows",
        f"[distill] daily_ingest {day} revisions/unpaired_turns: 5 rows",
    ):
        assert line in ingest
    assert ingest[-1].startswith(f"[distill] daily_ingest {day}: ok ({len(ingest) - 1} mater")
    assert f"[distill] quarantine {day}: revisions 11 (invalid_iteration 1, " in "\n".join(lines)
    assert any(x.startswith("[distill] publish_release: ok (") for x in lines)
