"""The raw contract (pydantic) and the ingest SQL agree on every kind of escalation line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import polars as pl
import pytest
from pydantic import ValidationError

from distill_assets.contracts.escalations import (
    RAW,
    RECORD_SCHEMA,
    Interaction,
    derived_id,
    parse_iso_timestamp,
)
from distill_assets.defs.escalations.records import ingest_records
from distill_assets.defs.ingest import UsualExtras
from distill_assets.lib.rawfiles import RawLineReader
from distill_assets.lib.sql import connect
from tests.unit.strict_json import validate_json

BASE = {"created_at": 1795076100, "query": "q", "claude_response": "r"}


def line(**fields: object) -> str:
    record = {**BASE, **fields}
    return json.dumps({k: v for k, v in record.items() if v is not ...})


# (raw line, expected quarantine reason or None for an accepted record)
CASES: list[tuple[str, str | None]] = [
    (line(), None),
    (line(created_at=..., timestamp="2026-11-19T08:15:00Z"), None),
    (line(created_at=..., timestamp="2026-11-19 10:15:00.250+02:00"), None),
    (line(created_at=..., timestamp="2026-11-19T08:15"), None),
    (line(created_at=1795076100.5, timestamp="2026-11-19T08:15:00-0500"), None),
    (line(id="esc-1", session_id="s", sam_confidence=1, domain="code", complexity=10), None),
    (
        line(query="q6", sam_confidence=0, sam_attempt=None, reasoning_type="tool_use", tool="x"),
        None,
    ),
    ("{not json", "invalid_json"),
    ("[1, 2]", "not_an_object"),
    ('"just a string"', "not_an_object"),
    ("null", "not_an_object"),
    (line()[:-1] + ', "query": "other"}', "duplicate_key"),
    (line(tool={"name": "a"})[:-2] + ', "name": "b"}}', "duplicate_key"),
    (line(query=...), "missing_query"),
    (line(query=None), "missing_query"),
    (line(query="  "), "missing_query"),
    (line(query={"text": "q"}), "invalid_query"),
    (line(claude_response=...), "missing_claude_response"),
    (line(claude_response=""), "missing_claude_response"),
    (line(claude_response=[{"type": "text", "text": "r"}]), "invalid_claude_response"),
    (line(created_at=...), "missing_timestamp"),
    (line(created_at=None, timestamp=None), "missing_timestamp"),
    (line(created_at="yesterday"), "invalid_timestamp"),
    (line(created_at=-1), "invalid_timestamp"),
    (line(created_at=1795076100000), "invalid_timestamp"),
    (line(created_at=True), "invalid_timestamp"),
    (line(created_at=..., timestamp="19/11/2026 08:15:00"), "invalid_timestamp"),
    (line(created_at=..., timestamp="2026-13-19T08:15:00Z"), "invalid_timestamp"),
    (line(created_at=..., timestamp="2026-11-19"), "invalid_timestamp"),
    (line(timestamp="not a time"), "invalid_timestamp"),
    (line(sam_confidence=1.5), "invalid_sam_confidence"),
    (line(sam_confidence=-0.1), "invalid_sam_confidence"),
    (line(sam_confidence="high"), "invalid_sam_confidence"),
    (line(sam_confidence=False), "invalid_sam_confidence"),
    (line(id=""), "invalid_id"),
    (line(id=123), "invalid_id"),
    (line(session_id=42), "invalid_session_id"),
    (line(query_context=[{"role": "user", "content": "c"}]), "invalid_query_context"),
    (line(sam_attempt={"text": "a"}), "invalid_sam_attempt"),
    (line(sam_reasoning=["a"]), "invalid_sam_reasoning"),
    (line(domain="coding"), "invalid_domain"),
    (line(domain=1), "invalid_domain"),
    (line(subdomain=["python"]), "invalid_subdomain"),
    (line(task_type=7), "invalid_task_type"),
    (line(complexity=0), "invalid_complexity"),
    (line(complexity=11), "invalid_complexity"),
    (line(complexity=7.5), "invalid_complexity"),
    (line(complexity="5"), "invalid_complexity"),
    (line(reasoning_type="cot"), "invalid_reasoning_type"),
]


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    """Every case as its own file (no duplicate ids across cases), parsed by the ingest SQL."""
    root = tmp_path_factory.mktemp("raw")
    paths = []
    for index, (text, _) in enumerate(CASES):
        path = root / "escalations" / "2026-11-19" / f"case{index:03d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n{}\n", encoding="utf-8")
        paths.append(str(path))
    result = ingest_records(paths, raw_root=str(root))
    bronze = pl.read_parquet(result.bronze.path)
    quarantine = pl.read_parquet(result.quarantine.path)
    return pl.concat(
        [
            bronze.select("source_file", "line_no", pl.lit(None, pl.String).alias("reason")),
            quarantine.select("source_file", "line_no", "reason"),
        ]
    ).filter(pl.col("line_no") == 1)


@pytest.mark.parametrize(("index", "case"), list(enumerate(CASES)))
def test_sql_reason_and_pydantic_agree(
    parsed: pl.DataFrame, index: int, case: tuple[str, str | None]
) -> None:
    text, expected = case
    row = parsed.filter(pl.col("source_file").str.ends_with(f"case{index:03d}.jsonl"))
    assert row.get_column("reason").to_list() == [expected]
    if expected is None:
        validate_json(Interaction, text)
    else:
        with pytest.raises((ValidationError, ValueError)):
            validate_json(Interaction, text)


def test_bronze_schema_and_values_match_the_contract(tmp_path: Path) -> None:
    texts = [text for text, reason in CASES if reason is None]
    path = tmp_path / "escalations" / "2026-11-19" / "good.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    result = ingest_records([str(path)], raw_root=str(tmp_path))
    bronze = pl.read_parquet(result.bronze.path)
    assert bronze.schema == RECORD_SCHEMA
    models = [Interaction.model_validate_json(t) for t in texts]
    assert bronze.get_column("id").to_list() == [m.escalation_id for m in models]
    assert bronze.get_column("created_at").to_list() == [m.event_time for m in models]
    assert bronze.get_column("id_derived").to_list() == [m.id is None for m in models]
    extras = [json.loads(e) if e else None for e in bronze.get_column("extra").to_list()]
    assert extras == [m.model_extra or None for m in models]
    assert extras[6] == {"tool": "x"}


def test_derived_id_is_sha256_of_query_then_timestamp_text() -> None:
    expected = hashlib.sha256(b"What is 2+2?1795076100.0").hexdigest()[:16]
    assert derived_id("What is 2+2?", "1795076100.0") == expected == "9ca40365a8e7575d"
    unix = Interaction.model_validate(
        {"created_at": 1795076100, "query": "What is 2+2?", "claude_response": "4"}
    )
    assert unix.timestamp_text == "1795076100.0"
    assert unix.escalation_id == expected
    iso = Interaction.model_validate(
        {"created_at": 1, "timestamp": "2026-11-19T08:15:00Z", "query": "q", "claude_response": "r"}
    )
    assert iso.timestamp_text == "2026-11-19T08:15:00Z"
    assert iso.escalation_id == derived_id("q", "2026-11-19T08:15:00Z")
    assert iso.event_time == 1.0


def test_duckdb_double_text_is_python_float_text() -> None:
    values = [1795076100.0, 1795076100.5, 1795076100.123, 1795076100.123456, 0.1, 1e-05, 3e15]
    con = duckdb.connect()
    texts = [
        con.execute("SELECT CAST($v::DOUBLE AS VARCHAR)", {"v": v}).fetchone()[0] for v in values
    ]
    assert texts == [str(v) for v in values]


def test_iso_parsing_does_not_depend_on_the_session_time_zone(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(
        line(created_at=..., timestamp="2026-11-19T08:15:00")
        + "\n"
        + line(created_at=..., timestamp="2026-11-19T08:15:00+02:00")
        + "\n",
        encoding="utf-8",
    )
    results = []
    for zone in ("UTC", "America/New_York", "Asia/Tokyo"):
        con = connect()
        con.execute(f"SET TimeZone = '{zone}'")
        con.register("raw_lines", RawLineReader([str(path)]).reader())
        statement = RAW.parse()
        params = UsualExtras(con).params()
        frame = pl.from_arrow(con.sql(statement, params=params).to_arrow_table())
        results.append(frame.get_column("created_at").to_list())
    expected = [parse_iso_timestamp("2026-11-19T08:15:00"), 1795068900.0]
    assert results == [expected] * 3
    assert expected[0] == 1795076100.0


def test_duplicate_ids_keep_the_first_by_file_then_line(tmp_path: Path) -> None:
    folder = tmp_path / "escalations" / "2026-11-19"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text(
        line(id="x1") + "\n" + line(id="x1", claude_response="retry") + "\n", encoding="utf-8"
    )
    (folder / "b.jsonl").write_text(line(id="x1") + "\n" + line() + "\n", encoding="utf-8")
    (folder / "c.jsonl").write_text(line() + "\n", encoding="utf-8")
    paths = sorted(str(p) for p in folder.iterdir())
    result = ingest_records(paths, raw_root=str(tmp_path))
    bronze = pl.read_parquet(result.bronze.path)
    quarantine = pl.read_parquet(result.quarantine.path)
    assert bronze.select("source_file", "line_no", "id").rows() == [
        ("escalations/2026-11-19/a.jsonl", 1, "x1"),
        ("escalations/2026-11-19/b.jsonl", 2, derived_id("q", "1795076100.0")),
    ]
    assert quarantine.select("source_file", "line_no", "reason", "detail").rows() == [
        (
            "escalations/2026-11-19/a.jsonl",
            2,
            "duplicate_id",
            "id x1 first seen at escalations/2026-11-19/a.jsonl:1",
        ),
        (
            "escalations/2026-11-19/b.jsonl",
            1,
            "duplicate_id",
            "id x1 first seen at escalations/2026-11-19/a.jsonl:1",
        ),
        (
            "escalations/2026-11-19/c.jsonl",
            1,
            "duplicate_id",
            f"id {derived_id('q', '1795076100.0')} first seen at escalations/2026-11-19/b.jsonl:2",
        ),
    ]


def test_torn_last_line_only_at_the_end_of_a_file(tmp_path: Path) -> None:
    folder = tmp_path / "escalations" / "2026-11-19"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text(
        '{"query": "q", "cla\n' + line() + '\n{"query": "q2", "c', encoding="utf-8"
    )
    result = ingest_records([str(folder / "a.jsonl")], raw_root=str(tmp_path))
    assert result.bronze_rows == 1
    assert result.quarantine_by_reason == {"invalid_json": 1, "torn_last_line": 1}


def test_quarantine_keeps_the_raw_line_and_a_detail(tmp_path: Path) -> None:
    path = tmp_path / "escalations" / "2026-11-19" / "a.jsonl"
    path.parent.mkdir(parents=True)
    bad = line(created_at=1795076100000)
    path.write_text(bad + "\n" + line(sam_confidence="high") + "\n[]\n", encoding="utf-8")
    result = ingest_records([str(path)], raw_root=str(tmp_path))
    quarantine = pl.read_parquet(result.quarantine.path)
    assert quarantine.columns == [
        "source",
        "source_file",
        "line_no",
        "reason",
        "detail",
        "raw_line",
    ]
    assert quarantine.select("reason", "detail").rows() == [
        ("invalid_timestamp", "created_at = 1795076100000"),
        ("invalid_sam_confidence", 'sam_confidence = "high"'),
        ("not_an_object", "json array"),
    ]
    assert quarantine.get_column("raw_line").to_list()[0] == bad
    assert quarantine.get_column("source").unique().to_list() == ["escalations"]


def test_empty_partition_gives_empty_tables() -> None:
    result = ingest_records([], raw_root="/nonexistent")
    assert pl.read_parquet(result.bronze.path).schema == RECORD_SCHEMA
    assert result.bronze_rows == 0
    assert result.quarantine_rows == 0
    assert pl.read_parquet(result.quarantine.path).height == 0
