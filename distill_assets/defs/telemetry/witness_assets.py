"""The Witness review queue and its exclusions, global assets that run with the release.

See docs/sources/telemetry.md#witness-review; the logic is `witness.py`, the triggers
`rules/telemetry_witness.py`.
"""

import dagster as dg
import polars as pl

from distill_assets.defs.jobs import GLOBAL_TAG
from distill_assets.defs.resources import DistillSettings
from distill_assets.defs.telemetry import witness
from distill_assets.lib.metadata import column_counts
from distill_assets.rules import rules_version

SOURCE = "telemetry"
WITNESS_QUEUE = "witness_queue"
WITNESS_EXCLUSIONS = "witness_exclusions"


@dg.multi_asset(
    outs={
        WITNESS_QUEUE: dg.AssetOut(
            key=[SOURCE, WITNESS_QUEUE],
            kinds={"polars"},
            tags=GLOBAL_TAG,
            code_version=rules_version("telemetry_witness"),
            description=(
                "Telemetry feed rows queued for Witness review (high ambiguity, extreme "
                "novelty, fraud-flagged) with their triggers and the decision so far, from "
                "`distilled/review/telemetry/decisions.jsonl` (`distill review --source "
                "telemetry`)."
            ),
        ),
        WITNESS_EXCLUSIONS: dg.AssetOut(
            key=[SOURCE, WITNESS_EXCLUSIONS],
            kinds={"polars"},
            tags=GLOBAL_TAG,
            code_version=rules_version("telemetry_witness"),
            description=(
                "Telemetry rows a Witness rejected, as (source, subject = row id, reason): "
                "curation drops them from every config (EXCLUSION_TABLES)."
            ),
        ),
    },
    deps=[
        *(dg.AssetKey([SOURCE, table]) for table in witness.FEED_TABLES),
        dg.AssetKey([SOURCE, "player_quality"]),
    ],
    group_name=SOURCE,
    can_subset=False,
)
def telemetry_witness_review(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Build the Witness queue of all telemetry feed partitions and the rejected rows (global)."""
    cfg = settings.resolved()
    decisions = witness.read_decisions(cfg.data_dir)
    queued = witness.queue(cfg.lake_root, decisions)
    rejected = witness.exclusions(decisions)
    triggers = queued.select(pl.col("triggers").explode().alias("trigger")).drop_nulls()
    context.add_output_metadata(
        {
            "queued": queued.height,
            "pending": queued.filter(pl.col("decision").is_null()).height,
            "by_trigger": column_counts(triggers, "trigger"),
            "by_decision": column_counts(decisions, "decision"),
        },
        output_name=WITNESS_QUEUE,
    )
    context.add_output_metadata({"rejected": rejected.height}, output_name=WITNESS_EXCLUSIONS)
    return queued, rejected
