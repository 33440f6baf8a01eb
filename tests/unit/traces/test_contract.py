"""The pydantic raw contract and the bulk SQL validation agree, line by line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from distill_assets.contracts.traces import (
    DETAILS,
    QUARANTINE_REASONS,
    RAW,
    STEP_PAYLOADS,
    TraceEvent,
)
from distill_assets.defs.ingest import ingest_partition
from distill_assets.lib.contract_sql import extract_statement, path_reasons
from distill_assets.lib.payload_sql import PayloadUnion
from distill_assets.lib.sql import load_sql
from tests.unit.strict_json import DuplicateKeyError, validate_json
from tests.unit.traces.builder import failed_run, recovery_run, success_run
from tests.unit.traces.test_bronze import BAD_LINES


@pytest.mark.parametrize(("raw", "reason"), BAD_LINES, ids=[r for _, r in BAD_LINES])
def test_every_line_bronze_quarantines_is_rejected_by_the_model(raw: str, reason: str) -> None:
    assert reason in QUARANTINE_REASONS
    with pytest.raises((ValidationError, DuplicateKeyError)):
        validate_json(TraceEvent, raw)


def test_every_line_the_writer_produces_is_accepted() -> None:
    lines = [*success_run("a").lines, *failed_run("b").lines, *recovery_run("c").lines]
    events = [TraceEvent.model_validate_json(line) for line in lines]
    assert {e.kind for e in events} == {
        "run_start",
        "llm_request",
        "llm_action",
        "tool_result",
        "tests",
        "reflection",
        "final",
        "run_end",
    }
    assert all(e.meta.task_id == "quixbugs/quicksort" for e in events)


def test_type_is_an_alias_of_kind_and_extra_fields_are_kept() -> None:
    event = TraceEvent.model_validate_json(
        json.dumps({"ts": 1, "type": "run_start", "payload": {}, "run_id": "r", "host": "w7"})
    )
    assert (event.kind, event.model_extra) == ("run_start", {"host": "w7"})


def test_every_quarantine_reason_is_exercised() -> None:
    assert {reason for _, reason in BAD_LINES} | {"torn_last_line"} == set(QUARANTINE_REASONS)


def test_the_reasons_are_the_generated_checks_in_order() -> None:
    assert path_reasons(TraceEvent, STEP_PAYLOADS) == tuple(QUARANTINE_REASONS)


def test_a_contract_change_changes_the_generated_checks(tmp_path: Path) -> None:
    """The parse follows the models: a step kind whose payload model has no `t` needs none."""
    # the step payloads without tool_result's
    fewer = PayloadUnion(key="kind", field="payload", models=STEP_PAYLOADS.models[:-1])
    statement = extract_statement(
        TraceEvent, DETAILS, fewer, load_sql("traces/select_event_columns")
    )
    without_t = json.dumps({"ts": 1, "kind": "tool_result", "payload": {}, "run_id": "r"})
    changed = dataclasses.replace(RAW, parse=lambda: statement)
    for number, (contract, reasons) in enumerate(((RAW, ["missing_t"]), (changed, []))):
        folder = tmp_path / str(number)
        raw = folder / "traces" / "d" / "a.jsonl"
        raw.parent.mkdir(parents=True, exist_ok=True)
        raw.write_text(without_t + "\n", encoding="utf-8")
        result = ingest_partition(contract, [str(raw)], raw_root=str(folder))
        assert list(result.quarantine_by_reason) == reasons
