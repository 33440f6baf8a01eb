"""Blocking checks on the traces room.

Raw records reconcile, every step is accounted for once, and every written sample is valid in its
format and has its feed's columns.
"""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.ingest import reconcile_check
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings
from distill_assets.defs.traces.assets import DROPPED_STEPS, EVENTS, SFT_STEPS, SFT_TOOL_STEPS
from distill_assets.lib.lake import partition_path
from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules import traces as rules

SOURCE = "traces"
STEPS_RECONCILE = "steps_reconcile"
SAMPLES_VALID = "samples_valid"

traces_raw_reconciles = reconcile_check(SOURCE, "events")


def _path(context: dg.AssetCheckExecutionContext, settings: DistillSettings, table: str) -> str:
    lake = settings.resolved().lake_root
    return str(partition_path(lake, SOURCE, table, context.partition_key))


def _query(settings: DistillSettings, statement: str, params: dict[str, object]) -> list[tuple]:
    con = connect(settings.resolved().lake_root)
    try:
        return con.execute(statement, params).fetchall()
    finally:
        con.close()


@dg.asset_check(
    partitions_def=daily_partitions(),
    asset=DROPPED_STEPS,
    name=STEPS_RECONCILE,
    blocking=True,
    additional_deps=[EVENTS, SFT_STEPS],
    description="Every step of the partition's runs is exactly one sample or one dropped step.",
)
def traces_steps_reconcile(
    context: dg.AssetCheckExecutionContext, settings: DistillSettings
) -> dg.AssetCheckResult:
    """Check steps in bronze = sft_steps rows + dropped_steps rows, with no step in both."""
    ((steps, samples, dropped, overlap),) = _query(
        settings,
        load_sql("traces/select_step_reconciliation"),
        {
            "events": _path(context, settings, "events"),
            "samples": _path(context, settings, "sft_steps"),
            "dropped": _path(context, settings, "dropped_steps"),
        },
    )
    return dg.AssetCheckResult(
        passed=steps == samples + dropped and overlap == 0,
        metadata={"steps": steps, "samples": samples, "dropped": dropped, "in_both": overlap},
    )


def _validity_check(asset: dg.AssetKey, table: str, fmt: str) -> dg.AssetChecksDefinition:
    statement = load_sql(f"traces/select_invalid_{fmt}_samples")
    params: dict[str, object] = (
        {"role_order": rules.TOGETHER_ROLE_ORDER, "tool_result_prefix": rules.TOOL_RESULT_PREFIX}
        if fmt == "together"
        else {"role_order": rules.TOOLS_ROLE_ORDER}
    )

    @dg.asset_check(
        partitions_def=daily_partitions(),
        asset=asset,
        name=SAMPLES_VALID,
        blocking=True,
        description=f"Every written sample is valid in the `{fmt}` format (roles, tool calls).",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, settings: DistillSettings
    ) -> dg.AssetCheckResult:
        invalid = _query(settings, statement, {**params, "path": _path(context, settings, table)})
        problems: dict[str, int] = {}
        for _, problem in invalid:
            problems[problem] = problems.get(problem, 0) + 1
        return dg.AssetCheckResult(
            passed=not invalid,
            metadata={"invalid_samples": len(invalid), **problems},
        )

    return _check


traces_sft_steps_valid = _validity_check(SFT_STEPS, "sft_steps", "together")
traces_sft_tool_steps_valid = _validity_check(SFT_TOOL_STEPS, "sft_tool_steps", "tools")


def feed_schema_check(config: str) -> str:
    """Return the name of the check that a table matches `config`'s feed schema."""
    return f"matches_{config}_feed_schema"


def _feed_check(asset: dg.AssetKey, table: str, config: str) -> dg.AssetChecksDefinition:
    @dg.asset_check(
        partitions_def=daily_partitions(),
        asset=asset,
        name=feed_schema_check(config),
        blocking=True,
        description=f"The table has every column of feed_schema({config!r}) with its type.",
    )
    def _check(
        context: dg.AssetCheckExecutionContext, settings: DistillSettings
    ) -> dg.AssetCheckResult:
        schema = pl.scan_parquet(_path(context, settings, table)).collect_schema()
        expected = feed_schema(config)
        wrong = {
            name: str(schema.get(name))
            for name, dtype in expected.items()
            if schema.get(name) != dtype
        }
        return dg.AssetCheckResult(passed=not wrong, metadata={"wrong_columns": wrong})

    return _check


traces_sft_feed_schema = _feed_check(SFT_STEPS, "sft_steps", "sft")
traces_sft_tools_feed_schema = _feed_check(SFT_TOOL_STEPS, "sft_tool_steps", "sft_tools")
