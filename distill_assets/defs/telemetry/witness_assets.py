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


@dg.asset(
    key=[SOURCE, WITNESS_QUEUE],
    deps=[
        *(dg.AssetKey([SOURCE, table]) for table in witness.FEED_TABLES),
        dg.AssetKey([SOURCE, "player_quality"]),
    ],
    group_name=SOURCE,
    tags=GLOBAL_TAG,
    kinds={"polars"},
    code_version=rules_version("telemetry_witness"),
)
def telemetry_witness_queue(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> pl.DataFrame:
    """Telemetry feed rows queued for Witness review, with their triggers and decision so far.

    Global, with the release: high ambiguity, extreme novelty and fraud-flagged rows of every
    telemetry feed partition, with the decisions of `distilled/review/telemetry/decisions.jsonl`
    (`distill review --source telemetry`). Nothing downstream waits for it: curation reads the
    rejections from `telemetry/witness_exclusions`.
    """
    cfg = settings.resolved()
    decisions = witness.read_decisions(cfg.data_dir)
    queued = witness.queue(cfg.lake_root, decisions)
    triggers = queued.select(pl.col("triggers").explode().alias("trigger")).drop_nulls()
    context.add_output_metadata(
        {
            "queued": queued.height,
            "pending": queued.filter(pl.col("decision").is_null()).height,
            "by_trigger": column_counts(triggers, "trigger"),
            "by_decision": column_counts(decisions, "decision"),
        }
    )
    return queued


@dg.asset(
    key=[SOURCE, WITNESS_EXCLUSIONS],
    group_name=SOURCE,
    tags=GLOBAL_TAG,
    kinds={"polars"},
    code_version=rules_version("telemetry_witness"),
)
def telemetry_witness_exclusions(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> pl.DataFrame:
    """Telemetry rows a Witness rejected, as (source, subject = row id, reason).

    Global, with the release: curation drops them from every config (EXCLUSION_TABLES). Read
    from the decisions alone, so curation does not wait for the queue's scan of every feed
    partition.
    """
    rejected = witness.exclusions(witness.read_decisions(settings.resolved().data_dir))
    context.add_output_metadata({"rejected": rejected.height})
    return rejected
