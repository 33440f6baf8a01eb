"""The shared ingest gives the same bronze and quarantine however the lines are chunked."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from distill_assets.contracts.escalations import parse_parameters
from distill_assets.defs import ingest
from distill_assets.defs.telemetry.assets import parse_params
from distill_assets.defs.telemetry.resources import PlayerIdHasher
from distill_assets.lib import rawfiles
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.samples import escalations, revisions, telemetry

DAY = "2026-11-19"
SOURCES = {
    "escalations": (escalations, "records", "duplicate_id"),
    "revisions": (revisions, "validations", "duplicate_validation"),
    "telemetry": (telemetry, "events", "duplicate_event_id"),
}


def _ingest(source: str, root: Path) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    _, table, _ = SOURCES[source]
    params = {
        "escalations": parse_parameters(),
        "revisions": {},
        "telemetry": parse_params(PlayerIdHasher(key="test"))[0],
    }[source]
    result = ingest.ingest_partition(
        source,
        table,
        list_raw_files(str(root), source, DAY),
        raw_root=str(root),
        params=params,
        bronze_exclude=("line",),
    )
    bronze = pl.read_parquet(result.bronze.path)
    quarantine = pl.read_parquet(result.quarantine.path)
    assert bronze.height == result.bronze_rows
    assert quarantine.height == result.quarantine_rows
    return bronze, quarantine, result.quarantine_by_reason


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_small_chunks_give_the_same_tables(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator, _, duplicate_reason = SOURCES[source]
    generator.generate_day(tmp_path, DAY, 3, 7)
    bronze, quarantine, reasons = _ingest(source, tmp_path)
    # 16 KiB blocks, one chunk per block: duplicates are found across chunks and files
    monkeypatch.setattr(rawfiles, "BLOCK_BYTES", 16 << 10)
    monkeypatch.setattr(ingest, "CHUNK_BYTES", 1)
    small_bronze, small_quarantine, small_reasons = _ingest(source, tmp_path)
    assert reasons[duplicate_reason] > 0
    assert small_reasons == reasons
    assert small_bronze.equals(bronze)
    assert small_quarantine.equals(quarantine)
    assert bronze.select("source_file", "line_no").rows() == sorted(
        bronze.select("source_file", "line_no").rows()
    )


def test_a_duplicate_in_a_later_chunk_names_the_first_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "revisions" / DAY
    folder.mkdir(parents=True)
    first = (
        '{"turn_id": "t1", "ts": 1795082400, "iteration": 1, "decision": "REVISE", "response": "r"}'
    )
    conflicting = first.replace('"r"', '"other"')
    (folder / "a.jsonl").write_text(first + "\n", encoding="utf-8")
    (folder / "b.jsonl").write_text(first + "\n" + conflicting + "\n", encoding="utf-8")
    monkeypatch.setattr(ingest, "CHUNK_BYTES", 1)
    _, quarantine, reasons = _ingest("revisions", tmp_path)
    assert reasons == {"duplicate_validation": 2}
    assert quarantine.select("source_file", "line_no", "detail").rows() == [
        (
            f"revisions/{DAY}/b.jsonl",
            1,
            f"repeats revisions/{DAY}/a.jsonl:1 (first occurrence kept)",
        ),
        (
            f"revisions/{DAY}/b.jsonl",
            2,
            f"conflicts with revisions/{DAY}/a.jsonl:1 (first occurrence kept)",
        ),
    ]
