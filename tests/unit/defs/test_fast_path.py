"""The ingest's fast parse gives bronze and quarantine files byte-identical to the exact parse."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pytest

from distill_assets.contracts.escalations import RAW as ESCALATIONS
from distill_assets.contracts.revisions import RAW as REVISIONS
from distill_assets.contracts.telemetry import RAW as TELEMETRY
from distill_assets.defs import ingest
from distill_assets.defs.player_ids import PlayerIdHasher
from distill_assets.defs.telemetry.assets import parse_params
from distill_assets.lib import rawfiles
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.lib.sql import connect
from distill_assets.samples import escalations, revisions, telemetry

DAY = "2026-11-19"
# a record over this is too_large (the reader's limit, lowered for the test)
LIMIT = 6000
SOURCES = {
    "escalations": (escalations, ESCALATIONS),
    "revisions": (revisions, REVISIONS),
    "telemetry": (telemetry, TELEMETRY),
}
# a record of each source that its contract accepts, planted with the changes below
BASE: dict[str, dict[str, object]] = {
    "escalations": {"query": "planted", "claude_response": "an answer", "created_at": 1795076100.5},
    "revisions": {
        "turn_id": "t-planted",
        "ts": 1795076100,
        "iteration": 1,
        "decision": "APPROVE",
        "response": "ok",
    },
    "telemetry": {
        "event_id": "evt-planted",
        "event_type": "dialogue_turn",
        "player_id": "player-planted-7",
        "server_ts": 1795076100.25,
        "payload": {"conversation_id": "c1", "speaker": "npc", "text": "Hi", "turn_index": 0},
    },
}
# a field of each source whose value the fast parse never reads for repeated keys
SCALAR = {"escalations": "query", "revisions": "response", "telemetry": "event_id"}
REPEATED = '{"k":1,"k":2}'


def _line(source: str, number: int, body: str = "", *, without: str = "", **changes: object) -> str:
    """A planted record: the source's base record, made unique by `number`, with `changes`.

    `body` (JSON text, `"name": value` pairs) is appended to the object, `without`'s field left
    out first (Python's `json` cannot write a repeated key).
    """
    record = {k: v for k, v in BASE[source].items() if k != without} | changes
    key = {"escalations": "query", "revisions": "turn_id", "telemetry": "event_id"}[source]
    if key not in changes and key != without:
        record[key] = f"{record[key]}-{number}"
    text = json.dumps(record)
    return text[:-1] + body + "}" if body else text


def _planted(source: str) -> list[bytes]:
    """Lines holding every way a record can repeat a key, and lines each path must accept."""
    lines = [
        _line(source, 1, f', "zz_meta": {REPEATED}'),
        _line(source, 2, f', "zz_meta": [1, {REPEATED}]'),
        _line(source, 3, ', "zz_meta": {"ok": {"a": [1, {"b": 2}]}}'),
        _line(source, 4, f', "yy": 1, "zz_meta": {{"q": [{REPEATED}]}}'),
        _line(source, 5, ', "zz_meta": 1, "zz_meta": 2'),
        _line(source, 6, f', "{SCALAR[source]}": "again"'),
        _line(source, 7, f', "{SCALAR[source]}": [{REPEATED}]', without=SCALAR[source]),
        _line(source, 8, ', "zz_meta": "{\\"k\\":1,\\"k\\":2}"'),
        _line(source, 9, ', "zz_meta": {"k": 1, "\\u006b": 2}'),
        _line(source, 10, ', "zz_meta": {"k": 1}'),
        _line(source, 11, "", **{SCALAR[source]: "x" * (LIMIT + 10)}),
        _line(source, 12, ', "zz_meta": "caf\udce9"'),
        "[1, 2]",
        '{"torn": ',
        "   ",
    ]
    if source == "telemetry":
        payload = json.dumps(BASE["telemetry"]["payload"])[:-1]
        lines += [
            _line(source, 20, f', "payload": {payload}, "mood": {REPEATED}}}', without="payload"),
            _line(
                source, 21, f', "payload": {payload}, "m": [{{}}, {REPEATED}]}}', without="payload"
            ),
            _line(source, 22, f', "session_id": [{REPEATED}]'),
            _line(source, 23, "", schema_version={"v": {"w": 1}}),
            _line(source, 24, f', "schema_version": {REPEATED}'),
            _line(source, 25, ', "player_id": "player-planted-8"'),
            _line(source, 26, f', "payload": {payload}, "mood": {{"k": 1}}}}', without="payload"),
        ]
    if source == "revisions":
        lines += [_line(source, 20, f', "revision_hints": ["a", {REPEATED}]')]
    raw = [line.encode("utf-8", "surrogateescape") for line in lines]
    # the same records again (repeats of their ids) and a record repeating an accepted one
    return raw + raw[:4] + [raw[9]]


def _day(source: str, root: Path) -> None:
    """A generated day (every quarantine kind) with planted lines and an undecodable file."""
    generator, _ = SOURCES[source]
    generator.generate_day(root, DAY, 2, 5)
    folder = root / source / DAY
    (folder / "planted-a.jsonl").write_bytes(b"\n".join(_planted(source)) + b"\n")
    (folder / "planted-b.jsonl.gz").write_bytes(b"not gzip at all\n")


def _digests(
    source: str, root: Path, tmp: Path, exact: bool, chunk_bytes: int | None = None
) -> tuple[str, str, dict[str, int]]:
    _, contract = SOURCES[source]
    if chunk_bytes is not None:
        contract = dataclasses.replace(contract, chunk_bytes=chunk_bytes)
    params = parse_params(PlayerIdHasher(key="test"))[0] if source == "telemetry" else {}
    workdir = tmp / f"{'exact' if exact else 'fast'}-{chunk_bytes}"
    workdir.mkdir()
    result = ingest.ingest_partition(
        contract,
        list_raw_files(str(root), source, DAY),
        raw_root=str(root),
        params=params,
        bronze_exclude=("line",),
        workdir=workdir,
        exact=exact,
    )
    bronze = hashlib.sha256(result.bronze.path.read_bytes()).hexdigest()
    quarantine = hashlib.sha256(result.quarantine.path.read_bytes()).hexdigest()
    return bronze, quarantine, result.quarantine_by_reason


@pytest.fixture(autouse=True)
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Records over `LIMIT` bytes are too_large."""
    monkeypatch.setattr(
        ingest, "RawLineReader", functools.partial(rawfiles.RawLineReader, max_record_bytes=LIMIT)
    )


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_fast_and_exact_paths_write_the_same_bytes(source: str, tmp_path: Path) -> None:
    _day(source, tmp_path / "raw")
    exact = _digests(source, tmp_path / "raw", tmp_path, exact=True)
    assert _digests(source, tmp_path / "raw", tmp_path, exact=False) == exact
    reasons = exact[2]
    # every line reason, the reader's problems and the repeats are among them
    for reason in ("invalid_json", "not_an_object", "duplicate_key", "too_large"):
        assert reasons[reason] > 0, reason
    assert reasons["undecodable_file"] == 1
    assert reasons["torn_last_line"] >= 1
    assert (
        sum(n for r, n in reasons.items() if r.startswith("duplicate_")) > reasons["duplicate_key"]
    )


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_many_small_chunks_give_the_same_bytes(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _day(source, tmp_path / "raw")
    whole = _digests(source, tmp_path / "raw", tmp_path, exact=True)
    monkeypatch.setattr(rawfiles, "BLOCK_BYTES", 64 << 10)
    assert _digests(source, tmp_path / "raw", tmp_path, exact=False, chunk_bytes=1) == whole


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_struct_of_usual_extras_is_read_for_repeated_keys(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _day(source, tmp_path / "raw")
    # the planted unknown field is the usual one: its value is read from the struct
    monkeypatch.setattr(
        ingest.UsualExtras,
        "params",
        lambda self: {"extra_sequence": ["zz_meta"], "extra_structure": '{"zz_meta": "JSON"}'},
    )
    exact = _digests(source, tmp_path / "raw", tmp_path, exact=True)
    assert _digests(source, tmp_path / "raw", tmp_path, exact=False) == exact


def _parsed(statement: str, lines: list[bytes], params: dict[str, object]) -> pa.Table:
    con = connect(private=True)
    con.register(
        "raw_lines",
        pa.table(
            {
                "source_file": ["a.jsonl"] * len(lines),
                "line_no": list(range(1, len(lines) + 1)),
                "line": [line.decode("utf-8", "replace") for line in lines],
                "utf8_replaced": [False] * len(lines),
                "is_last_line": [False] * len(lines),
            }
        ),
    )
    bound = params | {"extra_sequence": ["zz_meta"], "extra_structure": '{"zz_meta": "JSON"}'}
    return con.execute(statement, bound).to_arrow_table()


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_the_fast_parse_gives_the_exact_rows_of_every_planted_line(source: str) -> None:
    _, contract = SOURCES[source]
    assert contract.fast_parse is not None
    params = parse_params(PlayerIdHasher(key="test"))[0] if source == "telemetry" else {}
    lines = _planted(source)
    exact = _parsed(contract.parse(), lines, params)
    assert _parsed(contract.fast_parse(), lines, params).equals(exact)
    reasons = exact.column("quarantine_reason").to_pylist()[:12]
    # accepted: 3, 8 (a repeated key inside a string), 10, 11 (long) and 12 (invalid UTF-8)
    assert [i for i, r in enumerate(reasons, 1) if r is None] == [3, 8, 10, 11, 12]
    assert [r for r in reasons if r is not None] == ["duplicate_key"] * 7
