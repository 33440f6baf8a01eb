"""The benchmark table in docs/performance.md is generated from bench/history/ and cannot drift."""

import json
from pathlib import Path

from bench import table


def test_committed_table_matches_history() -> None:
    page = table.PAGE.read_text()
    assert table.splice(page, table.render()) == page, "run `python -m bench.table`"


def test_every_history_file_is_listed() -> None:
    rendered = table.render()
    for path in sorted(table.HISTORY.glob("*.json")):
        assert f"(../bench/history/{path.name})" in rendered
        assert f"**{path.name}**" in rendered


def test_legacy_ingest_rows_and_new_rows(tmp_path: Path) -> None:
    legacy = {
        "measured_at": "2026-11-24T07:40:13+00:00",
        "rows": [
            {
                "size_mb": 250,
                "source": "traces",
                "input_mb": 250.0,
                "step": "bronze",
                "wall_s": 2.117,
                "cpu_s": 3.62,
                "peak_rss_mib": 690.68,
                "rows": 1,
                "mb_per_s": 118.1,
                "x_copy_wall": 1.03,
                "x_copy_cpu": 1.04,
            },
        ],
    }
    new = {
        "benchmark": "near_dup",
        "measured_on": "2026-11-26",
        "command": "python -m bench --only near_dup",
        "per_s_unit": "docs/s",
        "rows": [
            {
                "input": "200,000 docs",
                "step": "distill",
                "wall_s": 5.6,
                "per_s": 35479,
                "x_baseline_per_s": 27.8,
                "recall": "1.0000",
            }
        ],
    }
    (tmp_path / "ingest-2026-11-24.json").write_text(json.dumps(legacy))
    (tmp_path / "near_dup-2026-11-26.json").write_text(json.dumps(new))
    lines = table.render(tmp_path).splitlines()
    assert lines[2] == (
        "| [ingest 2026-11-24](../bench/history/ingest-2026-11-24.json) | 250 MB traces | bronze "
        "| 2.117 | 3.62 | 118.1 | 690.68 | 1.03 wall / 1.04 CPU |  |"
    )
    assert lines[3] == (
        "| [near_dup 2026-11-26](../bench/history/near_dup-2026-11-26.json) "
        "| 200,000 docs | distill | 5.6 |  |  |  | 27.8 rate | 35,479 docs/s; recall 1.0000 |"
    )
    assert "`python -m bench --only ingest`" in lines[-2]
