"""Trace extraction: one pure function for the assets and `sft-extract`.

See docs/sources/traces.md#agent-traces.

`Extraction` opens a DuckDB session over one bronze events file (a partition of `traces/events`)
and derives, in SQL (`sql/traces/`, each step its `create_<table>` file):

1. `trace_step_facts` — one row per step `(run_id, t)`: the facts of its events (read from
   bronze columns, no event text);
2. `trace_runs` — one row per run: success and the rule that decided it, how it ended, counts;
3. `trace_steps_filtered` — every step with the filters applied
   (docs/sources/traces.md#filtering-rules);
4. `request_contexts`, slice by slice — the requests of the steps that passed them, each parsed
   once: its message shape (what a sample is validated against, kept in `request_shapes`) and
   its context turns (spilled to a Parquet file per slice);
5. `trace_steps` — one row per step `(run_id, t)` with `reason` NULL (a sample) or why it was
   dropped (those filters, then validation and near-duplicate dedup);
6. `sft_turns` — the kept steps of one slice with their context and the columns both sample
   formats share.

Stages 1-2 are built when the session opens, 3-5 when first needed (writing only the runs needs
none of them). Writers then stream `runs`, `dropped_steps`, `sft_steps` (`together` format) and
`sft_tool_steps` (`tools` format) to Parquet, or the samples to JSONL (the CLI), always in the
same order: by the position of each step's `llm_action` in the raw files (file, then line).

**Bounded memory.** Only per-run and per-step facts (no message text) are held for the whole
partition. The request text — nearly all of a partition, and quadratic in a run's length once
rendered as contexts — is handled in slices: consecutive bronze row groups holding about
`SLICE_EVENT_BYTES` of event text. A slice's requests are parsed together (the Parquet scan reads
only the row groups they lie in), their contexts spilled to an LZ4 Parquet file, and its samples
rendered, sorted and appended to the output one slice at a time. A step belongs to the slice of
its `llm_action`'s row, and bronze rows are in (file, line) order, so the slices' samples follow
each other in the output order.
Everything is vectorized SQL; the only Python loops are over slices and small per-reason
aggregates.
"""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Self

import pyarrow as pa

from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import ROW_GROUP_SIZE, RowGroupWriter
from distill_assets.lib.sql import connect, load_sql
from distill_assets.lib.threads import Drain
from distill_assets.rules import traces as rules

# zstd level 1: samples are written once per materialization and read by the release, so write
# speed matters more than the last percent of size
COMPRESSION, COMPRESSION_LEVEL = "zstd", 1
COPY_PARQUET = (
    f"(FORMAT parquet, COMPRESSION {COMPRESSION}, COMPRESSION_LEVEL {COMPRESSION_LEVEL}, "
    f"ROW_GROUP_SIZE {ROW_GROUP_SIZE})"
)
# a slice's spilled contexts are written and read back once per output format: LZ4 is fastest
SPILL_PARQUET = f"(FORMAT parquet, COMPRESSION lz4_raw, ROW_GROUP_SIZE {ROW_GROUP_SIZE})"
# event text (uncompressed, as recorded in the bronze footer) per slice: what bounds the memory
# of parsing requests and rendering samples, whatever the size of the partition
SLICE_EVENT_BYTES = 256 << 20
# the end of the last slice: past any bronze row number
_LAST_ROW = 1 << 62
FORMATS = ("together", "tools")


@dataclass(frozen=True)
class ExtractOptions:
    """`SFTExtractConfig` options and extensions; defaults from rules/traces.py.

    See docs/sources/traces.md#options.
    """

    require_success: bool = rules.REQUIRE_SUCCESS
    require_valid_tool_ok: bool = rules.REQUIRE_VALID_TOOL_OK
    max_context_chars: int = rules.MAX_CONTEXT_CHARS
    include_recovery: bool = rules.INCLUDE_RECOVERY
    dedup: bool = rules.DEDUP
    validate_samples: bool = rules.VALIDATE
    eval_fraction: float = rules.EVAL_FRACTION

    def as_dict(self) -> dict[str, object]:
        """Return the options as plain values (materialization metadata)."""
        return asdict(self)


@dataclass
class ExtractionSummary:
    """Counts for metadata and the CLI summary."""

    runs: int
    successful_runs: int
    runs_by_skip_reason: dict[str, int]
    steps: int
    samples: int
    dropped_by_reason: dict[str, int]
    eligible_runs: int

    @property
    def avg_steps_per_run(self) -> float:
        """Samples per run that could yield samples (`avg_samples_per_run`).

        See docs/sources/traces.md#stats.
        """
        return self.samples / self.eligible_runs if self.eligible_runs else 0.0


@dataclass
class FileProgress:
    """The runs of one raw file (by the file of their first event) and their samples."""

    successful_runs: int = 0
    samples: int = 0
    skipped: dict[str, int] = field(default_factory=dict)


def _thought_patch() -> str:
    return json.dumps({rules.THOUGHT_ARG: None})


class Extraction:
    """A DuckDB session deriving runs, steps and samples from a bronze events file."""

    def __init__(
        self,
        events_file: str | Path,
        options: ExtractOptions,
        slice_event_bytes: int = SLICE_EVENT_BYTES,
    ) -> None:
        """Open a session over one bronze events Parquet file (a partition of `traces/events`).

        `slice_event_bytes` is how much event text a slice holds (see the module docstring).
        """
        self.options = options
        self.slice_event_bytes = slice_event_bytes
        self.events_file = str(events_file)
        self.con = connect(private=True)
        # every output has an ORDER BY on unique keys: intermediate row order need not be kept
        self.con.execute("SET preserve_insertion_order = false")
        # bronze rows are in (file, line) order: file_row_number orders them
        self.con.read_parquet(self.events_file, file_row_number=True).create_view("events")
        self.con.execute(
            "CREATE TEMP TABLE tool_args AS SELECT unnest($rows, recursive := true)",
            {"rows": rules.tool_arg_rows()},
        )
        for name, value in self._variables().items():
            self._set(name, value)
        self.con.execute(
            load_sql("traces/create_trace_step_facts"),
            {"thought_patch": _thought_patch(), "thought_key": json.dumps(rules.THOUGHT_ARG)},
        )
        self.con.execute(
            load_sql("traces/create_trace_runs"),
            {
                "rule_run_end": rules.SUCCESS_RULE_RUN_END,
                "rule_final": rules.SUCCESS_RULE_FINAL,
                "rule_none": rules.SUCCESS_RULE_NONE,
            },
        )
        self._spill_dir = working_dir("extract")
        self._spills: list[Path] = []

    def __enter__(self) -> Self:
        """Use as a context manager."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the session."""
        self.close()

    def close(self) -> None:
        """Close the DuckDB connection and remove the spilled contexts."""
        self.con.close()
        shutil.rmtree(self._spill_dir, ignore_errors=True)

    def _build_steps(self) -> None:
        """Derive the steps and their fates (stages 3-5), once, when first needed.

        Writing only the runs needs none of them.
        """
        if self._spills:
            return
        o = self.options
        self.con.execute(
            load_sql("traces/create_trace_steps_filtered"),
            {
                "require_success": o.require_success,
                "require_valid_tool_ok": o.require_valid_tool_ok,
                "include_recovery": o.include_recovery,
            },
        )
        self.con.execute(load_sql("traces/drop_trace_step_facts"))
        self.con.execute(load_sql("traces/create_candidate_requests"))
        self.con.execute(load_sql("traces/create_run_first_requests"))
        contexts = load_sql("traces/select_request_contexts")
        for number, (lo, hi) in enumerate(self.slices()):
            spill = self._spill_dir / f"contexts-{number:05d}.parquet"
            self.con.execute(
                f"COPY ({contexts}) TO '{spill}' {SPILL_PARQUET}", {"lo": lo, "hi": hi}
            )
            self._spills.append(spill)
        self._set("context_spills", [str(p) for p in self._spills])
        self.con.execute(load_sql("traces/create_request_shapes"))
        self.con.execute(
            load_sql("traces/create_trace_steps"),
            {
                "validate": o.validate_samples,
                "dedup": o.dedup,
                "request_role_order": rules.REQUEST_ROLE_ORDER,
            },
        )
        self.con.execute(load_sql("traces/drop_trace_steps_filtered"))
        self.con.execute(load_sql("traces/create_kept_steps"))
        # the views bind to the first slice's file; the writers point them at each in turn
        self._set("slice_spill", str(self._spills[0]))
        self.con.execute(load_sql("traces/create_slice_turns"))
        self.con.execute(load_sql("traces/create_sft_turns"))

    @property
    def slice_count(self) -> int:
        """How many slices the request text was handled in (0 before the steps are built)."""
        return len(self._spills)

    def slices(self) -> list[tuple[int, int]]:
        """Return the slices of the bronze rows, `[(first row, end row), ...]`, in row order.

        Consecutive row groups are grouped until they hold `slice_event_bytes` of event text (by
        the sizes in the Parquet footer); the last slice is open-ended, so every row has one.
        """
        sizes = self.con.execute(
            load_sql("traces/select_event_row_groups"), {"path": self.events_file}
        ).fetchall()
        starts, row, text = [0], 0, 0
        for rows, event_bytes in sizes:
            if text >= self.slice_event_bytes:
                starts.append(row)
                text = 0
            row += int(rows)
            text += int(event_bytes)
        return list(zip(starts, [*starts[1:], _LAST_ROW], strict=True))

    def _each_slice(self) -> Iterator[int]:
        """Point view `slice_turns` (what `sft_turns` reads) at each slice's contexts in turn."""
        for number, spill in enumerate(self._spills):
            self._set("slice_spill", str(spill))
            yield number

    def _set(self, name: str, value: object) -> None:
        """Set session variable `name` (views read their files and rule values from these)."""
        self.con.execute(f"SET VARIABLE {name} = $value", {"value": value})

    def _variables(self) -> dict[str, object]:
        """Session variables the SQL reads (`sft_turns` is a view, which takes no parameters)."""
        o = self.options
        return {
            "thought_patch": _thought_patch(),
            "max_context_chars": o.max_context_chars,
            "split_buckets": rules.SPLIT_BUCKETS,
            "eval_fraction": o.eval_fraction,
            "quality_base": rules.QUALITY_BASE,
            "penalty_not_successful": rules.QUALITY_PENALTY_RUN_NOT_SUCCESSFUL,
            "penalty_recovery": rules.QUALITY_PENALTY_RECOVERY,
            "penalty_truncated": rules.QUALITY_PENALTY_TRUNCATED_CONTEXT,
            "penalty_per_failed_call": rules.QUALITY_PENALTY_PER_EARLIER_FAILED_CALL,
            "max_failed_calls": rules.QUALITY_MAX_EARLIER_FAILED_CALLS,
        }

    def sft_steps_query(self, fmt: str) -> tuple[str, dict[str, object]]:
        """Return the statement and parameters writing the samples in `fmt` (together | tools)."""
        self._build_steps()
        if fmt == "together":
            params: dict[str, object] = {
                "tool_result_prefix": rules.TOOL_RESULT_PREFIX,
                "note_separator": rules.NOTE_SEPARATOR,
            }
            return load_sql("traces/select_sft_steps"), params
        if fmt == "tools":
            params = {
                "call_id_prefix": rules.TOOL_CALL_ID_PREFIX,
                "note_separator": rules.NOTE_SEPARATOR,
                "tools": rules.tools_json(),
            }
            return load_sql("traces/select_sft_tool_steps"), params
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")

    def write_sft_steps(self, path: Path, fmt: str = "together") -> int:
        """Write the samples (a feed table) to Parquet at `path`, slice by slice; return how many.

        Row groups hold `ROW_GROUP_SIZE` samples, whatever the slices' sizes.
        """
        statement, params = self.sft_steps_query(fmt)
        readers = (
            self.con.sql(statement, params=params).to_arrow_reader(ROW_GROUP_SIZE)
            for _ in self._each_slice()
        )
        first = next(readers)
        writer = RowGroupWriter(path, first.schema, COMPRESSION, COMPRESSION_LEVEL)
        # encoding and compression (GIL released) overlap DuckDB's next batches
        drain: Drain[pa.RecordBatch] = Drain(writer.write, pending=2)
        try:
            for reader in itertools.chain([first], readers):
                for batch in reader:
                    drain.put(batch)
        finally:
            drain.close()
        return writer.close()

    def write_jsonl(self, path: Path, fmt: str = "together", split: str | None = None) -> int:
        """Write the samples (of one `split`, or all) as chat JSONL and return how many.

        Lines are `{"messages": [...]}`, plus `"tools": [...]` in the `tools` format. Each slice
        is written by DuckDB to a part file, appended to `path` in slice order.
        """
        statement, params = self.sft_steps_query(fmt)
        query = f"WITH samples AS ({statement}) {load_sql(f'traces/select_jsonl_{fmt}')}"
        part = self._spill_dir / "part.jsonl"
        written = 0
        with path.open("wb") as out:
            for _ in self._each_slice():
                copied = self.con.execute(
                    f"COPY ({query}) TO '{part}' (FORMAT json)", {**params, "split": split}
                ).fetchone()
                written += int(copied[0]) if copied else 0
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 8 << 20)
        part.unlink(missing_ok=True)
        return written

    def write_runs(self, path: Path) -> None:
        """Write the runs table to Parquet at `path`."""
        self.con.execute(f"COPY ({load_sql('traces/select_runs')}) TO '{path}' {COPY_PARQUET}")

    def write_dropped_steps(self, path: Path) -> None:
        """Write the dropped steps (one row per step that did not become a sample)."""
        self._build_steps()
        statement = load_sql("traces/select_dropped_steps")
        self.con.execute(f"COPY ({statement}) TO '{path}' {COPY_PARQUET}")

    def summary(self) -> ExtractionSummary:
        """Count runs by outcome and steps by fate."""
        self._build_steps()
        runs = self.con.execute(load_sql("traces/select_run_outcomes")).fetchall()
        steps = self.con.execute(load_sql("traces/select_step_fates")).fetchall()
        by_run = {str(r): int(n) for r, n in runs}
        by_step = {str(r): int(n) for r, n in steps}
        successful = by_run.pop("", 0)
        samples = by_step.pop("", 0)
        eligible = successful if self.options.require_success else successful + sum(by_run.values())
        return ExtractionSummary(
            runs=successful + sum(by_run.values()),
            successful_runs=successful,
            runs_by_skip_reason=by_run,
            steps=samples + sum(by_step.values()),
            samples=samples,
            dropped_by_reason=by_step,
            eligible_runs=eligible,
        )

    def per_file(self) -> dict[str, FileProgress]:
        """Per raw file holding run starts: its runs by skip reason and its samples."""
        self._build_steps()
        progress: dict[str, FileProgress] = {}
        for name, reason, runs, samples in self.con.execute(
            load_sql("traces/select_file_progress")
        ).fetchall():
            entry = progress.setdefault(str(name), FileProgress())
            entry.samples += int(samples)
            if reason:
                entry.skipped[str(reason)] = int(runs)
            else:
                entry.successful_runs = int(runs)
        return progress
