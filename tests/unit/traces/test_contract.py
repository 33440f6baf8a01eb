"""The pydantic raw contract and the bulk SQL validation agree, line by line."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from distill_assets.contracts.traces import QUARANTINE_REASONS, TraceEvent
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
