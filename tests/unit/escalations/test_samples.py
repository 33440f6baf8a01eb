"""The escalations sample generator: deterministic, reproduces the samples, exact bad kinds."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from distill_assets.defs.escalations.records import ingest_records
from distill_assets.samples.escalations import BAD_KINDS, GZIP_FILE, PLAIN_FILE, generate_day
from tests.conftest import SAMPLE_DATES, SAMPLES


def content(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def test_same_inputs_write_byte_identical_files(tmp_path: Path) -> None:
    first = generate_day(tmp_path / "a", "2026-11-19", 1, 7)
    second = generate_day(tmp_path / "b", "2026-11-19", 1, 7)
    other_seed = generate_day(tmp_path / "c", "2026-11-19", 1, 8)
    assert [p.name for p in first.files] == [PLAIN_FILE, GZIP_FILE]
    for a, b, c in zip(first.files, second.files, other_seed.files, strict=True):
        assert a.read_bytes() == b.read_bytes()
        assert content(a) != content(c)


@pytest.mark.parametrize("day", SAMPLE_DATES)
def test_committed_samples_are_the_generator_output(tmp_path: Path, day: str) -> None:
    generated = generate_day(tmp_path, day, 1, 0)
    committed = SAMPLES / "escalations" / day
    assert sorted(p.name for p in committed.iterdir()) == [PLAIN_FILE, GZIP_FILE]
    for path in generated.files:
        assert content(path) == content(committed / path.name)


@pytest.mark.parametrize(("scale", "bad"), [(1, 16), (4, 20)])
def test_every_bad_kind_is_quarantined_with_the_reported_reason(
    tmp_path: Path, scale: int, bad: int
) -> None:
    day = generate_day(tmp_path, "2026-11-20", scale, 3)
    assert day.records == 100 * scale
    assert sum(day.bad_records.values()) == bad
    text_fields = {r for r in day.bad_records if r not in BAD_KINDS and r != "torn_last_line"}
    assert set(BAD_KINDS) - {"invalid_text_field"} <= set(day.bad_records)
    assert text_fields and all(r.startswith("invalid_") for r in text_fields)
    result = ingest_records([str(p) for p in day.files], raw_root=str(tmp_path))
    assert result.stats.records == day.records
    assert result.stats.blank_lines == 1
    assert result.stats.utf8_replaced == 1
    assert result.quarantine_by_reason == day.bad_records
    assert result.bronze_rows == day.records - bad
