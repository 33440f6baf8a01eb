"""Curation assets: two per release config, over all history of its feed tables, made by one op.

`curation/<config>` holds the scrubbed, deduplicated (exact, near, semantic), decontaminated and
gated rows of every feed table of the config (`CONFIG_FEEDS`), with a train/test split that always
works, stored one file per feed partition (`curation/<config>/<day>.parquet`, `curated_table.py`);
`curation/<config>_duplicates` holds every removed row with its reason and the id of the row kept
in its place (or the eval file it leaked from). All are unpartitioned assets of one multi-asset,
`curate`, materialized together: each config's decisions are global over its history, and the
splits are decided once over every config's published rows (`splits.py`). Per-row work is kept
per feed partition in `curation/<config>_products/<day>.parquet`, made by the day's ingest
(`daily.py`) and redone here only for missing or changed partitions, and a curated partition
file is rewritten only when its rows' decisions changed, so the result never depends on the
order partitions were ingested in and a night costs in proportion to its new day. The assets
write their files themselves (no IO manager). The funnel is also written to
`curation/<config>_funnel` for the release card. Rules and hashes: `distill_assets.rules.curation`.
"""

from collections.abc import Iterator

import dagster as dg
import polars as pl

from distill_assets.contracts.published import CONFIG_FEEDS, EXCLUSION_TABLES
from distill_assets.defs.curation.curated_table import curated_schema
from distill_assets.defs.curation.daily import product_contexts
from distill_assets.defs.curation.funnel import funnel_table, write_funnel
from distill_assets.defs.curation.pipeline import (
    REMOVED_COLUMNS,
    CurationResult,
    curate_lakes,
    feed_partitions,
    scan_exclusions,
)
from distill_assets.defs.resources import DistillSettings, EmbedderResource
from distill_assets.lib.metadata import funnel, histogram, preview
from distill_assets.rules import rules_metadata, rules_version
from distill_assets.rules.curation import SPLITS, TEST_FRACTION

GROUP = "curation"
KINDS = {"polars", "duckdb"}


def duplicates_key(config: str) -> dg.AssetKey:
    """Return the key of a config's removed-duplicates table."""
    return dg.AssetKey([GROUP, f"{config}_duplicates"])


def source_split_counts(curated: pl.DataFrame) -> dg.MetadataValue:
    """Render rows per source and split as a Markdown table."""
    counts = curated.group_by("source", "split").len()
    lookup = {(s, sp): n for s, sp, n in counts.iter_rows()}
    sources = sorted({s for s, _ in lookup})
    lines = [
        f"| {s} | " + " | ".join(str(lookup.get((s, sp), 0)) for sp in SPLITS) + " |"
        for s in sources
    ]
    header = "| source | " + " | ".join(SPLITS) + " |\n|---|" + "---|" * len(SPLITS)
    return dg.MetadataValue.md("\n".join([header, *lines]) if lines else "no rows")


def redaction_table(redactions: dict[str, int]) -> dg.MetadataValue:
    """Render matches replaced per redaction kind (in rule order) as a Markdown table."""
    lines = [f"| {kind} | {n} |" for kind, n in redactions.items()]
    return dg.MetadataValue.md("| kind | matches |\n|---|---|\n" + "\n".join(lines))


def input_partitions(partitions: dict[str, list[str]]) -> dg.MetadataValue:
    """Render, per feed table, how many partitions were read and their range."""
    lines = [
        f"| {feed} | {len(days)} | {days[0] if days else ''} | {days[-1] if days else ''} |"
        for feed, days in sorted(partitions.items())
    ]
    return dg.MetadataValue.md(
        "| feed table | partitions | first | last |\n|---|---|---|---|\n" + "\n".join(lines)
    )


def test_share(curated: pl.DataFrame) -> float:
    """Return the fraction of curated rows in `test` (0 when there are none)."""
    if curated.is_empty():
        return 0.0
    return round(float((curated.get_column("split") == "test").mean()), 4)


def column_schema(schema: pl.Schema) -> dg.MetadataValue:
    """Return a table's columns as Dagster column-schema metadata (what the catalog shows)."""
    columns = [dg.TableColumn(name, str(dtype)) for name, dtype in schema.items()]
    return dg.MetadataValue.table_schema(dg.TableSchema(columns))


# columns that hold a telemetry player_key (`metadata` JSON included): kept out of previews
PSEUDONYM_COLUMNS = ("split_group", "subject", "metadata")


def newest_rows(result: CurationResult, rows: int = 5) -> pl.DataFrame:
    """Return the first rows of the newest curated partition file that has rows."""
    for part in reversed(result.partitions):
        if part.rows:
            with part.path.open("rb") as handle:
                return pl.read_parquet(handle, n_rows=rows)
    return pl.DataFrame()


def curation_metadata(
    config: str, result: CurationResult, partitions: dict[str, list[str]]
) -> dict[str, object]:
    """Return the materialization metadata of a curated table."""
    curated = result.curated
    return {
        "dagster/row_count": dg.MetadataValue.int(curated.height),
        "dagster/column_schema": column_schema(curated_schema(config)),
        "curated_rewritten": dg.MetadataValue.json(result.curated_rewritten),
        "curated_partitions": dg.MetadataValue.int(len(result.partitions)),
        "rows_in": dg.MetadataValue.int(result.rows_in),
        "rows_out": dg.MetadataValue.int(curated.height),
        "dropped": funnel(result.drop_reasons),
        "redactions": redaction_table(result.redactions),
        "redacted_rows": dg.MetadataValue.int(result.redacted_rows),
        # rows (and U+FFFD characters) per partition whose text is not what was said: gated out
        "replacement_chars": dg.MetadataValue.json(result.replacement_chars),
        "rows_by_source_and_split": source_split_counts(curated),
        "funnel": funnel_table(result.funnel),
        "test_fraction": dg.MetadataValue.float(TEST_FRACTION),
        "test_share": dg.MetadataValue.float(test_share(curated)),
        "rows_by_split_key": dg.MetadataValue.json(result.split_by),
        "products_computed": dg.MetadataValue.json(result.products_computed),
        # the days whose product was fresh: made by the day's `<config>_products` asset, or kept
        "products_reused": dg.MetadataValue.json(result.products_reused),
        # rows and state components decided again this run, of all rows decided (counts only)
        "decisions": dg.MetadataValue.json(result.decided),
        "quality_score": histogram(curated.get_column("quality_score")),
        "input_partitions": input_partitions(partitions),
        # no pseudonyms in the instance: a deletion cannot erase Dagster metadata (docs/privacy.md)
        "preview": preview(newest_rows(result).drop(PSEUDONYM_COLUMNS, strict=False)),
        **rules_metadata(GROUP),
    }


def curation_specs(config: str, code_version: str) -> list[dg.AssetSpec]:
    """Return the specs of a config's curated table and removed-duplicates table."""
    exclusions = [dg.AssetKey([source, table]) for source, table in EXCLUSION_TABLES]
    feeds = [dg.AssetKey([source, table]) for source, table in CONFIG_FEEDS[config]]
    # the splits are decided over every config's rows: a curated table reads every feed
    every_feed = sorted(
        {
            dg.AssetKey([source, table])
            for tables in CONFIG_FEEDS.values()
            for source, table in tables
        },
        key=lambda key: key.to_user_string(),
    )
    return [
        dg.AssetSpec(
            key=dg.AssetKey([GROUP, config]),
            description=(
                f"`{config}` rows of every feed table and partition, without the subjects an "
                "exclusion table lists (deletion requests, review rejections), scrubbed of "
                "secrets and personal data (`rules/curation.py`), deduplicated exactly "
                "(normalized content hash), near (MinHash LSH, Jaccard >= 0.8) and "
                "semantically (embedding cosine > 0.99) (representative: highest quality, then "
                "earliest, then smallest id), without rows sharing a 13-word n-gram with an "
                "evaluation set or failing the config's quality gate, and split train/test by "
                "a stable hash of the row's group, merged over every config with the groups "
                "sharing a normalized prompt or a source record. Columns: the published ones, "
                "`split`, and audit columns `split_group, content_hash, partition, split_by`. "
                f"One file per feed partition, `curation/{config}/<day>.parquet`, rewritten "
                "only when its rows' decisions changed."
            ),
            code_version=code_version,
            kinds=KINDS,
            deps=[*every_feed, *exclusions],
            group_name=GROUP,
        ),
        dg.AssetSpec(
            key=duplicates_key(config),
            description=(
                f"`{config}` rows removed by curation: id, source, source_ref, partition, "
                "content_hash, `reason` (exact_duplicate, near_duplicate, semantic_duplicate, "
                "contaminated, below_threshold), `kept_id` (for duplicates, the row kept in "
                "their place) and `eval_file` (for contaminated rows)."
            ),
            code_version=code_version,
            kinds=KINDS,
            deps=[*feeds, *exclusions],
            group_name=GROUP,
        ),
    ]


def duplicates_metadata(result: CurationResult) -> dict[str, object]:
    """Return the materialization metadata of a removed-duplicates table."""
    return {
        "dagster/row_count": dg.MetadataValue.int(result.duplicates_rows),
        "dagster/column_schema": column_schema(result.duplicates.select(REMOVED_COLUMNS).schema),
        "kept_ids": dg.MetadataValue.int(result.duplicates_kept_ids),
        "removed": funnel(result.removed),
    }


@dg.multi_asset(
    name="curate",
    specs=[
        spec for config in CONFIG_FEEDS for spec in curation_specs(config, rules_version(GROUP))
    ],
)
def curate(settings: DistillSettings, embedder: EmbedderResource) -> Iterator[dg.MaterializeResult]:
    """Scrub, deduplicate, decontaminate and gate every config's rows; split them all as one."""
    cfg = settings.resolved()
    contexts = product_contexts(settings, embedder, list(CONFIG_FEEDS))
    results = curate_lakes(cfg.lake_root, contexts, scan_exclusions(cfg.lake_root))
    for config, result in results.items():
        write_funnel(cfg.lake_root, config, result.funnel)
        yield dg.MaterializeResult(
            asset_key=dg.AssetKey([GROUP, config]),
            metadata=curation_metadata(config, result, feed_partitions(cfg.lake_root, config)),
        )
        yield dg.MaterializeResult(
            asset_key=duplicates_key(config), metadata=duplicates_metadata(result)
        )


curation_assets: list[dg.AssetsDefinition] = [curate]
