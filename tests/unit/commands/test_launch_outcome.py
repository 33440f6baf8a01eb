"""The run summary: checks that block the release apart from warnings; short quarantine lines."""

from __future__ import annotations

import errno
from pathlib import Path

import dagster as dg
import polars as pl

from distill_assets.lib.lake import partition_path
from distill_assets.operations.launch import failure_lines, outcome, quarantine_line


@dg.asset(
    check_specs=[
        dg.AssetCheckSpec("rows_valid", asset="table"),
        dg.AssetCheckSpec("within_budget", asset="table"),
        dg.AssetCheckSpec("schema_matches", asset="table"),
    ]
)
def table() -> dg.Output:
    """One asset with a failing blocking check, a failing warning and a passing check."""
    yield dg.Output(1)
    yield dg.AssetCheckResult(check_name="rows_valid", passed=False)
    yield dg.AssetCheckResult(
        check_name="within_budget", passed=False, severity=dg.AssetCheckSeverity.WARN
    )
    yield dg.AssetCheckResult(check_name="schema_matches", passed=True)


def test_warnings_are_not_reported_as_failed_checks() -> None:
    result = dg.materialize([table], raise_on_error=False)
    assert outcome(result) == (
        "ok (1 materializations, 3 checks, failed checks: table:rows_valid, "
        "warnings: table:within_budget)"
    )


def test_a_warning_alone_is_only_a_warning() -> None:
    @dg.asset(check_specs=[dg.AssetCheckSpec("within_budget", asset="quiet")])
    def quiet() -> dg.Output:
        """One asset whose only check warns."""
        yield dg.Output(1)
        yield dg.AssetCheckResult(
            check_name="within_budget", passed=False, severity=dg.AssetCheckSeverity.WARN
        )

    result = dg.materialize([quiet])
    assert outcome(result) == "ok (1 materializations, 1 checks, warnings: quiet:within_budget)"


def test_the_quarantine_line_names_the_most_frequent_reasons(tmp_path: Path) -> None:
    reasons = ["invalid_json"] * 3 + ["torn_last_line"] * 2 + ["a_missing", "b_missing", "c_bad"]
    for source, rows in (("traces", reasons), ("telemetry", ["invalid_json", "not_an_object"])):
        path = partition_path(str(tmp_path), source, "quarantine", "2026-11-19")
        path.parent.mkdir(parents=True)
        pl.DataFrame({"reason": rows}).write_parquet(str(path))
    assert quarantine_line(str(tmp_path), "2026-11-19") == (
        "quarantine 2026-11-19: traces 8 (invalid_json 3, torn_last_line 2, a_missing 1, "
        "+2 more reasons); telemetry 2 (invalid_json 1, not_an_object 1)"
    )
    assert quarantine_line(str(tmp_path), "2026-11-20") == "quarantine 2026-11-20: nothing ingested"


def test_a_failed_step_is_one_line_naming_the_path() -> None:
    @dg.asset
    def full_disk() -> None:
        """Fails as a write on a full disk does."""
        raise OSError(errno.ENOSPC, "No space left on device", "/data/lake/t/2026-11-19.parquet")

    result = dg.materialize([full_disk], raise_on_error=False)
    assert failure_lines(result) == [
        "full_disk failed: OSError: [Errno 28] No space left on device: "
        "'/data/lake/t/2026-11-19.parquet'"
    ]


class Refusing(dg.ConfigurableResource):
    """A resource that cannot be set up, as the lake IO manager when the lock is taken."""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        """Refuse, naming the holder."""
        raise RuntimeError("another run holds the lock /data/.distill.lock (pid 7)")


@dg.asset
def needs_it(refusing: Refusing) -> None:
    """Never runs."""


def test_a_run_that_cannot_start_is_one_line() -> None:
    result = dg.materialize([needs_it], resources={"refusing": Refusing()}, raise_on_error=False)
    assert failure_lines(result) == [
        "run failed: RuntimeError: another run holds the lock /data/.distill.lock (pid 7)"
    ]
