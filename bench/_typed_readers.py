"""Typed readers against the fast parse: the measurements behind issue 31's typed fast path.

`python -m bench.fast_path [MB] --typed-floor [--repeats N]` asks whether an optimistic *typed*
parse (one typed read of the lines, the exact statement only where it fails) could bring the
bronze step of escalations, revisions and telemetry within 2.5 times COPY's CPU at 0.1 % bad
lines, identical to the exact path by construction. It prints two tables:

- **Behaviour** (`behaviour`): what each candidate reader does with each kind of bad line the
  contracts quarantine (`CASES`, over a two-field probe contract: `n` an integer, `s` a string):
  the row it returns, `error` (the whole read fails: the piece would go to the exact path) or
  `NULL` (a per-line NULL). A reader that returns a row for a line the contract rejects (a
  coerced, dropped or ignored value) needs a separate check to be exact.
- **Cost** (`Candidates`): on the fast-path benchmark's partition of each source at 0.1 % bad
  lines, all in one process, interleaved `repeats` times, each repeat's CPU over that repeat's
  COPY (median and spread): COPY; the raw line reader and the sink (de-duplication, splitting,
  Parquet writing, fed the fast parse's rows), what the step costs whatever the parse; the fast
  parse (the default statement), its whole-line parses alone (`json_valid`, `json_transform` of
  the contract fields, `json_keys`; each column hashed so none is pruned), and the statement
  without its top-level repeated-key test or without any repeated-key test (not exact: the cost
  of the nested test); typed reads of each chunk's accepted lines (the clean-piece cost): DuckDB
  `read_json` with the contract fields as JSON or as native types, `json_transform_strict` of
  each line to `MAP(VARCHAR, JSON)`, `pyarrow.json` with an explicit schema (where each of the
  contract's kinds has one Arrow type) and polars `read_ndjson`; `json_keys(line)` alone, the
  unknown-field check a reader that drops unknown fields needs; and the reads of the two designs
  below on all the lines, each chunk written to a file first.
- **Two designs, projected** (`projected`) from those parts, each + reader + sink. The typed read
  that can be made exact is `read_json` with the fields as JSON (it neither coerces nor drops a
  known field, but drops unknown ones, hence `json_keys` in both):
  - *per line*: `read_json(..., ignore_errors=true)` of the whole chunk, which gives a row per
    line but a partial row for a repeated key, so the statement keeps its repeated-key tests:
    + `json_keys` + the fast parse without its whole-line parses;
  - *per piece*: `read_json` of each piece of `PIECE_LINES` lines (each size; a piece that
    fails is abandoned, a piece that reads holds no invalid JSON, no non-object and no
    top-level repeated key), then, on the lines of the pieces that read, `json_keys` and the
    fast parse without its whole-line parses and its top-level repeated-key test (their
    measured cost in proportion), and the fast parse of the failing pieces' lines (measured).

Both are lower bounds: the rest of the statement is assumed to cost what it costs now. The
results go to `bench/results/fast_path-typed-floor.json` (history as `fast_path_typed_floor`).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import statistics
import tempfile
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from bench.first_product import clock
from bench.ingest import jsonl_files, parse_inputs
from distill_assets.contracts import escalations, revisions, telemetry
from distill_assets.defs import ingest
from distill_assets.defs.ingest import _EXTRA_COPY_WARNING
from distill_assets.lib import json_fields as kinds
from distill_assets.lib.contract_sql import columns, fast_duplicates
from distill_assets.lib.lake import ROW_GROUP_SIZE
from distill_assets.lib.rawfiles import RawLineReader, problem_table
from distill_assets.lib.sql import connect

MODELS = {
    "escalations": escalations.Interaction,
    "revisions": revisions.RevisionValidation,
    "telemetry": telemetry.TelemetryEvent,
}
# the probe contract: `n` an integer, `s` a string; one line per kind of bad line
CASES: dict[str, str] = {
    "clean": '{"n": 1, "s": "x"}',
    "string for an integer": '{"n": "5", "s": "x"}',
    "number for a string": '{"n": 1, "s": 5}',
    "2.0 for an integer": '{"n": 2.0, "s": "x"}',
    "true for an integer": '{"n": true, "s": "x"}',
    "object for a string": '{"n": 1, "s": {"k": 1}}',
    "field absent": '{"s": "x"}',
    "repeated key": '{"n": 1, "n": 2, "s": "x"}',
    "repeated nested key": '{"n": 1, "s": "x", "o": {"k": 1, "k": 2}}',
    "unknown field": '{"n": 1, "s": "x", "z": 3}',
    "not an object": "[1, 2]",
    "invalid JSON": '{"n": 1, "s": ',
}
_MAP = "'\"MAP(VARCHAR, JSON)\"'"
_PROBE_SCHEMA = pa.schema([("n", pa.int64()), ("s", pa.string())])
# the Arrow type of a contract field's kind (absent: no single type holds its values)
_ARROW = {
    kinds.Text: pa.string(),
    kinds.Choice: pa.string(),
    kinds.IsoSeconds: pa.string(),
    kinds.Integer: pa.int64(),
    kinds.Number: pa.float64(),
    kinds.TextList: pa.list_(pa.string()),
}
_DUCKDB = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.float64(): "DOUBLE",
    pa.list_(pa.string()): "VARCHAR[]",
}
# lines per piece of the per-piece design (a read_json call costs 3–4 ms of CPU beyond its lines)
PIECE_LINES = (1_000, 10_000)
READER = "raw line reader alone"
SINK = "sink alone (dedup, split, write)"
FAST_PARSE = "fast parse (the default statement)"
PARSES = "  its whole-line parses (json_valid, json_transform, json_keys)"
NO_TOP = "  fast parse without its top-level repeated-key test"
NO_DUPLICATES = "  fast parse without any repeated-key test (not exact)"
READ_JSON = "typed read: read_json, contract fields as JSON"
NATIVE = "typed read: read_json, native types (coerces)"
STRICT_MAP = "typed read: TRY(json_transform_strict(line, MAP(VARCHAR, JSON)))"
PYARROW = "typed read: pyarrow.json, explicit schema"
POLARS = "typed read: polars read_ndjson (inferred)"
KEYS = "json_keys(line) alone (the unknown-field check)"
IGNORING = "read_json, fields as JSON, ignore_errors, all lines of each chunk"
PER_LINE = "projected: typed read per line (ignore_errors) + json_keys + rest of the fast parse"


def _pieces(lines: int) -> str:
    return f"read_json, fields as JSON, pieces of {lines:,} lines, all lines"


def _failed(lines: int) -> str:
    return f"  fast parse of the lines of the failing {lines:,}-line pieces"


def _per_piece(lines: int) -> str:
    return f"projected: typed read per {lines:,}-line piece + json_keys + rest without top test"


def _shown(rows: list[tuple]) -> str:
    """Return a reader's rows for one probe line as text (`NULL` for an all-NULL row)."""
    return "; ".join("NULL" if all(v is None for v in row) else repr(row) for row in rows)


def _probe_duckdb(columns_sql: str, line: str, options: str = "") -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "probe.jsonl"
        path.write_text(line + "\n")
        con = duckdb.connect()
        try:
            return _shown(
                con.execute(
                    f"SELECT * FROM read_json('{path}', format='newline_delimited', "
                    f"columns={columns_sql}{options})"
                ).fetchall()
            )
        except duckdb.Error:
            return "error"
        finally:
            con.close()


def _probe_map(line: str) -> str:
    con = duckdb.connect()
    try:
        row = con.execute(f"SELECT TRY(json_transform_strict(?, {_MAP}))", [line]).fetchone()
    finally:
        con.close()
    assert row is not None
    return "NULL" if row[0] is None else repr(row[0])


def _probe_arrow(line: str) -> str:
    options = pj.ParseOptions(explicit_schema=_PROBE_SCHEMA, unexpected_field_behavior="error")
    try:
        table = pj.read_json(io.BytesIO((line + "\n").encode()), parse_options=options)
    except pa.ArrowInvalid:
        return "error"
    return _shown([tuple(r.values()) for r in table.to_pylist()])


def _probe_polars(line: str) -> str:
    schema = {"n": pl.Int64, "s": pl.String}
    try:
        frame = pl.read_ndjson(io.BytesIO((line + "\n").encode()), schema=schema)
    except pl.exceptions.PolarsError:
        return "error"
    return _shown(frame.rows())


READERS: dict[str, Callable[[str], str]] = {
    "read_json, native types": lambda line: _probe_duckdb("{'n': 'BIGINT', 's': 'VARCHAR'}", line),
    "read_json, fields as JSON": lambda line: _probe_duckdb("{'n': 'JSON', 's': 'JSON'}", line),
    "read_json, fields as JSON, ignore_errors": lambda line: _probe_duckdb(
        "{'n': 'JSON', 's': 'JSON'}", line, ", ignore_errors=true"
    ),
    "json_transform_strict to MAP": _probe_map,
    "pyarrow.json, explicit schema": _probe_arrow,
    "polars read_ndjson, schema": _probe_polars,
}


def behaviour() -> list[dict[str, str]]:
    """Return what each reader does with each probe line (`CASES`), one row per case."""
    return [
        {"case": case, "line": line, **{name: read(line) for name, read in READERS.items()}}
        for case, line in CASES.items()
    ]


def arrow_schema(source: str, usual_extras: list[str]) -> pa.Schema | str:
    """Return the explicit Arrow schema of a contract's fields and its usual unknown fields.

    A string instead: why there is none (a field whose values take more than one JSON type, or
    any JSON value). The usual unknown fields are read as strings.
    """
    fields = []
    for name, col in columns(MODELS[source]).items():
        arrow = _ARROW.get(type(col.kind))
        if arrow is None:
            return f"{name} ({type(col.kind).__name__}) has no single Arrow type"
        fields.append((name, arrow))
    return pa.schema(fields + [(name, pa.string()) for name in usual_extras])


def variants(source: str, fast: str) -> dict[str, str]:
    """Return the fast parse's variants by name (see the module docstring)."""
    test = fast_duplicates(columns(MODELS[source]))
    top = "len(keys) <> len(list_distinct(keys)) OR "
    if test not in fast or top not in test:
        raise RuntimeError(f"{source}: the fast parse no longer holds its repeated-key test")
    start, end = fast.index("WITH lines AS ("), fast.index("typed AS (")
    parsed = fast[start:end].rstrip().rstrip(",")
    return {
        FAST_PARSE: fast,
        PARSES: parsed + "\nSELECT max(hash(COLUMNS(* EXCLUDE (line)))) FROM parsed",
        NO_TOP: fast.replace(test, test.replace(top, "")),
        NO_DUPLICATES: fast.replace(test, "false"),
    }


def _bound(statement: str, params: dict[str, object]) -> dict[str, object]:
    """Return the parameters a statement names (outside its comments)."""
    code = re.sub(r"--[^\n]*", "", statement)
    return {k: v for k, v in params.items() if re.search(rf"\${k}\b", code)}


def _text(lines: pa.ChunkedArray) -> bytes:
    """Return lines as JSON Lines bytes (each line and a newline), vectorized."""
    joined = pc.binary_join_element_wise(lines.cast(pa.string()), "\n", "")
    array = joined.combine_chunks()
    size = int(pc.sum(pc.binary_length(array)).as_py() or 0)
    return array.buffers()[2].to_pybytes()[:size]


class Candidates:
    """One source's 0.1 % partition, read into chunks and parsed once, and the measured steps."""

    def __init__(self, source: str, root: Path, scratch: Path) -> None:
        """Read the chunks, run the fast parse once (learning the usual unknown fields) and
        write each chunk's accepted lines to `scratch`."""
        self.source, self.root, self.scratch = source, root, scratch
        self.files = jsonl_files(root, source)
        self.contract, self.params = parse_inputs(source)
        assert self.contract.fast_parse is not None
        self.statements = variants(source, self.contract.fast_parse())
        self.chunks = self._read()
        self.con = connect(private=True)
        self.con.execute("SET preserve_insertion_order = true")
        self.usual = ingest.UsualExtras(self.con)
        self.parsed = self.parse(FAST_PARSE, learn=True)
        self.extras: list[str] = list(self.usual.params()["extra_sequence"])  # type: ignore[call-overload]
        self.clean: list[tuple[Path, bytes]] = []
        for number, (chunk, rows) in enumerate(zip(self.chunks, self.parsed, strict=True)):
            lines = chunk.column("line").cast(pa.string())
            text = _text(lines.filter(pc.is_null(rows.column(ingest.REASON))))
            path = scratch / f"clean-{number}.jsonl"
            path.write_bytes(text)
            self.clean.append((path, text))
        cols = columns(MODELS[source])
        self.as_json = "{" + ", ".join(f"'{name}': 'JSON'" for name in cols) + "}"
        self.native = (
            "{"
            + ", ".join(
                f"'{name}': '{_DUCKDB[_ARROW[type(c.kind)]] if type(c.kind) in _ARROW else 'JSON'}'"
                for name, c in cols.items()
            )
            + "}"
        )
        self.schema = arrow_schema(source, self.extras)
        self.failed: dict[int, list[pa.Table]] = {size: [] for size in PIECE_LINES}
        self.failures: dict[str, str] = {}

    def _read(self) -> list[pa.Table]:
        reader = RawLineReader(self.files, root=str(self.root))
        return list(reader.chunks(self.contract.chunk_bytes, ROW_GROUP_SIZE))

    def parse(self, name: str, learn: bool = False, chunks: list[pa.Table] | None = None) -> list:
        """Run the statement `name` (of `variants`) on each chunk; return its rows."""
        statement, out = self.statements[name], []
        for chunk in self.chunks if chunks is None else chunks:
            self.con.register("raw_lines", chunk)
            bound = _bound(statement, dict(self.params) | self.usual.params())
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=_EXTRA_COPY_WARNING)
                out.append(self.con.execute(statement, bound).to_arrow_table())
            self.con.unregister("raw_lines")
            if learn:
                self.usual.add(out[-1])
        return out

    def copy(self) -> None:
        """The baseline: COPY of the partition's files to Parquet."""
        with tempfile.TemporaryDirectory() as tmp:
            baseline = duckdb.connect()
            baseline.execute(
                f"COPY (SELECT * FROM read_json({self.files!r}, format='newline_delimited', "
                f"ignore_errors=true)) TO '{tmp}/copy.parquet' (FORMAT parquet)"
            )
            baseline.close()

    def sink(self) -> None:
        """De-duplicate, split and write the fast parse's rows."""
        with tempfile.TemporaryDirectory() as tmp:
            out = ingest._Sink(self.contract, Path(tmp), ("line",))
            for chunk, rows in zip(self.chunks, self.parsed, strict=True):
                out.put(chunk, rows)
            out.close(problem_table([], self.source))

    def per_line(self, expression: str) -> None:
        """Compute `expression` of every line of every chunk (to Arrow)."""
        for chunk in self.chunks:
            self.con.register("raw_lines", chunk)
            self.con.execute(f"SELECT {expression} FROM raw_lines").to_arrow_table()
            self.con.unregister("raw_lines")

    def each_clean(self, name: str, read: Callable[[Path, bytes], object]) -> None:
        """Read each chunk's accepted lines (file, bytes); note the first error of a reader."""
        for path, text in self.clean:
            try:
                read(path, text)
            except (duckdb.Error, pa.ArrowInvalid, pl.exceptions.PolarsError) as exc:
                self.failures.setdefault(name, str(exc).splitlines()[0][:160])

    def read_json(self, path: Path, columns_sql: str, options: str = "") -> None:
        """DuckDB's typed read of one file."""
        self.con.execute(
            f"SELECT * FROM read_json('{path}', format='newline_delimited', "
            f"columns={columns_sql}{options})"
        ).to_arrow_table()

    def ignoring(self) -> None:
        """The per-line design's read: each chunk written, read with `ignore_errors`."""
        path = self.scratch / "chunk.jsonl"
        for chunk in self.chunks:
            path.write_bytes(_text(chunk.column("line")))
            self.read_json(path, self.as_json, ", ignore_errors=true")

    def by_piece(self, size: int) -> None:
        """The per-piece design's read: each piece written and read; the failing ones kept."""
        path = self.scratch / "piece.jsonl"
        self.failed[size].clear()
        for chunk in self.chunks:
            bad = []
            for start in range(0, chunk.num_rows, size):
                piece = chunk.slice(start, size)
                path.write_bytes(_text(piece.column("line")))
                try:
                    self.read_json(path, self.as_json)
                except duckdb.Error:
                    bad.append(piece)
            self.failed[size].append(pa.concat_tables(bad) if bad else chunk.slice(0, 0))

    def steps(self) -> dict[str, Callable[[], object]]:
        """Return the measured steps by name, in the order they run."""
        steps: dict[str, Callable[[], object]] = {
            "COPY": self.copy,
            READER: self._read,
            SINK: self.sink,
            **{name: lambda name=name: self.parse(name) for name in self.statements},
            READ_JSON: lambda: self.each_clean(
                READ_JSON, lambda path, _: self.read_json(path, self.as_json)
            ),
            NATIVE: lambda: self.each_clean(
                NATIVE, lambda path, _: self.read_json(path, self.native)
            ),
            STRICT_MAP: lambda: self.per_line(f"TRY(json_transform_strict(line, {_MAP}))"),
            POLARS: lambda: self.each_clean(POLARS, lambda _, text: pl.read_ndjson(text)),
            KEYS: lambda: self.per_line("TRY(json_keys(line))"),
            IGNORING: self.ignoring,
        }
        for size in PIECE_LINES:
            steps[_pieces(size)] = lambda size=size: self.by_piece(size)
            steps[_failed(size)] = lambda size=size: self.parse(
                FAST_PARSE, chunks=[t for t in self.failed[size] if t.num_rows]
            )
        if isinstance(self.schema, pa.Schema):
            options = pj.ParseOptions(
                explicit_schema=self.schema, unexpected_field_behavior="error"
            )
            steps[PYARROW] = lambda: self.each_clean(
                PYARROW, lambda _, text: pj.read_json(io.BytesIO(text), parse_options=options)
            )
        return steps

    def measure(self, repeats: int) -> list[dict[str, object]]:
        """Run the steps interleaved `repeats` times; return one row per step and projection."""
        steps = self.steps()
        cpu: dict[str, list[float]] = {name: [] for name in steps}
        for _ in range(repeats):
            for name, work in steps.items():
                before = clock()[1]
                work()
                cpu[name].append(clock()[1] - before)
        lines = sum(chunk.num_rows for chunk in self.chunks)
        failing = {s: sum(t.num_rows for t in self.failed[s]) / lines for s in PIECE_LINES}
        cpu.update(projected(cpu, failing))
        notes = dict(self.failures)
        if isinstance(self.schema, str):
            notes[PYARROW] = self.schema
        for size, share in failing.items():
            notes[_pieces(size)] = f"{share:.1%} of the lines in failing pieces"
        mb = sum(Path(p).stat().st_size for p in self.files) / 1e6
        return [_row(f"{mb:,.0f} MB {self.source}, 0.1% bad", n, cpu, notes.get(n)) for n in cpu]

    def close(self) -> None:
        """Close the connection."""
        self.con.close()


def projected(cpu: dict[str, list[float]], failing: dict[int, float]) -> dict[str, list[float]]:
    """Return, per repeat, the CPU of the two designs (see the module docstring).

    `failing`: per piece size, the share of the lines in pieces that fail to read.
    """
    out: dict[str, list[float]] = {PER_LINE: [], **{_per_piece(size): [] for size in failing}}
    for n in range(len(cpu["COPY"])):
        part = {name: values[n] for name, values in cpu.items()}
        around = part[READER] + part[SINK]
        out[PER_LINE].append(part[IGNORING] + part[KEYS] + part[FAST_PARSE] - part[PARSES] + around)
        for size, share in failing.items():
            clean = (1 - share) * (part[KEYS] + part[NO_TOP] - part[PARSES])
            out[_per_piece(size)].append(part[_pieces(size)] + clean + part[_failed(size)] + around)
    return out


def _row(
    source: str, name: str, cpu: dict[str, list[float]], note: str | None
) -> dict[str, object]:
    ratios = [c / base for c, base in zip(cpu[name], cpu["COPY"], strict=True)]
    spread = f"CPU × COPY {min(ratios):.2f}–{max(ratios):.2f}"
    return {
        "input": source,
        "step": name,
        "cpu_s": round(statistics.median(cpu[name]), 2),
        "x_baseline_cpu": round(statistics.median(ratios), 2),
        "spread": f"{spread}; {note}" if note else spread,
    }


def typed_floor(roots: dict[str, Path], size_mb: int, repeats: int) -> dict[str, object]:
    """Measure every source (`roots`: its 0.1 % partition); return the JSON-ready result."""
    load = os.getloadavg()[0]
    rows: list[dict[str, object]] = []
    for source, root in roots.items():
        scratch = Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
        try:
            candidates = Candidates(source, root, scratch)
            try:
                rows += candidates.measure(repeats)
            finally:
                candidates.close()
        finally:
            shutil.rmtree(scratch)
    return {
        "benchmark": "fast_path_typed_floor",
        "measured_on": datetime.now(UTC).date().isoformat(),
        "command": f"python -m bench.fast_path {size_mb} --typed-floor --repeats {repeats}",
        "baseline": "COPY (read_json → Parquet) of the same files, same process, same repeat",
        "conditions": (
            f"2 shared cores, load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; "
            f"{size_mb} MB per source at 0.1 % bad lines; all in one process, interleaved "
            f"{repeats} times; medians, spread lowest–highest"
        ),
        "behaviour": behaviour(),
        "rows": rows,
    }


def tables(result: dict[str, object]) -> str:
    """Render the behaviour and cost tables as Markdown, then the conditions."""
    names = list(READERS)
    lines = [
        "| bad line | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for case in result["behaviour"]:  # type: ignore[union-attr]
        lines.append(f"| {case['case']} | " + " | ".join(case[n] for n in names) + " |")
    lines += [
        "",
        "| input | what | CPU s | × COPY CPU | spread |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    lines += [
        f"| {r['input']} | {r['step']} | {r['cpu_s']:.2f} | {r['x_baseline_cpu']:.2f} "
        f"| {r['spread']} |"
        for r in result["rows"]  # type: ignore[union-attr]
    ]
    return "\n".join(lines) + "\n\n" + str(result["conditions"])


def write(result: dict[str, object], results: Path) -> None:
    """Write the result as `fast_path-typed-floor.json` under `results`."""
    results.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=1, ensure_ascii=False) + "\n"
    (results / "fast_path-typed-floor.json").write_text(text)
