"""`review.write_review_files`: the seed's review folders from examples streamed by partition."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from distill_assets.defs.escalations.review import (
    DECISION_SCHEMA,
    REVIEW_FILE_COLUMNS,
    write_review_files,
)
from tests.unit.escalations.frames import example_frame

DAY = 86400.0
NOV_20 = 1795132800.0  # 2026-11-20 00:00 UTC


def _partition(day: str, *ids: str) -> pl.DataFrame:
    frame = example_frame(*({"id": i, "query": f"q {i}", "claude_response": "a"} for i in ids))
    return frame.select(*REVIEW_FILE_COLUMNS).with_columns(pl.lit(day).alias("partition"))


def test_pending_batches_per_partition_and_reviewed_files_per_decision_day(
    tmp_path: Path,
) -> None:
    decisions = pl.DataFrame(
        [
            ("b", "approve", "fine", "ann", NOV_20 + 60, None, None),
            ("c", "reject", None, "bob", NOV_20 + DAY, None, None),
        ],
        schema=DECISION_SCHEMA,
        orient="row",
    )
    stale = tmp_path / "pending_review" / "batch_20261101.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("[]")

    written = write_review_files(
        tmp_path,
        iter([_partition("2026-11-19", "c", "a", "b"), _partition("2026-11-20", "e", "d")]),
        decisions,
    )

    assert written == {"pending": 3, "reviewed": 2}
    pending = sorted(p.name for p in (tmp_path / "pending_review").iterdir())
    assert pending == ["batch_20261119.json", "batch_20261120.json"]
    ids = {
        name: [r["id"] for r in json.loads((tmp_path / "pending_review" / name).read_text())]
        for name in pending
    }
    assert ids == {"batch_20261119.json": ["a"], "batch_20261120.json": ["d", "e"]}
    reviewed = {
        p.name: [json.loads(line)["id"] for line in p.read_text().splitlines()]
        for p in (tmp_path / "approved").iterdir()
    }
    assert reviewed == {"reviewed_20261120.jsonl": ["b"], "reviewed_20261121.jsonl": ["c"]}
