"""`distill sample` for revisions: deterministic files whose bad lines the ingest quarantines."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from distill_assets.contracts import revisions
from distill_assets.defs.ingest import ingest_partition
from distill_assets.defs.revisions.pairing import pair_turns
from distill_assets.samples.revisions import BAD_PER_BATCH, LINE_KINDS, generate_day


def test_same_inputs_write_identical_bytes(tmp_path: Path) -> None:
    first = generate_day(tmp_path / "a", "2026-11-19", 2, 7)
    second = generate_day(tmp_path / "b", "2026-11-19", 2, 7)
    assert [p.read_bytes() for p in first.files] == [p.read_bytes() for p in second.files]
    other = generate_day(tmp_path / "c", "2026-11-19", 2, 8)
    assert [p.read_bytes() for p in first.files] != [p.read_bytes() for p in other.files]


def test_bad_lines_are_quarantined_with_the_generated_reasons(tmp_path: Path) -> None:
    written = generate_day(tmp_path, "2026-11-20", 4, 0)
    result = ingest_partition(
        revisions.RAW, [str(p) for p in written.files], raw_root=str(tmp_path)
    )
    assert result.stats.records == written.records
    assert result.quarantine_by_reason == written.bad_records
    # 4 batches x 5 bad lines rotate through every line kind, plus one torn last line
    assert set(written.bad_records) == {*LINE_KINDS, "torn_last_line"}
    assert sum(written.bad_records.values()) == 4 * BAD_PER_BATCH + 1


def test_generated_day_has_pairs_and_every_loop_outcome(tmp_path: Path) -> None:
    days = ("2026-11-19", "2026-11-20")
    for day in days:
        generate_day(tmp_path, day, 3, 0)
    paths = sorted(str(p) for p in (tmp_path / "revisions" / days[1]).iterdir())
    result = ingest_partition(revisions.RAW, paths, raw_root=str(tmp_path))
    pairs, unpaired = pair_turns(pl.scan_parquet(result.bronze.path))
    assert pairs.height > 0
    assert set(unpaired["reason"]) == {
        "incomplete_turn",
        "revise_without_approve",
        "failed",
        "approved_without_revision",
        "missing_query",
        "empty_revision_hints",
        "unchanged_response",
    }
    # the turn begun at 23:59 the day before is approved after midnight: counted, not paired
    late = unpaired.filter(pl.col("turn_id") == "turn_20261119_late")
    assert late.select("reason", "detail").rows() == [("incomplete_turn", "2:APPROVE")]
