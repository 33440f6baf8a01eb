"""Raw traces → bronze `traces/events` + `traces/quarantine` in one streaming pass.

The shared `defs.ingest.ingest_partition` streams lines through one DuckDB thread into a stage
file and then splits the stage into bronze and quarantine: two extra full passes over the event
text, which is nearly all of trace data. This is the same contract in one parallel pass:
`RawLineReader` reads the files in a background thread, in chunks of `CHUNK_BYTES`; DuckDB
parses each chunk with all its threads (`sql/traces/select_parsed_events.sql`); the Arrow
result (text as string views: lines are never copied after they are read) is split by
`quarantine_reason` in a background thread, and bronze rows (LZ4) and quarantined rows
(`source, source_file, line_no, reason, detail, raw_line`) are both written to Parquet as they
stream, in row groups of `ROW_GROUP_SIZE`. Memory is bounded by a few chunks, whatever the size
of the partition. It returns the shared `IngestResult`, so `ingest_metadata` and
`reconcile_check` apply unchanged.
"""

from __future__ import annotations

import queue
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from distill_assets.defs.ingest import IngestResult
from distill_assets.defs.resources import StagedParquet
from distill_assets.lib.lake import PARQUET_COMPRESSION, ROW_GROUP_SIZE, RowGroupWriter
from distill_assets.lib.rawfiles import RawLineReader
from distill_assets.lib.sql import connect, load_sql
from distill_assets.lib.threads import Drain

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
# what the writer is given: the text columns as DuckDB hands them over (string views); the file
# records plain strings (no Arrow schema is stored), which is how every reader sees them
_WRITE_SCHEMA = pa.schema(
    [(f.name, pa.string_view() if f.type == pa.string() else f.type) for f in BRONZE_SCHEMA]
)
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
_PENDING_BATCHES = 16
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
    """Split parsed batches into bronze and quarantine rows and write both, in a background thread.

    The thread that drives DuckDB only hands batches over (at most `_PENDING_BATCHES` wait), so
    DuckDB parses the next rows while the last ones are split, encoded and compressed (Arrow
    releases the GIL for most of that work).
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
        self.drain: Drain[pa.RecordBatch] = Drain(self._split, _PENDING_BATCHES)

    def put(self, parsed: pa.RecordBatch) -> None:
        """Hand a parsed batch to the thread (raises what the thread failed with, if it did)."""
        self.drain.put(parsed)

    def _split(self, parsed: pa.RecordBatch) -> None:
        bad = pc.is_valid(parsed.column("quarantine_reason")).to_numpy(zero_copy_only=False)
        good = parsed.select(BRONZE_SCHEMA.names)
        if bad.any():
            rows = _quarantine_rows(_take(parsed, np.flatnonzero(bad)))
            for count in pc.value_counts(rows.column("reason")).to_pylist():
                self.quarantine_by_reason[count["values"]] += count["counts"]
            self.quarantine.write(rows)
            good = _take(good, np.flatnonzero(~bad))
        # DuckDB hands small results over as plain strings
        self.bronze.write(good if good.schema == _WRITE_SCHEMA else good.cast(_WRITE_SCHEMA))

    def close(self) -> int:
        """Finish the queued batches, close both files and return the bronze rows written."""
        try:
            self.drain.close()
        finally:
            bronze_rows = self.bronze.close()
            self.quarantine.close()
        return bronze_rows


def ingest_events(
    raw_paths: list[str], raw_root: str | None = None, workdir: Path | None = None
) -> IngestResult:
    """Parse raw trace files into staged bronze and quarantine Parquet files.

    The files go to `workdir` (by default a new temporary folder). `source_file` values are
    relative to `raw_root` (e.g. `traces/2026-11-19/a.jsonl`).
    """
    reader = RawLineReader(raw_paths, root=raw_root)
    workdir = workdir or Path(tempfile.mkdtemp(prefix="distill-traces-"))
    bronze_path, quarantine_path = workdir / "bronze.parquet", workdir / "quarantine.parquet"
    sink = _Sink(bronze_path, quarantine_path)
    statement = load_sql("traces/select_parsed_events")
    con = connect()
    try:
        con.execute("SET preserve_insertion_order = true")
        # text columns come out as Arrow string views: no copy of the event text on the way out
        con.execute("SET produce_arrow_string_view = true")
        for chunk in _prefetched(_chunks(reader)):
            con.register("raw_lines", chunk)
            for parsed in con.sql(statement).to_arrow_reader(ROW_GROUP_SIZE):
                sink.put(parsed)
            con.unregister("raw_lines")
    finally:
        con.close()
        bronze_rows = sink.close()
    return IngestResult(
        bronze=StagedParquet(bronze_path),
        quarantine=StagedParquet(quarantine_path),
        stats=reader.stats,
        bronze_rows=bronze_rows,
        quarantine_by_reason=dict(sink.quarantine_by_reason),
    )


def _chunks(reader: RawLineReader) -> Iterator[pa.Table]:
    """Group the reader's batches into tables of about `CHUNK_BYTES`.

    The tables hold small record batches: DuckDB scans the record batches of a table in parallel.
    """
    batches: list[pa.RecordBatch] = []
    size = 0
    for batch in reader.batches():
        batches.extend(pa.Table.from_batches([batch]).to_batches(max_chunksize=ROW_GROUP_SIZE))
        size += batch.nbytes
        if size >= CHUNK_BYTES:
            yield pa.Table.from_batches(batches)
            batches, size = [], 0
    if batches:
        yield pa.Table.from_batches(batches)


def _prefetched(chunks: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """Produce the next chunk in a background thread while the current one is parsed."""
    ready: queue.Queue[pa.Table | BaseException | None] = queue.Queue(maxsize=1)

    def produce() -> None:
        try:
            for chunk in chunks:
                ready.put(chunk)
            ready.put(None)
        except BaseException as exc:  # re-raised in the consuming thread
            ready.put(exc)

    threading.Thread(target=produce, daemon=True).start()
    while (item := ready.get()) is not None:
        if isinstance(item, BaseException):
            raise item
        yield item


def _quarantine_rows(batch: pa.RecordBatch) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [
            pa.array([SOURCE] * batch.num_rows, pa.string()),
            batch.column("source_file").cast(pa.string()),
            batch.column("line_no"),
            batch.column("quarantine_reason").cast(pa.string()),
            batch.column("quarantine_detail").cast(pa.string()),
            batch.column("line").cast(pa.string()),
        ],
        schema=QUARANTINE_SCHEMA,
    )


def _take(batch: pa.RecordBatch, rows: np.ndarray) -> pa.RecordBatch:
    """Select `rows` of a batch; string-view columns keep pointing at their text (no copy)."""
    return pa.RecordBatch.from_arrays(
        [
            _take_views(column, rows) if column.type == pa.string_view() else column.take(rows)
            for column in batch.columns
        ],
        schema=batch.schema,
    )


def _take_views(column: pa.Array, rows: np.ndarray) -> pa.Array:
    """Select `rows` of a string-view array by gathering its 16-byte views.

    Arrow has no take kernel for views; the text buffers are shared, not copied.
    """
    _, views, *texts = column.buffers()
    picked = np.frombuffer(views, dtype=np.uint8).reshape(-1, 16)[column.offset :][rows]
    bitmap = None
    if column.null_count:
        valid = pc.is_valid(column).to_numpy(zero_copy_only=False)[rows]
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(
        pa.string_view(), len(rows), [bitmap, pa.py_buffer(picked), *texts]
    )
