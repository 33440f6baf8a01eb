"""The raw contract (pydantic) and the ingest SQL agree on every kind of validation line."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from pydantic import ValidationError

from distill_assets.contracts import revisions
from distill_assets.contracts.revisions import (
    QUARANTINE_REASONS,
    VALIDATIONS_SCHEMA,
    RevisionValidation,
)
from distill_assets.defs.ingest import ingest_partition
from tests.unit.strict_json import DuplicateKeyError, validate_json

TS = 1795082400.0  # 2026-11-19T10:00:00Z
OK = {
    "turn_id": "turn_1",
    "ts": TS,
    "iteration": 1,
    "query": "find the cheapest gaming laptops",
    "response": "The MSI Thin costs $749.99.",
    "decision": "REVISE",
    "revision_hints": ["Use table format"],
    "revision_focus": "formatting",
}


def line(turn_id: str, /, **fields: object) -> str:
    record = {**OK, "turn_id": turn_id, **fields}
    return json.dumps({k: v for k, v in record.items() if v is not ...})


# (line, expected quarantine reason or None); every turn_id differs so none is a duplicate
CASES: list[tuple[str, str | None]] = [
    (line("ok_plain"), None),
    (line("ok_iso_offset", ts="2026-11-19T12:00:00+02:00"), None),
    (line("ok_iso_naive", ts="2026-11-19T10:00:00"), None),
    (line("ok_iso_z", ts="2026-11-19T10:00:00.250Z"), None),
    (line("ok_int_ts", ts=1795082400), None),
    (line("ok_lower_decision", decision=" approve "), None),
    (line("ok_hint_string", revision_hints="  One hint  "), None),
    (line("ok_no_hints", revision_hints=None, revision_focus=None, query=None), None),
    (line("ok_absent_optionals", revision_hints=..., revision_focus=..., query=...), None),
    (line("ok_blank_hints", revision_hints=["a", "  ", ""], revision_focus="  "), None),
    (line("ok_extra", model="qwen2.5-7b", latency_ms=812), None),
    (json.dumps({**OK, "turn_id": 1234}), None),
    ('{"turn_id": "bad_json", "decision": REVISE}', "invalid_json"),
    ("[1, 2]", "not_an_object"),
    ('"turn_1 APPROVE"', "not_an_object"),
    # a repeated key, at the top or inside an unknown field: DuckDB reads the first, json the last
    (line("dup_top", decision="APPROVE")[:-1] + ', "decision": "REVISE"}', "duplicate_key"),
    (line("dup_deep")[:-1] + ', "meta": {"model": "a", "model": "b"}}', "duplicate_key"),
    (line("x", turn_id=...), "missing_turn_id"),
    (json.dumps({**OK, "turn_id": None}), "missing_turn_id"),
    (json.dumps({**OK, "turn_id": "   "}), "missing_turn_id"),
    (json.dumps({**OK, "turn_id": {"id": "t"}}), "invalid_turn_id"),
    (json.dumps({**OK, "turn_id": True}), "invalid_turn_id"),
    (line("no_ts", ts=...), "missing_ts"),
    (line("ts_ms", ts=1795082400000), "invalid_ts"),
    (line("ts_negative", ts=-1), "invalid_ts"),
    (line("ts_words", ts="yesterday"), "invalid_ts"),
    (line("ts_bool", ts=True), "invalid_ts"),
    (line("no_iteration", iteration=...), "missing_iteration"),
    (line("iteration_zero", iteration=0), "invalid_iteration"),
    (line("iteration_text", iteration="2"), "invalid_iteration"),
    (line("iteration_float", iteration=2.0), "invalid_iteration"),
    (line("no_decision", decision=...), "missing_decision"),
    (line("decision_typo", decision="APPROVED"), "invalid_decision"),
    (line("decision_number", decision=1), "invalid_decision"),
    (line("no_response", response=...), "missing_response"),
    (line("blank_response", response="  "), "missing_response"),
    (line("response_object", response={"text": "x"}), "invalid_response"),
    (line("query_list", query=["q"]), "invalid_query"),
    (line("hints_object", revision_hints={"hint": "x"}), "invalid_revision_hints"),
    (line("hints_mixed", revision_hints=["a", 2]), "invalid_revision_hints"),
    (line("focus_list", revision_focus=["tone"]), "invalid_revision_focus"),
]


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, pl.DataFrame]:
    root = tmp_path_factory.mktemp("raw")
    path = root / "revisions" / "2026-11-19" / "a.jsonl"
    path.parent.mkdir(parents=True)
    # a torn last line after all cases
    path.write_text("\n".join(c for c, _ in CASES) + '\n{"turn_id": "torn", "ts": 17', "utf-8")
    result = ingest_partition(
        revisions.RAW, [str(path)], raw_root=str(root), bronze_exclude=("line",)
    )
    return pl.read_parquet(result.bronze.path), pl.read_parquet(result.quarantine.path)


def test_every_line_gets_its_exact_reason(parsed: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    bronze, quarantine = parsed
    reasons = dict(quarantine.select("line_no", "reason").iter_rows())
    expected = {n: r for n, (_, r) in enumerate(CASES, start=1) if r is not None}
    expected[len(CASES) + 1] = "torn_last_line"
    assert reasons == expected
    assert bronze.height == sum(1 for _, r in CASES if r is None)
    assert set(reasons.values()) | {"duplicate_validation"} == set(QUARANTINE_REASONS)


def test_a_repeated_key_is_named(parsed: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    _, quarantine = parsed
    details = quarantine.filter(pl.col("reason") == "duplicate_key").get_column("detail")
    assert details.to_list() == ["repeated key: decision", "repeated key: model"]


def test_bronze_has_the_contract_schema(parsed: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    bronze, _ = parsed
    assert bronze.schema == VALIDATIONS_SCHEMA
    first = bronze.row(0, named=True)
    assert first["source_ref"] == "revisions/2026-11-19/a.jsonl:1"
    assert first["source"] == "revisions"


@pytest.mark.parametrize(("text", "reason"), CASES)
def test_pydantic_model_agrees_with_sql(
    text: str, reason: str | None, parsed: tuple[pl.DataFrame, pl.DataFrame]
) -> None:
    bronze, _ = parsed
    if reason is not None:
        with pytest.raises((ValidationError, DuplicateKeyError)):
            validate_json(RevisionValidation, text)
        return
    model = validate_json(RevisionValidation, text)
    row = bronze.filter(pl.col("turn_id") == model.turn_id).row(0, named=True)
    assert row["ts"] == pytest.approx(model.ts, abs=1e-6)
    assert row["iteration"] == model.iteration
    assert row["decision"] == model.decision.value
    assert row["query"] == model.query
    assert row["response"] == model.response
    assert row["revision_hints"] == model.revision_hints
    assert row["revision_focus"] == model.revision_focus
    assert json.loads(row["extra"]) == model.model_extra


def test_normalised_values(parsed: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    bronze, _ = parsed
    rows = {r["turn_id"]: r for r in bronze.iter_rows(named=True)}
    assert rows["ok_iso_offset"]["ts"] == TS
    assert rows["ok_iso_naive"]["ts"] == TS
    assert rows["ok_iso_z"]["ts"] == TS + 0.25
    assert rows["ok_lower_decision"]["decision"] == "APPROVE"
    assert rows["ok_hint_string"]["revision_hints"] == ["One hint"]
    assert rows["ok_no_hints"]["revision_hints"] == []
    assert rows["ok_blank_hints"]["revision_hints"] == ["a"]
    assert rows["ok_blank_hints"]["revision_focus"] is None
    assert json.loads(rows["ok_extra"]["extra"]) == {"model": "qwen2.5-7b", "latency_ms": 812}
    assert rows["ok_plain"]["extra"] == "{}"
    assert rows["1234"]["iteration"] == 1


def test_duplicates_keep_the_first_line(tmp_path: Path) -> None:
    path = tmp_path / "revisions" / "2026-11-19" / "b.jsonl"
    path.parent.mkdir(parents=True)
    first = line("t", iteration=2, decision="APPROVE")
    conflicting = line("t", iteration=2, decision="FAIL")
    path.write_text("\n".join([first, line("t"), first, conflicting]) + "\n", "utf-8")
    result = ingest_partition(revisions.RAW, [str(path)], raw_root=str(tmp_path))
    quarantine = pl.read_parquet(result.quarantine.path)
    bronze = pl.read_parquet(result.bronze.path)
    assert quarantine.select("line_no", "reason", "detail").rows() == [
        (
            3,
            "duplicate_validation",
            "repeats revisions/2026-11-19/b.jsonl:1 (first occurrence kept)",
        ),
        (
            4,
            "duplicate_validation",
            "conflicts with revisions/2026-11-19/b.jsonl:1 (first occurrence kept)",
        ),
    ]
    assert bronze.select("line_no", "decision").rows() == [(1, "APPROVE"), (2, "REVISE")]


def test_quarantine_details_name_the_field(parsed: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    _, quarantine = parsed
    details = dict(quarantine.select("line_no", "detail").iter_rows())
    number = {text: n for n, (text, _) in enumerate(CASES, start=1)}
    assert details[number[line("decision_typo", decision="APPROVED")]] == 'decision = "APPROVED"'
    assert details[number[line("ts_ms", ts=1795082400000)]] == "ts = 1795082400000"
    assert details[number[line("no_ts", ts=...)]] == "ts is absent, null or blank"
    assert details[number["[1, 2]"]] == "JSON array where an object was expected"
    assert details[number['{"turn_id": "bad_json", "decision": REVISE}']] == (
        "line is not valid JSON"
    )
    assert details[len(CASES) + 1] == (
        "last line of the file is not valid JSON (cut off while being written?)"
    )
