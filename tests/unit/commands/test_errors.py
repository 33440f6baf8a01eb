"""Bad command-line input: one line on stderr, a non-zero exit, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from distill_assets.cli import main
from distill_assets.lib.settings import Settings
from tests.conftest import land


@pytest.fixture(autouse=True)
def production_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real player key, so `distill run` prints no development-key warning before the error."""
    monkeypatch.setenv("DISTILL_PLAYER_ID_KEY", "test-errors-player-key")


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 2
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1
    return captured.err.strip()


def test_run_with_missing_samples_folder(
    distill_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    error = _one_line_error(capsys, ["run", "--samples", "/nonexistent"])
    assert error == "distill run: --samples /nonexistent: no such folder"


def test_sample_with_impossible_start_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    error = _one_line_error(capsys, ["sample", "--out", str(tmp_path), "--start", "2026-13-45"])
    assert error == "distill sample: --start '2026-13-45' is not a date (YYYY-MM-DD)"
    assert list(tmp_path.iterdir()) == []


def test_sft_extract_with_missing_trace_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.jsonl"
    argv = ["sft-extract", "--trace-dir", "/nonexistent", "--output", str(out)]
    error = _one_line_error(capsys, argv)
    assert error == "distill sft-extract: --trace-dir /nonexistent: no such folder"
    assert not out.exists()


@pytest.mark.parametrize(
    ("partitions", "expected"),
    [
        ("2026-11-31", "distill run: partition '2026-11-31' is not a date (YYYY-MM-DD)"),
        ("yesterday", "distill run: partition 'yesterday' is not a date (YYYY-MM-DD)"),
        ("2026-11-20..2026-11-19", "distill run: range 2026-11-20..2026-11-19 runs backwards"),
        ("2026-11-21", "distill run: no raw data for 2026-11-21 under {raw}"),
        (
            "2026-11-21..2026-11-25",
            "distill run: no raw data for 2026-11-21..2026-11-25 under {raw}",
        ),
    ],
)
def test_run_refuses_partitions_without_raw_data(
    distill_env: Settings, capsys: pytest.CaptureFixture[str], partitions: str, expected: str
) -> None:
    land(distill_env, "revisions", "2026-11-19", "a.jsonl", "{}\n")
    argv = ["run", "--samples", "none", "--partitions", partitions]
    assert _one_line_error(capsys, argv) == expected.format(raw=distill_env.raw_root)
    assert not Path(distill_env.lake_root).exists()


def test_run_refuses_unknown_source(
    distill_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    error = _one_line_error(capsys, ["run", "--samples", "none", "--source", "logs"])
    assert (
        error
        == "distill run: --source logs: not a source (traces, escalations, revisions, telemetry)"
    )


def test_backfill_needs_stale_or_a_range(
    distill_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _one_line_error(capsys, ["backfill"]) == (
        "distill backfill: give --stale, or a range with --from and --to"
    )
    assert _one_line_error(capsys, ["backfill", "--from", "2026-11-19", "--to", "nope"]) == (
        "distill backfill: --to 'nope' is not a date (YYYY-MM-DD)"
    )
