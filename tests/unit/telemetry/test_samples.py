"""The telemetry sample generator: deterministic, every bad kind, committed samples in sync."""

import json
from pathlib import Path

import pytest

from distill_assets.contracts import telemetry as contract
from distill_assets.samples import telemetry as generator

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples"
DATES = ("2026-11-19", "2026-11-20")


def test_same_inputs_write_identical_files(tmp_path: Path) -> None:
    first = generator.generate_day(tmp_path / "a", "2026-11-19", 2, 7)
    second = generator.generate_day(tmp_path / "b", "2026-11-19", 2, 7)
    assert [p.read_bytes() for p in first.files] == [p.read_bytes() for p in second.files]
    other = generator.generate_day(tmp_path / "c", "2026-11-19", 2, 8)
    assert [p.read_bytes() for p in first.files] != [p.read_bytes() for p in other.files]


@pytest.mark.parametrize("day", DATES)
def test_committed_samples_are_the_generator_output(tmp_path: Path, day: str) -> None:
    written = generator.generate_day(tmp_path, day, 1, 0)
    for path in written.files:
        committed = SAMPLES / "telemetry" / day / path.name
        assert committed.read_bytes() == path.read_bytes()
    assert sorted(p.name for p in (SAMPLES / "telemetry" / day).iterdir()) == sorted(
        p.name for p in written.files
    )


def test_counts_and_bad_share(tmp_path: Path) -> None:
    small = generator.generate_day(tmp_path / "s", "2026-11-19", 1, 0)
    assert small.bad_records == dict.fromkeys(generator.BAD_KINDS, 1)
    lines = sum(len(p.read_text().splitlines()) for p in small.files)
    assert small.records == lines == 436
    large = generator.generate_day(tmp_path / "l", "2026-11-19", 20, 0)
    share = sum(large.bad_records.values()) / large.records
    assert 0.04 < share < 0.06
    assert large.bad_records["torn_last_line"] == 1


def test_good_sample_records_follow_the_contract(tmp_path: Path) -> None:
    written = generator.generate_day(tmp_path, "2026-11-20", 1, 0)
    kinds = {"consent", "decision", "deletion_request", "dialogue_turn", "episode_end"}
    kinds |= {"gold_standard_result", "outcome", "peer_prediction", "reasoning", "trajectory_step"}
    seen = set()
    valid = 0
    for path in written.files:
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
                event = contract.validate_event(record)
            except (ValueError, TypeError, AttributeError):
                continue
            seen.add(event.event_type)
            valid += 1
    assert seen == kinds
    # all but the bad lines; the duplicate and the unredactable id are valid records
    assert valid == written.records - sum(written.bad_records.values()) + 2
