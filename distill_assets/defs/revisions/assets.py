"""Revisions (seed 002): validator REVISE → APPROVE loops → DPO preference pairs.

Layers, one daily partition (ingest date) each:
- `revisions/validations` + `revisions/quarantine` (bronze, DuckDB): every raw validation line
  parsed against `contracts.revisions.RevisionValidation`, or quarantined with a reason code, file
  and line (`sql/revisions/select_parsed_validations.sql`).
- `revisions/revision_pairs` (feed of the `dpo` config, Polars) and `revisions/unpaired_turns`:
  every turn of the partition becomes exactly one pair or one unpaired row with its reason
  (`defs/revisions/pairing.py`, rules in `rules/revisions.py`).
"""

import dagster as dg
import polars as pl

from distill_assets.defs.ingest import (
    QUARANTINE_TABLE,
    bronze_outs,
    ingest_metadata,
    ingest_partition,
)
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, StagedParquet
from distill_assets.defs.revisions.pairing import SOURCE, pair_turns
from distill_assets.lib.metadata import funnel, histogram, preview, reason_counts
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.rules import rules_metadata, rules_version
from distill_assets.rules.revisions import PAIRED

VALIDATIONS = "validations"
PAIRS = "revision_pairs"
UNPAIRED = "unpaired_turns"
PAIR_PREVIEW_COLUMNS = ("source_ref", "quality_score", "prompt", "chosen", "rejected")
UNPAIRED_PREVIEW_COLUMNS = ("turn_id", "reason", "detail", "query")


@dg.multi_asset(
    outs=bronze_outs(
        SOURCE,
        VALIDATIONS,
        bronze_description=(
            "Bronze validations: one row per valid raw line of the validation loop (turn_id, "
            "ts, iteration, query, response, decision, revision_hints, revision_focus), "
            "unknown fields in `extra`, `source_ref` = file:line."
        ),
        quarantine_description=(
            "Validation lines that failed the raw contract, with reason code, detail, file, "
            "line and raw text (invalid_json, torn_last_line, missing_turn_id, "
            "invalid_decision, duplicate_validation, ...)."
        ),
    ),
    partitions_def=daily_partitions,
    group_name=SOURCE,
)
def revision_validations(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> tuple[StagedParquet, StagedParquet]:
    """Parse a day of raw validation JSONL into bronze validations and quarantine (DuckDB)."""
    cfg = settings.resolved()
    paths = list_raw_files(cfg.raw_root, SOURCE, context.partition_key)
    result = ingest_partition(
        SOURCE, VALIDATIONS, paths, raw_root=cfg.raw_root, bronze_exclude=("line",)
    )
    context.add_output_metadata(ingest_metadata(result), output_name=VALIDATIONS)
    context.add_output_metadata(
        {"by_reason": funnel(result.quarantine_by_reason)}, output_name=QUARANTINE_TABLE
    )
    return result.bronze, result.quarantine


@dg.multi_asset(
    outs={
        PAIRS: dg.AssetOut(
            key=[SOURCE, PAIRS],
            description=(
                "DPO feed (seed 002): one preference pair per turn whose loop went REVISE → "
                "APPROVE with hints. prompt = query, chosen = approved response, rejected = the "
                "first response that got REVISE; metadata holds hints, focus, revision count."
            ),
            kinds={"polars"},
            code_version=rules_version(SOURCE),
        ),
        UNPAIRED: dg.AssetOut(
            key=[SOURCE, UNPAIRED],
            description=(
                "Turns that yield no pair, one row each with the reason (failed, "
                "approved_without_revision, revise_without_approve, incomplete_turn, "
                "empty_revision_hints, ...) and the loop's iteration:decision path."
            ),
            kinds={"polars"},
            code_version=rules_version(SOURCE),
        ),
    },
    ins={VALIDATIONS: dg.AssetIn(key=[SOURCE, VALIDATIONS])},
    partitions_def=daily_partitions,
    group_name=SOURCE,
)
def revision_pairs(
    context: dg.AssetExecutionContext, validations: pl.LazyFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Group a partition's validations by turn into DPO pairs and unpaired turns (Polars)."""
    pairs, unpaired = pair_turns(validations)
    unpaired_reasons = reason_counts(unpaired)
    rules = rules_metadata(SOURCE)
    context.add_output_metadata(
        {
            "turns": pairs.height + unpaired.height,
            "pairs": pairs.height,
            "turn_outcomes": funnel({PAIRED: pairs.height, **unpaired_reasons}, "outcome"),
            "quality_score": histogram(pairs.get_column("quality_score")),
            "preview": preview(pairs.select(PAIR_PREVIEW_COLUMNS)),
            **rules,
        },
        output_name=PAIRS,
    )
    context.add_output_metadata(
        {
            "by_reason": funnel(unpaired_reasons),
            "preview": preview(unpaired.select(UNPAIRED_PREVIEW_COLUMNS)),
            **rules,
        },
        output_name=UNPAIRED,
    )
    return pairs, unpaired
