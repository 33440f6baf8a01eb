"""Raw trace lines → bronze events + quarantine: every bad-record kind gets its exact reason."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl

from distill_assets.contracts import traces
from distill_assets.defs.ingest import ingest_partition
from distill_assets.lib.rawfiles import PROBLEM_SCHEMA
from tests.unit.traces.builder import success_run, text

GOOD = {"ts": 1.5, "kind": "llm_usage", "payload": {"t": 0}, "run_id": "r1", "meta": {"a": 1}}


def line(**changes: object) -> str:
    event = {**GOOD, **changes}
    return json.dumps({k: v for k, v in event.items() if v is not DROP})


DROP = object()

# (line, reason) for every quarantine reason but the positional torn_last_line
BAD_LINES = [
    ('{"ts": 1.5, "kind": "tool_result", "payload": {"t": 3, "obs": ', "invalid_json"),
    ('["llm_usage", {"t": 0}]', "not_an_object"),
    ('"just a string"', "not_an_object"),
    (line()[:-1] + ', "kind": "run_start"}', "duplicate_key"),
    (
        '{"ts": 1.5, "kind": "tool_result", "payload": {"t": 0, "obs": {"ok": true, "ok": false}}, '
        '"run_id": "r1"}',
        "duplicate_key",
    ),
    (line(kind=DROP), "missing_kind"),
    (line(kind=7), "invalid_kind"),
    (line(kind=""), "invalid_kind"),
    (line(type="llm_request"), "conflicting_kind"),
    (line(run_id=DROP), "missing_run_id"),
    (line(run_id=""), "invalid_run_id"),
    (line(run_id=12), "invalid_run_id"),
    (line(ts=DROP), "missing_ts"),
    (line(ts="2026-11-19T10:00:00Z"), "invalid_ts"),
    (line(kind="run_start", payload=DROP), "missing_payload"),
    (line(kind="run_start", payload="goal"), "invalid_payload"),
    (line(kind="tests", payload=[True]), "invalid_payload"),
    (line(meta="quixbugs"), "invalid_meta"),
    (line(kind="tool_result", payload={"tool": "grep"}), "missing_t"),
    (line(kind="llm_action", payload={"t": "3"}), "missing_t"),
    (line(kind="llm_request", payload={"t": 0, "messages": {}}), "invalid_messages"),
    (line(kind="llm_request", payload={"t": 0, "messages": []}), "invalid_messages"),
]


def ingest(tmp_path: Path, files: dict[str, str | bytes]) -> tuple[pl.DataFrame, pl.DataFrame]:
    raw = tmp_path / "raw"
    for name, content in files.items():
        path = raw / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    paths = sorted(str(p) for p in raw.rglob("*") if p.is_file())
    result = ingest_partition(traces.RAW, paths, raw_root=str(raw))
    bronze = pl.read_parquet(result.bronze.path)
    quarantine = pl.read_parquet(result.quarantine.path)
    assert result.stats.records == bronze.height + quarantine.height
    assert result.quarantine_by_reason == dict(quarantine.group_by("reason").len().iter_rows())
    return bronze, quarantine


def test_each_bad_line_kind_is_quarantined_with_its_reason(tmp_path: Path) -> None:
    body = "".join(f"{bad}\n" for bad, _ in BAD_LINES) + line() + "\n"
    bronze, quarantine = ingest(tmp_path, {"traces/d/bad.jsonl": body})
    assert quarantine.sort("line_no")["reason"].to_list() == [reason for _, reason in BAD_LINES]
    assert quarantine["line_no"].to_list() == list(range(1, len(BAD_LINES) + 1))
    assert set(quarantine["source"]) == {"traces"}
    assert quarantine["raw_line"].to_list() == [bad for bad, _ in BAD_LINES]
    details = dict(zip(quarantine["reason"], quarantine["detail"], strict=True))
    assert details["invalid_ts"] == 'ts is "2026-11-19T10:00:00Z"'
    assert details["invalid_meta"] == "meta is varchar"
    assert details["conflicting_kind"] == 'kind "llm_usage" vs type "llm_request"'
    assert details["duplicate_key"] == "repeated key: ok"
    assert bronze.height == 1
    assert bronze.row(0, named=True) | {"event": None} == {
        "source_file": "traces/d/bad.jsonl",
        "line_no": len(BAD_LINES) + 1,
        "ts": 1.5,
        "kind": "llm_usage",
        "run_id": "r1",
        "t": 0,
        "task_id": None,
        "model": None,
        "goal": None,
        "action": None,
        "tool": None,
        "args": None,
        "ok": None,
        "event": None,
        "utf8_replaced": False,
    }


def test_step_fields_parsed_with_the_envelope(tmp_path: Path) -> None:
    bronze, _ = ingest(tmp_path, {"traces/d/run.jsonl": text(success_run("s1"))})
    fields = bronze.select("kind", "t", "action", "tool", "args", "ok").rows()
    assert fields[:6] == [
        ("run_start", None, None, None, None, None),
        ("llm_request", 0, None, None, None, None),
        ("llm_action", 0, "tool_call", "list_files", '{"rel_dir":".","max_files":50}', None),
        ("tool_result", 0, None, "list_files", None, True),
        ("llm_request", 1, None, None, None, None),
        (
            "llm_action",
            1,
            "tool_call",
            "read_file",
            '{"rel_path":"quicksort.py","max_chars":4000}',
            None,
        ),
    ]
    assert fields[-4:] == [
        ("llm_request", 3, None, None, None, None),
        ("llm_action", 3, "final", None, None, None),
        ("final", None, None, None, None, True),
        ("run_end", None, None, None, None, True),
    ]
    assert bronze.filter(pl.col("kind") == "tests")["ok"].to_list() == [True]
    assert set(bronze["goal"]) == {"Fix quicksort.py"}
    assert set(bronze["model"]) == {"Qwen/Qwen2.5-7B-Instruct-Turbo"}
    assert set(bronze["task_id"]) == {"quixbugs/quicksort"}


def test_torn_last_line_but_invalid_json_elsewhere(tmp_path: Path) -> None:
    torn = line(kind="llm_request")[:40]
    body = f"{torn}\n{line()}\n{torn}"
    bronze, quarantine = ingest(tmp_path, {"traces/d/a.jsonl": body})
    assert quarantine.sort("line_no").select("line_no", "reason").rows() == [
        (1, "invalid_json"),
        (3, "torn_last_line"),
    ]
    assert bronze["line_no"].to_list() == [2]


def test_bom_crlf_blank_lines_invalid_utf8_alias_and_extra_fields(tmp_path: Path) -> None:
    crlf = "\ufeff" + line() + "\r\n\r\n   \r\n" + line(run_id="r2") + "\r\n"
    broken = line(kind="tool_result", payload={"t": 1, "obs": {"output": "MARK"}}).encode()
    broken = broken.replace(b"MARK", b"\xff\xfe")
    alias = json.dumps({"ts": 2, "type": "run_start", "payload": {"goal": "g"}, "run_id": "r3"})
    extra = json.dumps({**GOOD, "host": "worker-7"})
    bronze, quarantine = ingest(
        tmp_path,
        {
            "traces/d/crlf.jsonl": crlf,
            "traces/d/utf8.jsonl": broken + b"\n",
            "traces/d/more.jsonl.gz": gzip.compress(f"{alias}\n{extra}\n".encode(), mtime=0),
        },
    )
    assert quarantine.is_empty()
    rows = bronze.select("source_file", "line_no", "kind", "run_id", "utf8_replaced").rows()
    assert rows == [
        ("traces/d/crlf.jsonl", 1, "llm_usage", "r1", False),
        ("traces/d/crlf.jsonl", 4, "llm_usage", "r2", False),
        ("traces/d/more.jsonl.gz", 1, "run_start", "r3", False),
        ("traces/d/more.jsonl.gz", 2, "llm_usage", "r1", False),
        ("traces/d/utf8.jsonl", 1, "tool_result", "r1", True),
    ]
    assert bronze["event"][0] == line()
    assert json.loads(bronze["event"][3])["host"] == "worker-7"
    assert "\ufffd\ufffd" in bronze["event"][4]


def test_multi_megabyte_event_and_task_id(tmp_path: Path) -> None:
    big = line(kind="tool_result", payload={"t": 1, "obs": {"ok": True, "output": "x" * 5_000_000}})
    tagged = line(meta={"task_id": "quixbugs/gcd"})
    bronze, quarantine = ingest(tmp_path, {"traces/d/big.jsonl": f"{big}\n{tagged}\n"})
    assert quarantine.is_empty()
    assert bronze["event"].str.len_bytes().to_list() == [len(big), len(tagged)]
    assert bronze["task_id"].to_list() == [None, "quixbugs/gcd"]


def test_bronze_has_the_contract_columns(tmp_path: Path) -> None:
    body = text(success_run("s1")) + "".join(f"{bad}\n" for bad, _ in BAD_LINES) + '{"ts": 1'
    files = {"traces/d/a.jsonl": body, "traces/d/b.jsonl": "\ufeff" + line() + "\r\n\r\n"}
    bronze, quarantine = ingest(tmp_path, files)
    assert bronze.schema == pl.Schema(
        {
            "source_file": pl.String,
            "line_no": pl.Int64,
            "ts": pl.Float64,
            "kind": pl.String,
            "run_id": pl.String,
            "t": pl.Int64,
            "task_id": pl.String,
            "model": pl.String,
            "goal": pl.String,
            "action": pl.String,
            "tool": pl.String,
            "args": pl.String,
            "ok": pl.Boolean,
            "event": pl.String,
            "utf8_replaced": pl.Boolean,
        }
    )
    assert bronze.columns == list(traces.BRONZE_COLUMNS)
    assert quarantine.columns == PROBLEM_SCHEMA.names
    assert bronze["event"].to_list()[-1] == line()


def test_bronze_is_deterministic(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "traces"
    raw.mkdir(parents=True)
    (raw / "a.jsonl").write_text(text(success_run("s1")) + "not json\n")
    paths = [str(raw / "a.jsonl")]
    first = ingest_partition(traces.RAW, paths, raw_root=str(tmp_path / "raw"))
    second = ingest_partition(traces.RAW, paths, raw_root=str(tmp_path / "raw"))
    assert first.bronze.path.read_bytes() == second.bronze.path.read_bytes()
    assert first.quarantine.path.read_bytes() == second.quarantine.path.read_bytes()


def test_files_are_read_in_path_order_whatever_order_they_are_given_in(tmp_path: Path) -> None:
    raw = tmp_path / "raw" / "traces"
    raw.mkdir(parents=True)
    (raw / "a.jsonl").write_text(text(success_run("s1")))
    (raw / "b.jsonl").write_text(text(success_run("s2")))
    paths = [str(raw / "b.jsonl"), str(raw / "a.jsonl")]
    given = ingest_partition(
        traces.RAW, paths, raw_root=str(tmp_path / "raw"), workdir=_dir(tmp_path / "g")
    )
    ordered = ingest_partition(
        traces.RAW, sorted(paths), raw_root=str(tmp_path / "raw"), workdir=_dir(tmp_path / "o")
    )
    bronze = pl.read_parquet(given.bronze.path)
    assert bronze.equals(pl.read_parquet(ordered.bronze.path))
    keys = list(bronze.select("source_file", "line_no").iter_rows())
    assert keys == sorted(keys)
    assert keys[0] == ("traces/a.jsonl", 1)


def _dir(path: Path) -> Path:
    path.mkdir()
    return path
