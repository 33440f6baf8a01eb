"""Agent traces (docs/sources/traces.md#agent-traces), one daily partition per ingest date.

Raw JSONL → `events` + `quarantine` → `runs`, `sft_steps`, `sft_tool_steps`, `dropped_steps`.
"""

from contextlib import AbstractContextManager
from pathlib import Path

import dagster as dg
import polars as pl

from distill_assets.contracts import traces
from distill_assets.defs.ingest import bronze_outs, ingest_metadata
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, StagedParquet
from distill_assets.defs.shards import ingest_day, shard_assets, shard_keys
from distill_assets.defs.traces.sft_extraction import Extraction, ExtractOptions
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import local_file, partition_path
from distill_assets.lib.metadata import funnel, histogram, preview
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.rules import rules_metadata, rules_version
from distill_assets.rules import traces as rules

SOURCE = "traces"
EVENTS = dg.AssetKey([SOURCE, "events"])
RUNS = dg.AssetKey([SOURCE, "runs"])
SFT_STEPS = dg.AssetKey([SOURCE, "sft_steps"])
SFT_TOOL_STEPS = dg.AssetKey([SOURCE, "sft_tool_steps"])
DROPPED_STEPS = dg.AssetKey([SOURCE, "dropped_steps"])


class SftExtractConfig(dg.Config):
    """`SFTExtractConfig` with its defaults and its "future enhancements".

    See docs/sources/traces.md#options.

    The run-config face of `ExtractOptions` (same fields and defaults; a test keeps them equal).
    """

    require_success: bool = rules.REQUIRE_SUCCESS
    require_valid_tool_ok: bool = rules.REQUIRE_VALID_TOOL_OK
    max_context_chars: int = rules.MAX_CONTEXT_CHARS
    include_recovery: bool = rules.INCLUDE_RECOVERY
    dedup: bool = rules.DEDUP
    validate_samples: bool = rules.VALIDATE
    eval_fraction: float = rules.EVAL_FRACTION

    def options(self) -> ExtractOptions:
        """Return the extraction options (the ones `distill sft-extract` takes)."""
        return ExtractOptions(**self.model_dump())


def _events_file(settings: DistillSettings, partition: str) -> AbstractContextManager[Path]:
    return local_file(partition_path(settings.resolved().lake_root, SOURCE, "events", partition))


def _workdir() -> Path:
    return working_dir(SOURCE)


@dg.multi_asset(
    outs=bronze_outs(
        SOURCE,
        "events",
        bronze_description=(
            "Bronze trace events: one row per valid JSONL line of the llm-repo-agent trace "
            "writer (`kind`, or its alias `type`), with the envelope parsed (ts, kind, "
            "run_id, t, task_id) and the event kept verbatim; file and line of every event."
        ),
        quarantine_description=(
            "Trace lines that are not valid events, with a reason code (torn_last_line, "
            "invalid_json, not_an_object, missing_<field>, invalid_<field>, …), file and line."
        ),
    ),
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    deps=shard_keys(SOURCE),
)
def traces_bronze(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> tuple[StagedParquet, StagedParquet]:
    """Parse a day's raw trace files into bronze events and quarantine in one streaming pass.

    With `DISTILL_INGEST_SHARDS` above 1, merge the day's shard steps instead (`defs.shards`).
    """
    cfg = settings.resolved()
    paths = list_raw_files(cfg.raw_root, SOURCE, context.partition_key)
    result = ingest_day(context, traces.RAW, paths, cfg)
    context.add_output_metadata(ingest_metadata(result), output_name="events")
    context.add_output_metadata(
        {"quarantine_by_reason": funnel(result.quarantine_by_reason)}, output_name="quarantine"
    )
    return result.bronze, result.quarantine


traces_shards = shard_assets(
    traces.RAW, lambda raw_root, day: list_raw_files(raw_root, SOURCE, day)
)


@dg.asset(
    key=RUNS,
    deps=[EVENTS],
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    kinds={"duckdb", "parquet"},
    code_version=rules_version(SOURCE),
)
def traces_runs(context: dg.AssetExecutionContext, settings: DistillSettings) -> StagedParquet:
    """One row per agent run of the day's traces.

    Task, goal, model, source file; whether it succeeded and by which rule (`run_end.last_test`,
    `final.test_result` or `none`), how it ended (final, max_iters, llm_parse_error, incomplete)
    and its counts of steps, tool calls and ok tool calls.
    """
    target = _workdir() / "runs.parquet"
    with (
        _events_file(settings, context.partition_key) as events,
        Extraction(events, ExtractOptions()) as ex,
    ):
        ex.write_runs(target)
    runs = pl.read_parquet(target)
    context.add_output_metadata(
        {
            "successful_runs": int(runs["success"].sum()),
            "runs_by_success_rule": funnel(_counts(runs, "success_rule"), "success rule"),
            "runs_by_end": funnel(_counts(runs, "ended_by"), "ended by"),
            "unsuccessful_by_reason": funnel(
                _counts(runs.drop_nulls("skip_reason"), "skip_reason")
            ),
            "preview": preview(runs.select("run_id", "task_id", "success", "ended_by", "steps")),
            **rules_metadata(SOURCE),
        }
    )
    return StagedParquet(target)


@dg.multi_asset(
    outs={
        "sft_steps": dg.AssetOut(
            key=SFT_STEPS,
            kinds={"duckdb", "parquet"},
            code_version=rules_version(SOURCE),
            description=(
                "Step-level SFT samples of traces, the `sft` feed: one per ok call of a known "
                "tool in a successful run; context = the llm_request that produced the action "
                "(system, GOAL, history with tool outputs cut to max_context_chars), target = "
                "the assistant's tool-call JSON. Together/OpenAI chat format."
            ),
        ),
        "sft_tool_steps": dg.AssetOut(
            key=SFT_TOOL_STEPS,
            kinds={"duckdb", "parquet"},
            code_version=rules_version(SOURCE),
            description=(
                "The same samples in the TRL/OpenAI tool-calling format, the `sft_tools` feed: "
                "assistant `tool_calls` with JSON-string arguments, `tool` messages with "
                "`tool_call_id`, and a `tools` column with the tools' JSON schemas."
            ),
        ),
        "dropped_steps": dg.AssetOut(
            key=DROPPED_STEPS,
            kinds={"duckdb", "parquet"},
            code_version=rules_version(SOURCE),
            description=(
                "Every agent step that did not become a sample, with the reason it was dropped "
                "(run not successful, final action, unknown tool, missing args, tool not ok, "
                "recovery step, invalid sample, duplicate, …)."
            ),
        ),
    },
    deps=[EVENTS],
    partitions_def=daily_partitions(),
    group_name=SOURCE,
)
def traces_sft(
    context: dg.AssetExecutionContext, config: SftExtractConfig, settings: DistillSettings
) -> tuple[StagedParquet, StagedParquet, StagedParquet]:
    """Extract step-level SFT samples (both formats) and the dropped-step funnel.

    See docs/sources/traces.md#samples.

    The request text is parsed and rendered in slices of the bronze file (metadata `slices`), so
    memory does not grow with the size of the day's contexts.
    """
    options = config.options()
    work = _workdir()
    sft, tools, dropped = work / "sft.parquet", work / "sft_tools.parquet", work / "dropped.parquet"
    with _events_file(settings, context.partition_key) as events, Extraction(events, options) as ex:
        ex.write_sft_steps(sft, "together")
        ex.write_sft_steps(tools, "tools")
        ex.write_dropped_steps(dropped)
        summary = ex.summary()
        slice_count = ex.slice_count
    samples = pl.read_parquet(sft, columns=["quality_score", "split", "sample_kind", "tool_name"])
    shared = {
        "samples": summary.samples,
        "steps": summary.steps,
        "runs": summary.runs,
        "successful_runs": summary.successful_runs,
        "avg_samples_per_run": round(summary.avg_steps_per_run, 3),
        "slices": slice_count,
        "options": dg.MetadataValue.json(options.as_dict()),
        **rules_metadata(SOURCE),
    }
    context.add_output_metadata(
        {
            **shared,
            "dropped_by_reason": funnel(summary.dropped_by_reason),
            "unsuccessful_runs_by_reason": funnel(summary.runs_by_skip_reason),
            "samples_by_split": funnel(_counts(samples, "split"), "split"),
            "samples_by_tool": funnel(_counts(samples, "tool_name"), "tool"),
            "samples_by_kind": funnel(_counts(samples, "sample_kind"), "kind"),
            "quality_score": histogram(samples["quality_score"]),
            "preview": preview(pl.read_parquet(sft, n_rows=5).drop("messages")),
        },
        output_name="sft_steps",
    )
    context.add_output_metadata(shared, output_name="sft_tool_steps")
    context.add_output_metadata(
        {"dropped_by_reason": funnel(summary.dropped_by_reason)}, output_name="dropped_steps"
    )
    return StagedParquet(sft), StagedParquet(tools), StagedParquet(dropped)


def _counts(frame: pl.DataFrame, column: str) -> dict[str, int]:
    counted = frame.group_by(column).len()
    return {str(value): int(n) for value, n in counted.iter_rows()}
