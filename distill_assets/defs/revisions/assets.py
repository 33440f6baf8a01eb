"""Revisions (docs/sources/revisions.md): validator REVISE → APPROVE loops → DPO preference pairs.

Layers, one daily partition (ingest date) each:
- `revisions/validations` + `revisions/quarantine` (bronze, DuckDB): every raw validation line
  parsed against `contracts.revisions.RevisionValidation`, or quarantined with a reason code, file
  and line (the parse generated from the contract, `contracts.revisions.RAW`).
- `revisions/revision_pairs` (feed of the `dpo` config, Polars) and `revisions/unpaired_turns`:
  every turn of the partition becomes exactly one pair or one unpaired row with its reason
  (`defs/revisions/pairing.py`, rules in `rules/revisions.py`).
- `revisions/turn_principles`: one improvement principle per pair, by the offline rule set or an
  optional LLM with offline fallback (`defs/revisions/principles.py`, `rules/principles.py`).

And one global table, run with the release: `revisions/principles`, the per-turn principles of
all partitions merged (`defs/revisions/merge.py`) and written as the markdown memory under
`<memory root>/Improvements/Principles/` (`defs/revisions/memory.py`).
"""

import dagster as dg
import polars as pl

from distill_assets.contracts import revisions as contract
from distill_assets.defs.ingest import (
    QUARANTINE_TABLE,
    bronze_outs,
    ingest_metadata,
)
from distill_assets.defs.jobs import GLOBAL_TAG
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import (
    DistillSettings,
    EmbedderResource,
    LlmResource,
    StagedParquet,
)
from distill_assets.defs.revisions.memory import principles_folder, sync_memory
from distill_assets.defs.revisions.merge import merge_principles
from distill_assets.defs.revisions.pairing import SOURCE, pair_turns
from distill_assets.defs.revisions.principles import (
    TURN_PRINCIPLE_SCHEMA,
    extract_turn_principles,
)
from distill_assets.defs.shards import ingest_day, shard_assets, shard_keys
from distill_assets.lib.lake import scan_partitions
from distill_assets.lib.metadata import funnel, histogram, preview, reason_counts
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.rules import rules_metadata, rules_version
from distill_assets.rules.revisions import PAIRED

VALIDATIONS = "validations"
PAIRS = "revision_pairs"
UNPAIRED = "unpaired_turns"
TURN_PRINCIPLES = "turn_principles"
PRINCIPLES = "principles"
PRINCIPLE_RULES = (SOURCE, "principles")
PRINCIPLE_PREVIEW_COLUMNS = ("source_ref", "category", "trigger_pattern", "title", "extractor")
MERGED_PREVIEW_COLUMNS = ("file", "category", "trigger_pattern", "support", "confidence")
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
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    deps=shard_keys(SOURCE),
)
def revision_validations(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> tuple[StagedParquet, StagedParquet]:
    """Parse a day of raw validation JSONL into bronze validations and quarantine (DuckDB).

    With `DISTILL_INGEST_SHARDS` above 1, merge the day's shard steps instead (`defs.shards`).
    """
    cfg = settings.resolved()
    paths = list_raw_files(cfg.raw_root, SOURCE, context.partition_key)
    result = ingest_day(context, contract.RAW, paths, cfg, bronze_exclude=("line",))
    context.add_output_metadata(ingest_metadata(result), output_name=VALIDATIONS)
    context.add_output_metadata(
        {"by_reason": funnel(result.quarantine_by_reason)}, output_name=QUARANTINE_TABLE
    )
    return result.bronze, result.quarantine


revision_shards = shard_assets(
    contract.RAW,
    lambda raw_root, day: list_raw_files(raw_root, SOURCE, day),
    bronze_exclude=("line",),
)


@dg.multi_asset(
    outs={
        PAIRS: dg.AssetOut(
            key=[SOURCE, PAIRS],
            description=(
                "DPO feed of revisions: one preference pair per turn whose loop went REVISE → "
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
    partitions_def=daily_partitions(),
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


@dg.asset(
    key=[SOURCE, TURN_PRINCIPLES],
    ins={
        "pairs": dg.AssetIn(key=[SOURCE, PAIRS]),
        "unpaired": dg.AssetIn(key=[SOURCE, UNPAIRED]),
    },
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    kinds={"polars"},
    code_version=rules_version(*PRINCIPLE_RULES),
)
def turn_principles(
    context: dg.AssetExecutionContext,
    pairs: pl.DataFrame,
    unpaired: pl.DataFrame,
    llm: LlmResource,
) -> pl.DataFrame:
    """Extract one improvement principle per revision pair (docs/sources/revisions.md#principles).

    Fields: category, trigger pattern, title, principle, why it works, original issue and
    successful fix. Extracted by the offline rule set (`rules/principles.py`), or by the
    configured LLM endpoint with the offline extractor taking every row the LLM could not do
    (counted in `llm_fallbacks`). `id` is the `principle_id` the turn's `dpo` row names; turns
    without a pair are counted by reason in `turn_outcomes`.
    """
    frame, extraction = extract_turn_principles(pairs, llm.client(), SOURCE)
    categories = dict(frame.get_column("category").value_counts(sort=True).iter_rows())
    context.add_output_metadata(
        {
            "principles": frame.height,
            "turn_outcomes": funnel(
                {"principle": frame.height, **reason_counts(unpaired)}, "outcome"
            ),
            "rows_by_extractor": funnel(extraction.rows_by_extractor, "extractor"),
            "llm_fallbacks": funnel(extraction.fallbacks),
            "by_category": funnel(categories, "category"),
            "preview": preview(frame.select(PRINCIPLE_PREVIEW_COLUMNS)),
            **rules_metadata(*PRINCIPLE_RULES),
        }
    )
    return frame


@dg.asset(
    key=[SOURCE, PRINCIPLES],
    deps=[dg.AssetKey([SOURCE, TURN_PRINCIPLES])],
    group_name=SOURCE,
    tags=GLOBAL_TAG,
    kinds={"polars"},
    code_version=rules_version(*PRINCIPLE_RULES),
)
def principles(
    context: dg.AssetExecutionContext, settings: DistillSettings, embedder: EmbedderResource
) -> pl.DataFrame:
    """Merge every partition's per-turn principles and write the principles memory.

    See docs/sources/revisions.md#merging-and-confidence.

    Principles that say the same thing (same category, near-identical trigger by the embedder)
    become one with a `support` count, all `source_turns` and a confidence that grows with
    support; one markdown file per principle under `<memory root>/Improvements/Principles/`,
    rewritten only when it changes. `distill principles search` retrieves them.
    """
    cfg = settings.resolved()
    turns = scan_partitions(cfg.lake_root, SOURCE, TURN_PRINCIPLES, TURN_PRINCIPLE_SCHEMA)
    merged = merge_principles(turns.drop("partition").collect(), embedder.embedder())
    folder = principles_folder(cfg.memory_root)
    synced = sync_memory(folder, merged)
    context.add_output_metadata(
        {
            "turn_principles": int(merged.get_column("support").sum() or 0),
            "principles": merged.height,
            "merged_away": int(merged.get_column("support").sum() or 0) - merged.height,
            "memory_folder": dg.MetadataValue.path(str(folder)),
            "files": funnel(
                {
                    "written": synced.written,
                    "unchanged": synced.unchanged,
                    "removed": synced.removed,
                },
                "files",
            ),
            "support": funnel(
                {
                    str(k): v
                    for k, v in sorted(merged.get_column("support").value_counts().iter_rows())
                },
                "support",
            ),
            "preview": preview(merged.select(MERGED_PREVIEW_COLUMNS)),
            **rules_metadata(*PRINCIPLE_RULES),
        }
    )
    return merged
