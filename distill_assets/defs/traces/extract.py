"""Seed 003 extraction as one pure function shared by the assets and `distill sft-extract`.

`Extraction` opens a DuckDB session over one bronze events file (a partition of
`traces/events`) and derives, in SQL (`sql/traces/`, each step its `create_<table>` file):

1. `trace_step_facts` — one row per step `(run_id, t)`: the facts of its events (read from
   bronze columns, no event text);
2. `trace_runs` — one row per run: success and the rule that decided it, how it ended, counts;
3. `trace_steps_filtered` — every step with the seed 003 filters applied;
4. `request_contexts` — the requests of the steps that passed them, each parsed once: its
   message shape (what a sample is validated against) and its context turns;
5. `trace_steps` — one row per step `(run_id, t)` with `reason` NULL (a sample) or why it was
   dropped (seed 003 filters, then validation and near-duplicate dedup);
6. `sft_turns` — every kept step with its context and the columns both sample formats share.

Stages 1-2 are built when the session opens, 3-6 when first needed (writing only the runs
needs none of them). Writers then stream `runs`, `dropped_steps`, `sft_steps` (`together`
format) and `sft_tool_steps` (`tools` format) to Parquet, or the samples to JSONL (the CLI),
always in the same order: by the position of each step's `llm_action` in the raw files (file,
then line).
Everything is vectorized SQL; the only Python loops are over small per-reason aggregates.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Self

from distill_assets.lib.lake import ROW_GROUP_SIZE
from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules import traces as rules

# zstd level 1: samples are written once per materialization and read by the release, so write
# speed matters more than the last percent of size
COPY_PARQUET = (
    f"(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE {ROW_GROUP_SIZE})"
)
FORMATS = ("together", "tools")


@dataclass(frozen=True)
class ExtractOptions:
    """Seed 003 `SFTExtractConfig` options (defaults from rules/traces.py) plus its extensions."""

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
        """Samples per run that could yield samples (seed 003 "Avg steps per run")."""
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

    def __init__(self, events_file: str | Path, options: ExtractOptions) -> None:
        """Open a session over one bronze events Parquet file (a partition of `traces/events`)."""
        self.options = options
        self.con = connect()
        self.con.execute("SET preserve_insertion_order = true")
        # bronze rows are in (file, line) order: file_row_number orders them
        self.con.read_parquet(str(events_file), file_row_number=True).create_view("events")
        self.con.execute(
            "CREATE TEMP TABLE tool_args AS SELECT unnest($rows, recursive := true)",
            {"rows": rules.tool_arg_rows()},
        )
        for name, value in self._variables().items():
            self.con.execute(f"SET VARIABLE {name} = $value", {"value": value})
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
        self._steps_built = False

    def __enter__(self) -> Self:
        """Use as a context manager."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the session."""
        self.close()

    def close(self) -> None:
        """Close the DuckDB connection."""
        self.con.close()

    def _build_steps(self) -> None:
        """Derive the steps and their fates (stages 3-6), once, when first needed.

        Writing only the runs needs none of them.
        """
        if self._steps_built:
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
        self.con.execute(load_sql("traces/create_request_contexts"))
        self.con.execute(
            load_sql("traces/create_trace_steps"),
            {
                "validate": o.validate_samples,
                "dedup": o.dedup,
                "request_role_order": rules.REQUEST_ROLE_ORDER,
            },
        )
        self.con.execute(load_sql("traces/drop_trace_steps_filtered"))
        self.con.execute(load_sql("traces/create_sft_turns"))
        self._steps_built = True

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
            params = {"call_id_prefix": rules.TOOL_CALL_ID_PREFIX, "tools": rules.tools_json()}
            return load_sql("traces/select_sft_tool_steps"), params
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")

    def write_sft_steps(self, path: Path, fmt: str = "together") -> None:
        """Write the samples (a feed table) to Parquet at `path`."""
        statement, params = self.sft_steps_query(fmt)
        self.con.execute(f"COPY ({statement}) TO '{path}' {COPY_PARQUET}", params)

    def write_jsonl(self, path: Path, fmt: str = "together", split: str | None = None) -> int:
        """Write the samples (of one `split`, or all) as chat JSONL and return how many.

        Lines are `{"messages": [...]}`, plus `"tools": [...]` in the `tools` format.
        """
        statement, params = self.sft_steps_query(fmt)
        lines = load_sql(f"traces/select_jsonl_{fmt}")
        query = f"WITH samples AS ({statement}) {lines}"
        written = self.con.execute(
            f"COPY ({query}) TO '{path}' (FORMAT json)", {**params, "split": split}
        ).fetchone()
        return int(written[0]) if written else 0

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
