"""The shared ingest gives the same bronze and quarantine however the lines are chunked."""

from __future__ import annotations

import dataclasses
import gzip
import json
import zlib
from pathlib import Path

import polars as pl
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
SOURCES = {
    "escalations": (escalations, ESCALATIONS, "duplicate_id"),
    "revisions": (revisions, REVISIONS, "duplicate_validation"),
    "telemetry": (telemetry, TELEMETRY, "duplicate_event_id"),
}


def _ingest(
    source: str, root: Path, chunk_bytes: int | None = None
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, int]]:
    _, contract, _ = SOURCES[source]
    if chunk_bytes is not None:
        contract = dataclasses.replace(contract, chunk_bytes=chunk_bytes)
    params = {
        "escalations": {},
        "revisions": {},
        "telemetry": parse_params(PlayerIdHasher(key="test"))[0],
    }[source]
    result = ingest.ingest_partition(
        contract,
        list_raw_files(str(root), source, DAY),
        raw_root=str(root),
        params=params,
        bronze_exclude=("line",),
    )
    bronze = pl.read_parquet(result.bronze.path)
    quarantine = pl.read_parquet(result.quarantine.path)
    assert bronze.height == result.bronze_rows
    assert quarantine.height == result.quarantine_rows
    return bronze, quarantine, result.quarantine_by_reason


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_small_chunks_give_the_same_tables(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator, _, duplicate_reason = SOURCES[source]
    generator.generate_day(tmp_path, DAY, 3, 7)
    bronze, quarantine, reasons = _ingest(source, tmp_path)
    # 16 KiB blocks, one chunk per block: duplicates are found across chunks and files
    monkeypatch.setattr(rawfiles, "BLOCK_BYTES", 16 << 10)
    small_bronze, small_quarantine, small_reasons = _ingest(source, tmp_path, chunk_bytes=1)
    assert reasons[duplicate_reason] > 0
    assert small_reasons == reasons
    assert small_bronze.equals(bronze)
    assert small_quarantine.equals(quarantine)
    assert bronze.select("source_file", "line_no").rows() == sorted(
        bronze.select("source_file", "line_no").rows()
    )


def test_a_duplicate_in_a_later_chunk_names_the_first_record(tmp_path: Path) -> None:
    folder = tmp_path / "revisions" / DAY
    folder.mkdir(parents=True)
    first = (
        '{"turn_id": "t1", "ts": 1795082400, "iteration": 1, "decision": "REVISE", "response": "r"}'
    )
    conflicting = first.replace('"r"', '"other"')
    (folder / "a.jsonl").write_text(first + "\n", encoding="utf-8")
    (folder / "b.jsonl").write_text(first + "\n" + conflicting + "\n", encoding="utf-8")
    _, quarantine, reasons = _ingest("revisions", tmp_path, chunk_bytes=1)
    assert reasons == {"duplicate_validation": 2}
    assert quarantine.select("source_file", "line_no", "detail").rows() == [
        (
            f"revisions/{DAY}/b.jsonl",
            1,
            f"repeats revisions/{DAY}/a.jsonl:1 (first occurrence kept)",
        ),
        (
            f"revisions/{DAY}/b.jsonl",
            2,
            f"conflicts with revisions/{DAY}/a.jsonl:1 (first occurrence kept)",
        ),
    ]


def _escalation_lines(file: str) -> list[str]:
    return [
        json.dumps(
            {
                "query": f"{file} q{i}",
                "claude_response": f"r{i} " * 50,
                "timestamp": f"{DAY}T00:00:00Z",
            }
        )
        for i in range(2000)
    ]


def test_a_truncated_archive_keeps_the_records_before_the_damage(tmp_path: Path) -> None:
    folder = tmp_path / "escalations" / DAY
    folder.mkdir(parents=True)
    a_lines, b_lines = _escalation_lines("a"), _escalation_lines("b")
    a_text, b_text = (
        "".join(f"{line}\n" for line in lines).encode() for lines in (a_lines, b_lines)
    )
    # a gzip member of lines 1-1200 and 40 bytes of line 1201, then the header of the next one cut
    cut = sum(len(line) + 1 for line in a_lines[:1200]) + 40
    (folder / "a.jsonl.gz").write_bytes(
        gzip.compress(a_text[:cut], mtime=0) + gzip.compress(a_text[cut:], mtime=0)[:4]
    )
    # one gzip member cut in its data (8,000 of ~17,200 bytes), inside the first 32 MiB block; what
    # it decompresses to is what zlib, the reference decoder, gives (940 lines and 16 bytes here)
    b_data = gzip.compress(b_text, mtime=0)[:8000]
    (folder / "b.jsonl.gz").write_bytes(b_data)
    b_decompressed = zlib.decompressobj(31).decompress(b_data)
    b_kept = b_decompressed.count(b"\n")
    b_cut = b_decompressed[b_decompressed.rfind(b"\n") + 1 :].decode()
    assert 0 < b_kept < len(b_lines)
    bronze, quarantine, reasons = _ingest("escalations", tmp_path)
    assert reasons == {"undecodable_file": 2}
    assert bronze.group_by("source_file").len().sort("source_file").rows() == [
        (f"escalations/{DAY}/a.jsonl.gz", 1200),
        (f"escalations/{DAY}/b.jsonl.gz", b_kept),
    ]
    assert quarantine.select("source_file", "line_no", "reason", "detail", "raw_line").rows() == [
        (
            f"escalations/{DAY}/a.jsonl.gz",
            1201,
            "undecodable_file",
            "OSError: Truncated compressed stream",
            a_lines[1200][:40],
        ),
        (
            f"escalations/{DAY}/b.jsonl.gz",
            b_kept + 1,
            "undecodable_file",
            "OSError: Truncated compressed stream",
            b_cut,
        ),
    ]
    # the reconcile check reads the files with the same reader: raw = bronze + quarantine
    raw = ingest.count_raw_records(list_raw_files(str(tmp_path), "escalations", DAY)).records
    assert raw == bronze.height + quarantine.height == 1201 + b_kept + 1
    assert b_lines[b_kept].startswith(b_cut)


# unknown fields appended to valid records: the usual list (most lines), the same fields in the
# other order, values whose text changes when re-serialized, nested values and nulls, a repeat
_EXTRAS = (
    ', "zz_usual": 7, "aa_usual": "x"',
    ', "zz_usual": 7, "aa_usual": "x"',
    ', "zz_usual": 7, "aa_usual": "x"',
    ', "aa_usual": "x", "zz_usual": 7',
    ', "zz_usual": 1e2, "aa_usual": "\\u00e9\\n\\"q\\/"',
    ', "zz_usual": {"a": [1, null, true, -0.50]}, "aa_usual": null',
    ', "zz_usual": 1, "zz_usual": 2, "aa_usual": 3',
    ', "zz_usual": 7, "aa_usual": "x", "other": []',
)


def _with_extras(root: Path, source: str) -> None:
    """Append `_EXTRAS` in turn to the JSON objects of the day's plain raw files."""
    for path in (root / source / DAY).glob("*.jsonl"):
        lines = path.read_text(encoding="utf-8").split("\n")
        changed = []
        for number, line in enumerate(lines):
            try:
                is_object = isinstance(json.loads(line), dict) and line.rstrip().endswith("}")
            except ValueError:
                is_object = False
            extra = _EXTRAS[number % len(_EXTRAS)] if is_object else ""
            changed.append(line.rstrip()[:-1] + extra + "}" if extra else line)
        path.write_text("\n".join(changed), encoding="utf-8")


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_usual_extra_fields_give_the_merge_patch_text(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator, _, _ = SOURCES[source]
    generator.generate_day(tmp_path, DAY, 2, 3)
    _with_extras(tmp_path, source)
    learned: list[list[str]] = []
    params = ingest.UsualExtras.params

    def spy(self: ingest.UsualExtras) -> dict[str, object]:
        bound = params(self)
        learned.append(bound["extra_sequence"])  # type: ignore[arg-type]
        return bound

    monkeypatch.setattr(ingest.UsualExtras, "params", spy)
    bronze, quarantine, reasons = _ingest(source, tmp_path)
    # the first parse (the priming lines) has learned nothing, every later one a usual list
    assert learned[0] == [] and len(learned) > 1 and all(learned[1:])
    monkeypatch.setattr(
        ingest.UsualExtras,
        "params",
        lambda self: {
            "extra_sequence": [],
            "extra_structure": '{"-": "JSON"}',
        },
    )
    patched_bronze, patched_quarantine, patched_reasons = _ingest(source, tmp_path)
    assert bronze.equals(patched_bronze)
    assert quarantine.equals(patched_quarantine)
    assert reasons == patched_reasons
    texts = bronze.get_column("extra").drop_nulls()
    for ending in (
        '"zz_usual":7,"aa_usual":"x"}',
        '"aa_usual":"x","zz_usual":7}',
        '"zz_usual":100.0,"aa_usual":"\u00e9\\n\\"q/"}',
        '"zz_usual":{"a":[1,null,true,-0.5]},"aa_usual":null}',
        '"zz_usual":7,"aa_usual":"x","other":[]}',
    ):
        assert texts.str.ends_with(ending).any(), ending


def test_usual_extras_are_the_most_common_list_whatever_the_order_seen() -> None:
    con = connect()
    first, second = ingest.UsualExtras(con), ingest.UsualExtras(con)
    chunks = [
        pa.table({"extra_keys": [["b"], ["a"], [], None]}),
        pa.table({"extra_keys": [["a"], ["b", "c"], ["b", "c"]]}),
    ]
    for chunk in chunks:
        first.add(chunk)
    for chunk in reversed(chunks):
        second.add(chunk)
    assert first.counts == {("a",): 2, ("b",): 1, ("b", "c"): 2}
    # a tie between ("a",) and ("b", "c"): the smallest wins, in whichever order they came
    assert (
        first.params()
        == second.params()
        == {
            "extra_sequence": ["a"],
            "extra_structure": '{"a": "JSON"}',
        }
    )
    assert ingest.UsualExtras(con).params()["extra_sequence"] == []


def test_lists_a_struct_cannot_hold_are_never_the_usual_list() -> None:
    extras = ingest.UsualExtras(connect())
    # more common than ("ok",): a repeated key, an empty key, keys equal but for case
    extras.add(pa.table({"extra_keys": [["x", "x"]] * 4 + [[""]] * 3 + [["A", "a"]] * 2}))
    assert extras.params()["extra_sequence"] == []
    extras.add(pa.table({"extra_keys": [["ok"]]}))
    assert extras.params() == {"extra_sequence": ["ok"], "extra_structure": '{"ok": "JSON"}'}
    assert extras.usable == {("x", "x"): False, ("",): False, ("A", "a"): False, ("ok",): True}


def test_a_usual_list_of_empty_or_case_equal_keys_keeps_the_merge_patch_text(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "revisions" / DAY
    folder.mkdir(parents=True)
    record = (
        '{{"turn_id": "t{n}", "ts": 1795082400, "iteration": 1, "decision": "REVISE", '
        '"response": "r"{extra}}}'
    )
    extras = [', "x": 1, "x": 2', ', "": 1', ', "A": 1, "a": 2']
    lines = [record.format(n=n, extra=extras[n % 3]) for n in range(30)]
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bronze, quarantine, _ = _ingest("revisions", tmp_path)
    # a repeated key is no usual list: the record is quarantined (docs/operations.md#repeated-keys)
    assert quarantine.get_column("reason").unique().to_list() == ["duplicate_key"]
    assert quarantine.get_column("line_no").to_list() == list(range(1, 31, 3))
    assert bronze.get_column("extra").to_list()[:2] == ['{"":1}', '{"A":1,"a":2}']
