"""The one raw → bronze ingest: stream raw lines through a source's parse SQL into two tables.

Every source's bronze asset is a multi-asset `(<source>/<bronze table>, <source>/quarantine)`,
built by `ingest_partition` from the source's `RawContract` (`contracts/<source>.py`, see
`lib.rawcontract`): this module names no source. The contract's parse statement reads the view
`raw_lines` (`source_file, line_no, line, utf8_replaced, is_last_line`, see `lib.rawfiles`) and
returns one row per raw record with the bronze columns plus `quarantine_reason` (NULL for a good
record) and `quarantine_detail`, in (`source_file`, `line_no`) order (a contract's fast parse,
which gives the same rows for less, runs in place of its exact one unless `exact` is asked). A
parse that does not rewrite the raw line leaves `line` out: the sink takes it from the input (Arrow
views into the blocks read, never copied out of DuckDB; only quarantined lines are copied) and puts
it in bronze as the contract's `bronze_line` column, if it has one. A parse that rewrites it
(telemetry redacts the player id) returns `line` only for the records it quarantines; a record it
accepts that the sink quarantines as a repeat gets its line from the contract's `line_rewrite`
statement, fed the input line and the parse's `rewrite_*` columns (never in bronze). The raw files
are read in chunks of about the contract's `chunk_bytes` of lines (in a background thread, while
the last chunk is parsed); DuckDB parses each chunk with all its threads, and a background thread
splits the parsed rows into the bronze file and the quarantine file (`source, source_file, line_no,
reason, detail, raw_line`) as they stream, so every record lands in exactly one of them and memory
is bounded by a few chunks whatever the size of the partition. A contract whose records carry a key
unique within a partition (`dedup`) names the key of each record its parse accepts in `dedup_key`;
the splitting thread keeps the first record of each key and quarantines the later ones (`lib.seen`:
vectorized, across chunks, in amortized O(log n) per key), so the parse itself is a row-wise
projection of the lines, in their order, with no window, join or sort.
A parse that keeps a record's unknown fields (bronze `extra`) returns their names, in document
order, as `extra_keys` and binds `$extra_sequence` / `$extra_structure` (`UsualExtras`): the most
common such list seen so far in the partition (learned on the first lines, then chunk by chunk).
A record with exactly those unknown fields gets `extra` from one `json_transform` to a struct of
them (only their values are serialized); any other record from `json_merge_patch`, which copies
the whole record. Both give the same text, so what was learned changes only the speed.
Files and records the reader cannot turn into lines (`unsupported_file`, `undecodable_file`,
`too_large`, see `lib.rawfiles`) are quarantine rows too. The working folder is removed when the
ingest fails, else when the IO manager has moved both files away.
"""

import contextlib
import json
import re
import shutil
import warnings
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.raw_integrity import reconcile_files
from distill_assets.defs.resources import DistillSettings, StagedParquet
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import (
    PARQUET_COMPRESSION,
    ROW_GROUP_SIZE,
    RowGroupWriter,
)
from distill_assets.lib.metadata import funnel
from distill_assets.lib.rawcontract import RawContract
from distill_assets.lib.rawfiles import (
    PROBLEM_SCHEMA,
    RawLineReader,
    ReadStats,
    list_raw_files,
    problem_table,
    take_lines,
)
from distill_assets.lib.seen import KEY, Deduplicator
from distill_assets.lib.sql import connect, load_sql
from distill_assets.lib.threads import Drain, prefetched

QUARANTINE_TABLE = "quarantine"
RECONCILE_CHECK = "raw_reconciles"
REASON, DETAIL = "quarantine_reason", "quarantine_detail"
EXTRA_KEYS = "extra_keys"
REWRITE_PREFIX = "rewrite_"
# the parse runs as a DB-API statement: planned once per chunk where a relation (`con.sql`) is
# planned twice, for the extra copy of its result DuckDB warns about (cheaper than the second
# plan); the warning is silenced where the result is fetched (a filter set at import would not
# outlive Dagster's loading of the definitions, which restores the filters it found)
_EXTRA_COPY_WARNING = "Arrow output on a DB-API result makes an extra copy"
_PENDING_CHUNKS = 1
# the first lines of a partition (at most half its first chunk), parsed before the rest of the
# chunk to learn the usual unknown fields
PRIMING_LINES = 4096


class UsualExtras:
    """The most common list of unknown fields seen so far, as a parse's `$extra_*` parameters.

    Counts the `extra_keys` lists of every parsed chunk (non-empty ones); the parameters name the
    most common list a struct can hold (ties: the smallest, so the choice does not depend on the
    order they were met in). A struct cannot hold a repeated key (the merge patch keeps both), and
    DuckDB rejects some structures (an empty key, keys equal but for case): `con` tries each
    candidate's structure once, and a list it rejects is never used.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        """Start with nothing seen (no record takes the struct path)."""
        self.con = con
        self.counts: Counter[tuple[str, ...]] = Counter()
        self.usable: dict[tuple[str, ...], bool] = {}

    def params(self) -> dict[str, object]:
        """Bind `$extra_sequence` (the usual list) and `$extra_structure` (its struct of JSON)."""
        ranked = sorted(self.counts, key=lambda keys: (-self.counts[keys], keys))
        usual = next((keys for keys in ranked if self._usable(keys)), ())
        # an empty list matches no record; the placeholder structure only keeps the statement valid
        return {"extra_sequence": list(usual), "extra_structure": _structure(usual or ("-",))}

    def add(self, parsed: pa.Table) -> None:
        """Count the non-empty `extra_keys` lists of a parsed chunk."""
        lists = pl.from_arrow(parsed.column(EXTRA_KEYS))
        assert isinstance(lists, pl.Series)
        for keys, count in lists.filter(lists.list.len() > 0).value_counts().iter_rows():
            self.counts[tuple(keys)] += count

    def _usable(self, keys: tuple[str, ...]) -> bool:
        if keys not in self.usable:
            usable = len(set(keys)) == len(keys)
            if usable:
                try:
                    self.con.execute("SELECT json_transform('{}', ?)", [_structure(keys)])
                except duckdb.Error:
                    usable = False
            self.usable[keys] = usable
        return self.usable[keys]


def _structure(keys: tuple[str, ...]) -> str:
    """Return the `json_transform` structure reading each of `keys` as its JSON text."""
    return json.dumps(dict.fromkeys(keys, "JSON"))


def _binds_extras(statement: str) -> bool:
    """Whether a parse statement uses the `UsualExtras` parameters."""
    return re.search(r"\$extra_structure\b", re.sub(r"--[^\n]*", "", statement)) is not None


@dataclass
class IngestResult:
    """The staged bronze and quarantine files and what was read."""

    bronze: StagedParquet
    quarantine: StagedParquet
    stats: ReadStats
    bronze_rows: int
    quarantine_by_reason: dict[str, int]

    @property
    def quarantine_rows(self) -> int:
        """Total quarantined records."""
        return sum(self.quarantine_by_reason.values())


def ingest_partition(
    contract: RawContract,
    raw_paths: list[str],
    raw_root: str | None = None,
    parse_sql: str | None = None,
    *,
    params: Mapping[str, object] | None = None,
    bronze_exclude: tuple[str, ...] = (),
    workdir: Path | None = None,
    exact: bool = False,
) -> IngestResult:
    """Parse `raw_paths` with the contract's parse statement into staged Parquet files.

    `source_file` values are relative to `raw_root` (e.g. `traces/2026-11-19/a.jsonl`). `params`
    are the parse statement's bind parameters; `parse_sql` replaces the statement (tests);
    `bronze_exclude` names parse columns kept out of bronze (e.g. `line` when only quarantine may
    hold the raw text). Repeated keys are quarantined by the contract's `dedup` rule, if it has
    one. The files are read in path order, whatever order they are given in. The files go to
    `workdir` (by default a new working folder of the source). A contract's fast parse, if it
    has one, is the statement run (the same rows as its exact one, for less: see
    `lib.contract_sql.fast_duplicates`); `exact`: run the exact statement instead.
    """
    statement = parse_sql or contract.parse()
    if not exact and parse_sql is None and contract.fast_parse is not None:
        statement = contract.fast_parse()
    reader = RawLineReader(sorted(raw_paths), root=raw_root)
    workdir = workdir or working_dir(contract.source)
    sink = _Sink(contract, workdir, bronze_exclude)
    con = connect(private=True)
    extras = UsualExtras(con) if _binds_extras(statement) else None

    def parse(lines: pa.Table) -> pa.Table:
        con.register("raw_lines", lines)
        bound = dict(params or {}) | (extras.params() if extras is not None else {})
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_EXTRA_COPY_WARNING, category=UserWarning)
            parsed = con.execute(statement, bound).to_arrow_table()
        con.unregister("raw_lines")
        if extras is not None:
            extras.add(parsed)
        return parsed

    try:
        # a parse returns its rows in input order (a projection of the lines); chunks come in
        # input order too, which is what first-occurrence de-duplication relies on
        con.execute("SET preserve_insertion_order = true")
        chunks = reader.chunks(contract.chunk_bytes, ROW_GROUP_SIZE)
        for number, chunk in enumerate(prefetched(chunks)):
            # the first lines are parsed on their own, so the rest of the chunk uses what they hold
            priming = extras is not None and number == 0
            head = min(PRIMING_LINES, chunk.num_rows // 2) if priming else 0
            pieces = [chunk.slice(0, head), chunk.slice(head)] if head else [chunk]
            for piece in pieces:
                sink.put(piece, parse(piece))
        sink.close(problem_table(reader.stats.problems, contract.source))
    except BaseException:
        sink.abandon()
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    finally:
        con.close()
    return IngestResult(
        bronze=StagedParquet(sink.bronze_path),
        quarantine=StagedParquet(sink.quarantine_path),
        stats=reader.stats,
        bronze_rows=sink.bronze_rows,
        quarantine_by_reason=dict(sink.quarantine_by_reason),
    )


def quarantine_writer(path: Path, contract: RawContract) -> RowGroupWriter:
    """Return the writer of a partition's quarantine file (`PROBLEM_SCHEMA`, dictionary columns)."""
    return RowGroupWriter(
        path, PROBLEM_SCHEMA, PARQUET_COMPRESSION, dictionary=list(contract.dictionary)
    )


class _Sink:
    """Split parsed chunks into bronze and quarantine rows and write both, in a background thread.

    The thread that drives DuckDB only hands parsed chunks over (at most `_PENDING_CHUNKS` wait),
    so DuckDB parses the next chunk while the last one is de-duplicated, split, encoded and
    compressed (Polars and Arrow release the GIL for most of that work). The bronze file's columns
    are the contract's `bronze_columns`, else the parse's columns without the quarantine,
    de-duplication and `rewrite_*` columns and `bronze_exclude`, then the raw line as the
    contract's `bronze_line` (not for a parse that rewrites the line: its `line` is NULL for the
    records it accepts).
    """

    def __init__(
        self, contract: RawContract, workdir: Path, bronze_exclude: tuple[str, ...]
    ) -> None:
        """Start the thread; the bronze file is opened with the first chunk."""
        self.contract = contract
        self.source = contract.source
        self.bronze_path = workdir / "bronze.parquet"
        self.quarantine_path = workdir / "quarantine.parquet"
        self.hidden = {REASON, DETAIL, KEY, EXTRA_KEYS, "line", *bronze_exclude}
        self.line_column = contract.bronze_line
        if self.line_column in bronze_exclude or contract.line_rewrite is not None:
            self.line_column = None
        self.dedup = Deduplicator(contract.dedup) if contract.dedup is not None else None
        self.rewrite = load_sql(contract.line_rewrite) if contract.line_rewrite else None
        self.rewrite_con: duckdb.DuckDBPyConnection | None = None
        self.bronze: RowGroupWriter | None = None
        self.quarantine = quarantine_writer(self.quarantine_path, contract)
        self.bronze_rows = 0
        self.quarantine_by_reason: Counter[str] = Counter()
        self.drain: Drain[tuple[pa.Table, pa.Table]] = Drain(self._split, _PENDING_CHUNKS)

    def put(self, lines: pa.Table, parsed: pa.Table) -> None:
        """Hand a chunk of raw `lines` and its parse to the thread (raises what it failed with)."""
        self.drain.put((lines, parsed))

    def _split(self, chunk: tuple[pa.Table, pa.Table]) -> None:
        lines, parsed = chunk
        raw = self._input_lines(lines, parsed)
        line = parsed.column("line").combine_chunks() if "line" in parsed.column_names else raw
        if self.dedup is not None:
            parsed = self._quarantine_repeats(parsed, raw)
        bronze_names = self._bronze_names(parsed)
        if self.bronze is None:
            schema = pa.schema(
                [
                    pa.field(n, raw.type) if n == self.line_column else parsed.schema.field(n)
                    for n in bronze_names
                ]
            )
            self.bronze = RowGroupWriter(
                self.bronze_path,
                schema,
                self.contract.bronze_compression or PARQUET_COMPRESSION,
                dictionary=list(self.contract.dictionary),
            )
        bad = pc.is_valid(parsed.column(REASON))
        if self.line_column is None:
            # select before filtering: the columns bronze does not keep (the raw line) are not
            # copied
            good = parsed.select(bronze_names).filter(pc.invert(bad)).to_batches()
        else:
            good = self._with_lines(lines, parsed, bad.to_numpy())
        for batch in good:
            self.bronze.write(batch)
        rows = np.flatnonzero(bad.to_numpy())
        if len(rows):
            rejected = parsed.select(["source_file", "line_no", REASON, DETAIL]).take(rows)
            raw_line = take_lines(line, rows) if line.type == pa.string_view() else line.take(rows)
            if self.rewrite is not None:
                raw_line = self._rewritten(raw_line, raw, parsed, rows)
            quarantined = pa.table(
                {
                    "source": pa.array([self.source] * len(rows), pa.string()),
                    "source_file": rejected.column("source_file"),
                    "line_no": rejected.column("line_no"),
                    "reason": rejected.column(REASON),
                    "detail": rejected.column(DETAIL),
                    "raw_line": raw_line,
                }
            ).cast(PROBLEM_SCHEMA)
            self._quarantine(quarantined)

    def _bronze_names(self, parsed: pa.Table) -> list[str]:
        """Return the bronze columns: the contract's, else the parse's and the raw line."""
        if self.contract.bronze_columns is not None:
            return list(self.contract.bronze_columns)
        names = [
            n
            for n in parsed.column_names
            if n not in self.hidden and not n.startswith(REWRITE_PREFIX)
        ]
        return names + ([self.line_column] if self.line_column is not None else [])

    def _with_lines(
        self, lines: pa.Table, parsed: pa.Table, bad: np.ndarray
    ) -> list[pa.RecordBatch]:
        """Assemble the accepted rows per input batch, the raw line as the reader's string views.

        The line's text is never copied (Arrow has no filter for string views: `_take` gathers
        the views); the batches follow the input's, whose buffers the line points into.
        """
        names = self._bronze_names(parsed)
        good, offset = [], 0
        for batch in lines.to_batches():
            rows = parsed.slice(offset, batch.num_rows).combine_chunks().to_batches()[0]
            keep = ~bad[offset : offset + batch.num_rows]
            offset += batch.num_rows
            assembled = pa.RecordBatch.from_arrays(
                [batch.column("line") if n == self.line_column else rows.column(n) for n in names],
                names=names,
            )
            good.append(assembled if keep.all() else _take(assembled, np.flatnonzero(keep)))
        return good

    def _rewritten(
        self, quarantined: pa.Array, raw: pa.Array, parsed: pa.Table, rows: np.ndarray
    ) -> pa.Array:
        """Fill the lines the parse left NULL (records it accepted, quarantined as repeats)."""
        missing = quarantined.is_null().to_numpy(zero_copy_only=False)
        if not missing.any():
            return quarantined
        picked = rows[missing]
        columns = [n for n in parsed.column_names if n != "line"]
        repeated = parsed.select(columns).take(picked)
        repeated = repeated.append_column("line", take_lines(raw, picked).cast(pa.string()))
        if self.rewrite_con is None:
            self.rewrite_con = connect(private=True)
        self.rewrite_con.register("repeated_lines", repeated)
        try:
            lines = self.rewrite_con.sql(self.rewrite).to_arrow_table().column("line")
        finally:
            self.rewrite_con.unregister("repeated_lines")
        if lines.null_count:
            raise RuntimeError(f"{self.source}: the line rewrite returned NULL lines")
        return pc.replace_with_mask(
            quarantined, pa.array(missing), lines.combine_chunks().cast(quarantined.type)
        )

    def _input_lines(self, lines: pa.Table, parsed: pa.Table) -> pa.Array:
        """Return the input's `line` column (the parse must return one row per line, in order)."""
        if parsed.num_rows != lines.num_rows or not parsed.column("line_no").equals(
            lines.column("line_no")
        ):
            raise RuntimeError(
                f"{self.source} parse returned {parsed.num_rows} rows for {lines.num_rows} lines, "
                "or out of order: a parse must be a projection of its input lines"
            )
        return lines.column("line").combine_chunks()

    def _quarantine_repeats(self, parsed: pa.Table, line: pa.Array) -> pa.Table:
        """Set the reason and detail of the records whose key an earlier record holds."""
        assert self.dedup is not None
        keys = parsed.select([KEY, "source_file", "line_no"])
        if self.dedup.rule.conflict_detail is not None:
            keys = keys.append_column("line", line)
        repeats = self.dedup.apply(pl.from_arrow(keys))  # type: ignore[arg-type]
        if not repeats.height:
            return parsed
        mask = np.zeros(parsed.num_rows, bool)
        mask[repeats["row"].to_numpy()] = True
        reasons = parsed.column(REASON)
        details = parsed.column(DETAIL)
        reason = pa.array([self.dedup.rule.reason] * repeats.height, reasons.type)
        detail = repeats["detail"].to_arrow().cast(details.type)
        parsed = parsed.set_column(
            parsed.column_names.index(REASON),
            REASON,
            pc.replace_with_mask(reasons.combine_chunks(), mask, reason),
        )
        return parsed.set_column(
            parsed.column_names.index(DETAIL),
            DETAIL,
            pc.replace_with_mask(details.combine_chunks(), mask, detail),
        )

    def _quarantine(self, rows: pa.Table) -> None:
        for count in pc.value_counts(rows.column("reason")).to_pylist():
            self.quarantine_by_reason[count["values"]] += count["counts"]
        for batch in rows.to_batches():
            self.quarantine.write(batch)

    def close(self, problems: pa.Table) -> None:
        """Finish the queued chunks, add the reader's `problems` and close both files."""
        self.drain.close()
        if self.rewrite_con is not None:
            self.rewrite_con.close()
        if problems.num_rows:
            self._quarantine(problems)
        self.bronze_rows = self.bronze.close() if self.bronze is not None else 0
        self.quarantine.close()

    def abandon(self) -> None:
        """Stop after a failure: wait for the thread, whatever it raised, and close the files."""
        with contextlib.suppress(BaseException):
            self.drain.close()
        if self.rewrite_con is not None:
            self.rewrite_con.close()
        for writer in (self.bronze, self.quarantine):
            if writer is not None:
                with contextlib.suppress(BaseException):
                    writer.writer.close()


def _take(batch: pa.RecordBatch, rows: np.ndarray) -> pa.RecordBatch:
    """Select `rows` of a batch; string-view columns keep pointing at their text (no copy)."""
    return pa.RecordBatch.from_arrays(
        [
            take_lines(column, rows) if column.type == pa.string_view() else column.take(rows)
            for column in batch.columns
        ],
        schema=batch.schema,
    )


def bronze_outs(
    source: str, table: str, bronze_description: str, quarantine_description: str
) -> dict[str, dg.AssetOut]:
    """Return the two outputs of a source's bronze multi-asset, keyed by table name."""
    return {
        table: dg.AssetOut(
            key=[source, table], description=bronze_description, kinds={"duckdb", "parquet"}
        ),
        QUARANTINE_TABLE: dg.AssetOut(
            key=[source, QUARANTINE_TABLE],
            description=quarantine_description,
            kinds={"duckdb", "parquet"},
        ),
    }


def ingest_metadata(result: IngestResult) -> dict[str, object]:
    """Metadata shared by every bronze materialization: files, records, quarantine funnel."""
    return {
        "raw_files": result.stats.files,
        "raw_records": result.stats.records,
        "blank_lines": result.stats.blank_lines,
        "utf8_replaced": result.stats.utf8_replaced,
        "bronze_rows": result.bronze_rows,
        "quarantine_rows": result.quarantine_rows,
        "quarantine_by_reason": funnel(result.quarantine_by_reason),
    }


def count_raw_records(raw_paths: list[str]) -> ReadStats:
    """Count the records (non-blank lines) of raw files, independently of any parsing."""
    reader = RawLineReader(raw_paths)
    for _ in reader.batches():
        pass
    return reader.stats


def reconcile_check(
    source: str,
    bronze_table: str,
    suffixes: tuple[str, ...] | None = None,
    exclude: tuple[str, ...] = (),
) -> dg.AssetChecksDefinition:
    """Build the blocking check `raw records = bronze rows + quarantine rows` for a partition.

    Checked per raw file, and the partition's `raw_files` integrity table is written on the way
    (`raw_integrity.py`). `exclude`: file name endings another reader of the source owns (not
    counted here).
    """
    bronze_key = dg.AssetKey([source, bronze_table])

    @dg.asset_check(
        partitions_def=daily_partitions(),
        asset=bronze_key,
        name=RECONCILE_CHECK,
        blocking=True,
        additional_deps=[dg.AssetKey([source, QUARANTINE_TABLE])],
        description=f"Every raw {source} record is in {bronze_table} or quarantine, exactly once.",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, settings: DistillSettings
    ) -> dg.AssetCheckResult:
        partition = context.partition_key
        cfg = settings.resolved()
        paths = list_raw_files(cfg.raw_root, source, partition, suffixes, exclude)
        tables = (bronze_table, QUARANTINE_TABLE)
        passed, metadata = reconcile_files(cfg, source, partition, paths, tables)
        return dg.AssetCheckResult(passed=passed, metadata=metadata)

    return _check
