"""Escalations: raw JSONL → records → distillation_examples → instruction rows.

See docs/sources/escalations.md.

Layers, one daily partition (ingest date) each:
- `escalations/records` + `escalations/quarantine` (bronze, DuckDB): every raw line parsed against
  `contracts.escalations.Interaction`, or quarantined with a reason code, file and line.
- `escalations/distillation_examples` (silver, Polars): the seed's canonical table with reasoning
  type, steps, classification, quality flags and score (`rules/escalations.py`).
- the four export feeds (`exports.py`): `instruction_examples` (config `instruction`),
  `cot_examples` (`cot`), `preference_pairs` (`dpo`), `correction_examples` (`correction`).
"""

from collections import Counter

import dagster as dg
import polars as pl
from upath import UPath

from distill_assets.contracts.escalations import RAW
from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.escalations.compat import (
    HISTORY_SCHEMA,
    merge_history,
    release_rows,
    with_export_counts,
)
from distill_assets.defs.escalations.examples import example_batches
from distill_assets.defs.escalations.exports import FORMATS, write_export
from distill_assets.defs.escalations.legacy import STORED_TABLES, migrate_databases
from distill_assets.defs.escalations.llm_extraction import extract_with_llm
from distill_assets.defs.escalations.records import RECORDS, RECORDS_EXCLUDE, SOURCE
from distill_assets.defs.escalations.review import (
    apply_decisions,
    distilled_root,
    read_decisions,
    review_exclusions,
    with_corrected_responses,
)
from distill_assets.defs.escalations.review_files import refresh_review_files
from distill_assets.defs.escalations.seed_database import finish_database, stage_database
from distill_assets.defs.escalations.stats import STATS_COLUMNS, stats_metadata
from distill_assets.defs.escalations.working_store import database_path
from distill_assets.defs.ingest import QUARANTINE_TABLE, bronze_outs, ingest_metadata
from distill_assets.defs.jobs import GLOBAL_TAG
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, LlmResource, StagedParquet
from distill_assets.defs.shards import ingest_day, shard_assets, shard_keys
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import global_path, write_frames
from distill_assets.lib.metadata import column_counts, funnel, histogram, preview, reason_counts
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.rules import escalations as rules
from distill_assets.rules import rules_metadata, rules_version

EXAMPLES = "distillation_examples"
LEGACY_SUFFIXES = (".db",)
EXPORT_HISTORY = "export_history"
SEED_DATABASE = "seed_database"
PREVIEW_COLUMNS = ("id", "source_ref", "reasoning_type", "domain", "quality_score", "query")


@dg.multi_asset(
    outs=bronze_outs(
        SOURCE,
        RECORDS,
        bronze_description=(
            "Bronze escalations: one row per valid raw escalation line (one interaction), "
            "with its id (producer's or SHA256(query + timestamp)[:16]), unix `created_at`, "
            "optional pre-labels and unknown fields in `extra`."
        ),
        quarantine_description=(
            "Escalation lines that failed the raw contract, with reason code, detail, file, "
            "line and the raw text (invalid_json, missing_query, duplicate_id, ...)."
        ),
    ),
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    deps=shard_keys(SOURCE),
)
def escalation_records(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> tuple[StagedParquet, StagedParquet]:
    """Stream a day of raw escalation JSONL through DuckDB into records and quarantine.

    Legacy databases (`*.db`) are `legacy_migration`'s; every other file is read here (an
    unsupported one becomes an `unsupported_file` quarantine row). With `DISTILL_INGEST_SHARDS`
    above 1, merge the day's shard steps instead (`defs.shards`).
    """
    cfg = settings.resolved()
    paths = list_raw_files(cfg.raw_root, SOURCE, context.partition_key, exclude=LEGACY_SUFFIXES)
    result = ingest_day(context, RAW, paths, cfg, bronze_exclude=RECORDS_EXCLUDE)
    context.add_output_metadata(ingest_metadata(result), output_name=RECORDS)
    context.add_output_metadata(
        {"by_reason": funnel(result.quarantine_by_reason)}, output_name=QUARANTINE_TABLE
    )
    return result.bronze, result.quarantine


escalation_shards = shard_assets(
    RAW,
    lambda raw_root, day: list_raw_files(raw_root, SOURCE, day, exclude=LEGACY_SUFFIXES),
    bronze_exclude=RECORDS_EXCLUDE,
)


LEGACY_RECORDS = "legacy_records"
LEGACY_MIGRATION = "legacy_migration"
LEGACY_QUARANTINE = "legacy_quarantine"
LEGACY_STORED = {table: f"legacy_{table}" for table in STORED_TABLES}


def reconciliation_table(reconciliation: pl.DataFrame) -> dg.MetadataValue:
    """Render the legacy reconciliation (one row per database and table) as Markdown."""
    header = "| file | table | read | migrated | attached | stored | quarantined | problems |"
    lines = [
        f"| {r['source_file']} | {r['legacy_table']} | {r['rows_read']} | {r['migrated']} | "
        f"{r['attached']} | {r['stored']} | {r['quarantined']} | {', '.join(r['problems'])} |"
        for r in reconciliation.iter_rows(named=True)
    ]
    return dg.MetadataValue.md("\n".join([header, "|---" * 8 + "|", *lines]))


@dg.multi_asset(
    outs={
        LEGACY_RECORDS: dg.AssetOut(
            key=[SOURCE, LEGACY_RECORDS],
            kinds={"sqlite", "polars"},
            description=(
                "Records migrated from legacy knowledge_distillation.db files of the partition "
                "(examples, chain_of_thought, preference_pairs, raw_interactions), with their "
                "attached reasoning patterns, corrections, principles and review state."
            ),
        ),
        LEGACY_MIGRATION: dg.AssetOut(
            key=[SOURCE, LEGACY_MIGRATION],
            kinds={"sqlite", "polars"},
            description=(
                "Per legacy database and table: rows read / migrated / attached / stored / "
                "quarantined, quarantine reasons and table-level problems (missing table, "
                "missing or unknown column, corrupt file)."
            ),
        ),
        LEGACY_QUARANTINE: dg.AssetOut(
            key=[SOURCE, LEGACY_QUARANTINE],
            kinds={"sqlite", "polars"},
            description="Legacy rows that could not be migrated, with their source_ref and reason.",
        ),
        **{
            name: dg.AssetOut(
                kinds={"sqlite", "polars"},
                key=[SOURCE, name],
                description=f"The legacy `{table}` rows, as JSON, by source_ref.",
            )
            for table, name in LEGACY_STORED.items()
        },
    },
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    can_subset=False,
)
def legacy_migration(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Migrate the partition's legacy SQLite databases (`raw/escalations/<date>/*.db`)."""
    cfg = settings.resolved()
    paths = list_raw_files(cfg.raw_root, SOURCE, context.partition_key, suffixes=LEGACY_SUFFIXES)
    migration = migrate_databases(paths, raw_root=cfg.raw_root)
    reconciliation = migration.reconciliation
    context.add_output_metadata(
        {
            "databases": len(paths),
            "rows": migration.records.height,
            "reconciliation": reconciliation_table(reconciliation),
        },
        output_name=LEGACY_MIGRATION,
    )
    context.add_output_metadata(
        {"by_reason": funnel(reason_counts(migration.quarantine))}, output_name=LEGACY_QUARANTINE
    )
    return (
        migration.records,
        reconciliation,
        migration.quarantine,
        *(migration.stored[table] for table in LEGACY_STORED),
    )


@dg.asset(
    key=[SOURCE, EXAMPLES],
    ins={
        "records": dg.AssetIn(key=[SOURCE, RECORDS]),
        "legacy_records": dg.AssetIn(key=[SOURCE, LEGACY_RECORDS]),
    },
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    kinds={"polars"},
    code_version=rules_version(SOURCE),
)
def distillation_examples(
    context: dg.AssetExecutionContext,
    settings: DistillSettings,
    llm: LlmResource,
    records: pl.LazyFrame,
    legacy_records: pl.LazyFrame,
) -> StagedParquet:
    """Canonical distillation examples: one per escalation record.

    See docs/sources/escalations.md#distillation-examples.

    Reasoning type from the seed's CoT/tool/correction indicator regexes, numbered reasoning steps,
    classification (pre-labels win over heuristics), quality flags and the seed's quality score.
    With an LLM endpoint configured, steps, corrections and principles come from the model where
    it answered well (fallbacks counted). Review decisions (`distill review`) are applied:
    `human_reviewed` 1/-1 and the notes; `export_count` / `last_exported_at` come from
    `escalations/export_history` (the releases published so far). Records are processed and
    written in batches (metadata `batches`), so memory does not grow with the size of the day.
    """
    cfg = settings.resolved()
    client = llm.client()
    decisions = read_decisions(distilled_root(cfg.data_dir))
    history_path = global_path(cfg.lake_root, SOURCE, EXPORT_HISTORY)
    history = (
        pl.read_parquet(str(history_path))
        if history_path.exists()
        else pl.DataFrame(schema=HISTORY_SCHEMA)
    )
    by_extractor: Counter[str] = Counter()
    fallbacks: Counter[str] = Counter()
    batches = 0

    def finished(offline: pl.DataFrame) -> pl.DataFrame:
        nonlocal batches
        batches += 1
        built, extraction = extract_with_llm(offline, client)
        by_extractor.update(
            extraction.rows_by_extractor if extraction else {"offline": offline.height}
        )
        fallbacks.update(extraction.fallbacks if extraction else {})
        return with_export_counts(apply_decisions(built, decisions), history)

    target = working_dir(SOURCE) / f"{EXAMPLES}.parquet"
    corrected = with_corrected_responses(records, decisions)
    rows = write_frames(map(finished, example_batches(corrected, legacy_records)), target)
    summary = pl.read_parquet(target, columns=list(STATS_COLUMNS))
    context.add_output_metadata(
        {
            "rows": rows,
            "batches": batches,
            "reasoning_types": column_counts(summary, "reasoning_type"),
            "domains": column_counts(summary, "domain"),
            "quality_flags": column_counts(
                summary.select(pl.col("quality_flags").explode()).drop_nulls(),
                "quality_flags",
                "quality flag",
            ),
            "quality_score": histogram(summary.get_column("quality_score")),
            "not_an_answer_by_reason": column_counts(
                pl.read_parquet(target, columns=["answer_rejection"]).drop_nulls(),
                "answer_rejection",
                "not an answer: reason",
            ),
            **stats_metadata(summary),
            "rows_by_extractor": funnel(dict(by_extractor), "extractor"),
            "llm_fallbacks": funnel(dict(fallbacks)),
            "preview": preview(pl.read_parquet(target, columns=list(PREVIEW_COLUMNS), n_rows=5)),
            **rules_metadata(SOURCE),
        }
    )
    return StagedParquet(target)


def build_export_asset(name: str) -> dg.AssetsDefinition:
    """Return the partitioned asset of one export feed (`exports.FORMATS[name]`)."""
    export = FORMATS[name]

    @dg.asset(
        key=[SOURCE, export.table],
        ins={"examples": dg.AssetIn(key=[SOURCE, EXAMPLES])},
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        kinds={"polars"},
        code_version=rules_version(SOURCE),
        description=(
            f"The `{name}` export rows feeding the `{export.config}` config: examples that "
            "pass the export gate (not rejected, no refusal/junk flag, quality score at least the "
            f"rules' minimum) and the `{name}` condition; drop reasons counted (exports.py)."
        ),
    )
    def export_feed(context: dg.AssetExecutionContext, examples: pl.LazyFrame) -> StagedParquet:
        target = working_dir(SOURCE) / f"{export.table}.parquet"
        written = write_export(examples, name, target)
        summary = pl.read_parquet(target, columns=["id", "source_ref", "quality_score"])
        context.add_output_metadata(
            {
                "rows": written.rows,
                "input_examples": written.examples,
                "dropped_by_reason": funnel(written.dropped),
                "min_quality_score": rules.INSTRUCTION_MIN_QUALITY,
                "quality_score": histogram(summary.get_column("quality_score")),
                "preview": preview(summary),
                **rules_metadata(SOURCE),
            }
        )
        return StagedParquet(target)

    return export_feed


export_assets: list[dg.AssetsDefinition] = [build_export_asset(name) for name in FORMATS]


REVIEW_STATE = "review_state"
REVIEW_EXCLUSIONS = "review_exclusions"


@dg.asset(
    key=[SOURCE, REVIEW_EXCLUSIONS],
    deps=[dg.AssetKey([SOURCE, EXAMPLES])],
    group_name=SOURCE,
    tags=GLOBAL_TAG,
    kinds={"polars"},
)
def review_exclusions_table(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> pl.DataFrame:
    """Examples a reviewer rejected, as (source, subject, reason), for curation to drop.

    Runs with the release (global): the latest decision per example from
    `distilled/review/decisions.jsonl`; curation drops a rejected example's rows from every config
    (`EXCLUSION_TABLES`). It reads the decisions only, so curation does not wait for the review
    folders (`escalations/review_state` refreshes them beside it).
    """
    exclusions = review_exclusions(read_decisions(distilled_root(settings.resolved().data_dir)))
    context.add_output_metadata({"rejected": exclusions.height})
    return exclusions


@dg.asset(
    key=[SOURCE, REVIEW_STATE],
    deps=[dg.AssetKey([SOURCE, EXAMPLES])],
    group_name=SOURCE,
    tags=GLOBAL_TAG,
    kinds={"polars"},
)
def review_state(context: dg.AssetExecutionContext, settings: DistillSettings) -> pl.DataFrame:
    """Refresh the seed's review folders; return the latest review decision per example.

    Runs with the release (global), beside curation: nothing downstream waits for it (the
    exclusions curation reads are `escalations/review_exclusions`). Returns (id, decision, notes,
    reviewer, ts) from `distilled/review/decisions.jsonl`, written by `distill review`. Refreshes
    `distilled/pending_review/batch_YYYYMMDD.json` (per ingest date, what still awaits review) and
    `distilled/approved/reviewed_YYYYMMDD.jsonl` (per decision date, what was reviewed), writing
    only the files whose partition or decisions changed (review_files.py); the metadata counts
    the files written, kept and deleted.
    """
    cfg = settings.resolved()
    root = distilled_root(cfg.data_dir)
    decisions = read_decisions(root)
    written = refresh_review_files(root, cfg.lake_root, decisions)
    context.add_output_metadata(
        {
            "decisions": decisions.height,
            "by_decision": column_counts(decisions, "decision"),
            "pending_examples": written.pending,
            "reviewed_examples": written.reviewed,
            **written.counts,
        }
    )
    return decisions


RELEASE_DATASET_KEY = dg.AssetKey(["release", "dataset"])


def _previous_history(lake_root: str) -> pl.DataFrame:
    """Return the export history recorded so far (empty before the first release)."""
    path = global_path(lake_root, SOURCE, EXPORT_HISTORY)
    return pl.read_parquet(str(path)) if path.exists() else pl.DataFrame(schema=HISTORY_SCHEMA)


@dg.asset(
    key=[SOURCE, SEED_DATABASE],
    deps=[dg.AssetKey([SOURCE, EXAMPLES])],
    group_name=SOURCE,
    tags=GLOBAL_TAG,
    kinds={"polars", "sqlite"},
)
def seed_database(settings: DistillSettings) -> dg.MaterializeResult:
    """Stage the seed's SQLite file beside curation; `escalations/export_history` finishes it.

    Runs with the release (global), off its chain: reads back what was changed in
    `distilled/distillation.db` since the last release (working_store.py), then writes the whole
    database, review decisions applied and export counts from the history recorded so far, to
    `distilled/.distillation.staged.db` with what it was built from (seed_database.py).
    """
    cfg = settings.resolved()
    root = distilled_root(cfg.data_dir)
    written = stage_database(cfg.lake_root, cfg.raw_root, root, _previous_history(cfg.lake_root))
    return dg.MaterializeResult(
        metadata={
            "staged_rows": written.rows,
            "sqlite_decisions_read_back": written.counts["decisions"],
            "sqlite_rows_inserted_by_others": written.counts["inserted"],
        }
    )


@dg.asset(
    key=[SOURCE, EXPORT_HISTORY],
    deps=[
        RELEASE_DATASET_KEY,
        dg.AssetKey([SOURCE, EXAMPLES]),
        dg.AssetKey([SOURCE, SEED_DATABASE]),
    ],
    # it runs after the publish: in the release group the UI draws the groups in data-flow order
    group_name="release",
    tags=GLOBAL_TAG,
    kinds={"polars", "sqlite"},
)
def export_history(context: dg.AssetExecutionContext, settings: DistillSettings) -> pl.DataFrame:
    """Which published versions each escalation example appeared in, and the seed's SQLite file.

    After a publish, records (version, example_id, exported_at) for the escalation rows of the
    published version (read from the checked candidate, which is what was published; nothing
    before the first release). Then reads back again what was changed in
    `distilled/distillation.db` (reviews, notes and corrected answers become decisions in
    `review/decisions.jsonl`; rows another writer inserted land in the raw folder of their date:
    working_store.py), and finishes the file `escalations/seed_database` staged: the changes since
    it was staged and the published examples' `export_count` and `last_exported_at` applied, then
    renamed into place. A missing or stale staged file is logged and the database rewritten whole
    in exactly the seed's schema (compat.py, seed_database.py).
    """
    cfg = settings.resolved()
    history = _previous_history(cfg.lake_root)
    versions = set(history.get_column("version").to_list())
    published = pl.DataFrame(schema=HISTORY_SCHEMA)
    candidate = UPath(cfg.lake_root) / "release" / "candidate"
    if (candidate / "release.json").exists():
        manifest = ReleaseManifest.model_validate_json((candidate / "release.json").read_text())
        frames = [
            pl.read_parquet(str(candidate / f.path), columns=["source", "metadata"])
            for f in manifest.files
        ]
        rows = pl.concat(frames) if frames else pl.DataFrame()
        published = release_rows(manifest.version, manifest.newest_partition, rows)
        history = merge_history(history, published)
    root = distilled_root(cfg.data_dir)
    written = finish_database(
        cfg.lake_root,
        cfg.raw_root,
        root,
        history,
        versions=versions,
        published=published.get_column("example_id").to_list(),
    )
    if written.rewritten_because is not None:
        context.log.info(
            f"seed database: the staged file {written.rewritten_because}; rewriting it whole"
        )
    context.add_output_metadata(
        {
            "versions": history.get_column("version").n_unique(),
            "rows": history.height,
            "sqlite_path": dg.MetadataValue.path(str(database_path(root))),
            "sqlite_rows": written.rows,
            "sqlite_from_staged": written.rewritten_because is None,
            "sqlite_decisions_read_back": written.counts["decisions"],
            "sqlite_rows_inserted_by_others": written.counts["inserted"],
        }
    )
    return history
