"""Raw traces → bronze `traces/events` + `traces/quarantine` in one streaming pass.

The shared `defs.ingest.ingest_partition` streams lines through one DuckDB thread into a stage
file and then splits the stage into bronze and quarantine: two extra full passes over the event
text, which is nearly all of trace data. This is the same contract in one parallel pass:
`RawLineReader` reads the files in a background thread, in chunks of `CHUNK_BYTES` (the lines
are Arrow string views into the blocks read: never copied after they are read); DuckDB parses
each chunk with all its threads (`sql/traces/select_parsed_events.sql`, of which only the
parsed columns are selected, so the text is never copied out of DuckDB) and returns them with a
`quarantine_reason`, one row per line in input order (a pure projection with insertion order
kept; `line_no` is checked against the input). A background thread then puts each bronze row
together from the parsed columns and the input line, splits off the quarantined rows
(`source, source_file, line_no, reason, detail, raw_line`) and writes both to Parquet as they
stream, in row groups of `ROW_GROUP_SIZE`. Memory is bounded by a few chunks, whatever the size
of the partition. It returns the shared `IngestResult`, so `ingest_metadata` and
`reconcile_check` apply unchanged.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distill_assets.defs.ingest import IngestResult
from distill_assets.defs.resources import StagedParquet
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import PARQUET_COMPRESSION, ROW_GROUP_SIZE, RowGroupWriter
from distill_assets.lib.rawfiles import RawLineReader, problem_table, take_lines
from distill_assets.lib.sql import connect, load_sql
from distill_assets.lib.threads import Drain, prefetched

SOURCE = "traces"
BRONZE_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("line_no", pa.int64()),
        ("ts", pa.float64()),
        ("kind", pa.string()),
        ("run_id", pa.string()),
        ("t", pa.int64()),
        ("task_id", pa.string()),
        ("model", pa.string()),
        ("goal", pa.string()),
        ("action", pa.string()),
        ("tool", pa.string()),
        ("args", pa.string()),
        ("ok", pa.bool_()),
        ("event", pa.string()),
        ("utf8_replaced", pa.bool_()),
    ]
)
# what the writer is given: the event text as the reader's string views; the file records plain
# strings (no Arrow schema is stored), which is how every reader sees them
_WRITE_SCHEMA = BRONZE_SCHEMA.set(
    BRONZE_SCHEMA.get_field_index("event"), pa.field("event", pa.string_view())
)
# the bronze columns taken from the input lines (DuckDB's parse returns the others)
_LINE_COLUMNS = {"source_file": "source_file", "event": "line", "utf8_replaced": "utf8_replaced"}
_PARSED_COLUMNS = [
    *(name for name in BRONZE_SCHEMA.names if name not in _LINE_COLUMNS),
    "quarantine_reason",
    "quarantine_detail",
]
QUARANTINE_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("source_file", pa.string()),
        ("line_no", pa.int64()),
        ("reason", pa.string()),
        ("detail", pa.string()),
        ("raw_line", pa.string()),
    ]
)
CHUNK_BYTES = 48 << 20
# LZ4 for the event text: it compresses about as fast as zstd level 1 and decompresses ~3x
# faster, and the extraction reads the llm_request text of a partition twice
BRONZE_COMPRESSION = "lz4"
_PENDING_CHUNKS = 2
# columns with few distinct values per row group are dictionary-encoded; events are not
_DICTIONARY_COLUMNS = [
    "source_file",
    "kind",
    "run_id",
    "task_id",
    "model",
    "goal",
    "action",
    "tool",
]


class _Sink:
    """Assemble, split and write bronze and quarantine rows, in a background thread.

    The thread that drives DuckDB only hands `(lines, parsed)` chunk pairs over (at most
    `_PENDING_CHUNKS` wait), so DuckDB parses the next chunk while the last one is assembled,
    encoded and compressed (Arrow releases the GIL for most of that work).
    """

    def __init__(self, bronze_path: Path, quarantine_path: Path) -> None:
        """Open both files and start the thread."""
        self.bronze = RowGroupWriter(
            bronze_path, _WRITE_SCHEMA, BRONZE_COMPRESSION, dictionary=_DICTIONARY_COLUMNS
        )
        self.quarantine = RowGroupWriter(
            quarantine_path, QUARANTINE_SCHEMA, PARQUET_COMPRESSION, dictionary=_DICTIONARY_COLUMNS
        )
        self.quarantine_by_reason: Counter[str] = Counter()
        self.drain: Drain[tuple[pa.Table, pa.Table]] = Drain(self._split_chunk, _PENDING_CHUNKS)

    def put(self, lines: pa.Table, parsed: pa.Table) -> None:
        """Hand a chunk of input lines and its parse to the thread (raises what it failed with)."""
        self.drain.put((lines, parsed))

    def _split_chunk(self, chunk: tuple[pa.Table, pa.Table]) -> None:
        lines, parsed = chunk
        if parsed.num_rows != lines.num_rows:
            raise RuntimeError(f"the parse returned {parsed.num_rows} rows for {lines.num_rows}")
        offset = 0
        for batch in lines.to_batches():
            rows = parsed.slice(offset, batch.num_rows).combine_chunks().to_batches()[0]
            offset += batch.num_rows
            if not rows.column("line_no").equals(batch.column("line_no")):
                raise RuntimeError("the parse did not return the lines in input order")
            self._split(batch, rows)

    def _split(self, lines: pa.RecordBatch, parsed: pa.RecordBatch) -> None:
        reasons = parsed.column("quarantine_reason")
        bad = pc.is_valid(reasons).to_numpy(zero_copy_only=False)
        good = pa.RecordBatch.from_arrays(
            [
                lines.column(_LINE_COLUMNS[name]) if name in _LINE_COLUMNS else parsed.column(name)
                for name in BRONZE_SCHEMA.names
            ],
            schema=_WRITE_SCHEMA,
        )
        if bad.any():
            picked = np.flatnonzero(bad)
            rows = _quarantine_rows(
                _take(lines, picked),
                reasons.take(picked),
                parsed.column("quarantine_detail").take(picked),
            )
            for count in pc.value_counts(rows.column("reason")).to_pylist():
                self.quarantine_by_reason[count["values"]] += count["counts"]
            self.quarantine.write(rows)
            good = _take(good, np.flatnonzero(~bad))
        self.bronze.write(good)

    def close(self, problems: pa.Table | None = None) -> int:
        """Finish the queued chunks, add the reader's `problems`, close both files.

        Returns the bronze rows written.
        """
        try:
            self.drain.close()
            if problems is not None and problems.num_rows:
                self.quarantine.write(
                    problems.cast(QUARANTINE_SCHEMA).combine_chunks().to_batches()[0]
                )
                self.quarantine_by_reason.update(problems.column("reason").to_pylist())
        finally:
            bronze_rows = self.bronze.close()
            self.quarantine.close()
        return bronze_rows


def ingest_events(
    raw_paths: list[str], raw_root: str | None = None, workdir: Path | None = None
) -> IngestResult:
    """Parse raw trace files into staged bronze and quarantine Parquet files.

    The files go to `workdir` (by default a new temporary folder). `source_file` values are
    relative to `raw_root` (e.g. `traces/2026-11-19/a.jsonl`). The files are read in path order,
    whatever order they are given in: bronze rows are in (`source_file`, `line_no`) order, which
    the extraction's slices rely on.
    """
    reader = RawLineReader(sorted(raw_paths), root=raw_root)
    workdir = workdir or working_dir(SOURCE)
    bronze_path, quarantine_path = workdir / "bronze.parquet", workdir / "quarantine.parquet"
    sink = _Sink(bronze_path, quarantine_path)
    statement = (
        f"SELECT {', '.join(_PARSED_COLUMNS)} FROM ({load_sql('traces/select_parsed_events')})"
    )
    con = connect(private=True)
    try:
        # the parse returns its rows in input order: the sink pairs them with the input lines
        con.execute("SET preserve_insertion_order = true")
        for chunk in prefetched(reader.chunks(CHUNK_BYTES, ROW_GROUP_SIZE)):
            con.register("raw_lines", chunk)
            sink.put(chunk, con.sql(statement).to_arrow_table())
            con.unregister("raw_lines")
    finally:
        con.close()
        bronze_rows = sink.close(problem_table(reader.stats.problems, SOURCE))
    return IngestResult(
        bronze=StagedParquet(bronze_path),
        quarantine=StagedParquet(quarantine_path),
        stats=reader.stats,
        bronze_rows=bronze_rows,
        quarantine_by_reason=dict(sink.quarantine_by_reason),
    )


def _quarantine_rows(lines: pa.RecordBatch, reasons: pa.Array, details: pa.Array) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([SOURCE] * lines.num_rows, pa.string()),
            lines.column("source_file").cast(pa.string()),
            lines.column("line_no"),
            reasons.cast(pa.string()),
            details.cast(pa.string()),
            lines.column("line").cast(pa.string()),
        ],
        schema=QUARANTINE_SCHEMA,
    )


def _take(batch: pa.RecordBatch, rows: np.ndarray) -> pa.RecordBatch:
    """Select `rows` of a batch; string-view columns keep pointing at their text (no copy)."""
    return pa.RecordBatch.from_arrays(
        [
            take_lines(column, rows) if column.type == pa.string_view() else column.take(rows)
            for column in batch.columns
        ],
        schema=batch.schema,
    )
