"""Curation's per-day work in the day's ingest: one `curation/<config>_products` asset per config.

A day's products of a config (scrub, content hash, MinHash, embedding, contamination, quality
gate: `products.py`) depend on that day's feed partitions alone, so they are computed with the
day's ingest, one step per (day, config), in parallel across configs and days on any executor,
instead of in the serial release. Each asset writes the product file exactly as the release's
`curate` would (`products.refresh_day`, with the `ProductContext` both build from the same
resources: `product_contexts`), so `curate` finds it fresh and reuses it (its metadata
`products_reused`). `curate` still computes any product that is missing or stale (a feed
partition rewritten later, a rules change, a day ingested by `--source`): the release never
depends on these assets having run.
"""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import CONFIG_FEEDS, SUBJECT_COLUMN, feed_schema
from distill_assets.defs.curation.decontaminate import load_eval_ngrams
from distill_assets.defs.curation.products import (
    DayRefresh,
    ProductContext,
    compute_products,
    products_table,
    refresh_day,
)
from distill_assets.defs.jobs import DAILY_TAG
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, EmbedderResource
from distill_assets.lib.lake import parquet_columns, parquet_row_count
from distill_assets.rules import rules_metadata, rules_version

GROUP = "curation"


def product_contexts(
    settings: DistillSettings, embedder: EmbedderResource, configs: list[str]
) -> list[ProductContext]:
    """Return the product context of each config: the configured embedder and eval sets.

    The one way both the daily product assets and `curate` build it, so a product one writes
    has the version the other expects.
    """
    model = embedder.embedder()
    evals = load_eval_ngrams(settings.resolved().eval_sets)
    return [ProductContext(config, model, evals) for config in configs]


def products_key(config: str) -> dg.AssetKey:
    """Return the key of a config's daily products asset."""
    return dg.AssetKey([GROUP, products_table(config)])


def product_columns(refresh: DayRefresh, context: ProductContext) -> list[tuple[str, str]]:
    """Return `(name, Arrow type)` of the columns of a product file of `context`'s config.

    From the day's file's footer, or, for a day without a feed partition (no file), from the
    products of no row.
    """
    if refresh.path is not None:
        return parquet_columns(refresh.path)
    config = context.config
    schema = {**feed_schema(config), SUBJECT_COLUMN: pl.String(), "partition": pl.String()}
    empty = compute_products(pl.LazyFrame(schema=schema), context).to_arrow().schema
    return [(field.name, str(field.type)) for field in empty]


def products_metadata(refresh: DayRefresh, context: ProductContext) -> dict[str, object]:
    """Return the materialization metadata of one day's product: counts and versions only.

    No text, id or pseudonym (docs/privacy.md): a deletion cannot erase Dagster metadata.
    """
    written = refresh.written
    rows = parquet_row_count(refresh.path) if refresh.path is not None else 0
    columns = [dg.TableColumn(name, kind) for name, kind in product_columns(refresh, context)]
    return {
        "dagster/row_count": dg.MetadataValue.int(rows),
        "dagster/column_schema": dg.MetadataValue.table_schema(dg.TableSchema(columns)),
        "feed_tables": dg.MetadataValue.json(refresh.feeds),
        "reused": dg.MetadataValue.bool(refresh.reused),
        "slices": dg.MetadataValue.int(written.slices if written else 0),
        "largest_slice_rows": dg.MetadataValue.int(written.largest_slice_rows if written else 0),
        "largest_slice_feed_bytes": dg.MetadataValue.int(
            written.largest_slice_bytes if written else 0
        ),
        "product_version": dg.MetadataValue.text(context.version),
        **rules_metadata(GROUP),
    }


def products_asset(config: str) -> dg.AssetsDefinition:
    """Return the daily-partitioned asset writing one day's products of `config`."""
    feeds = [dg.AssetKey([source, table]) for source, table in CONFIG_FEEDS[config]]
    names = ", ".join(f"`{source}/{table}`" for source, table in CONFIG_FEEDS[config])

    @dg.asset(
        key=products_key(config),
        deps=feeds,
        partitions_def=daily_partitions(),
        group_name=GROUP,
        kinds={"polars", "duckdb"},
        code_version=rules_version(GROUP),
        tags=DAILY_TAG,
        description=(
            f"Per-row curation products of the day's `{config}` feed rows ({names}): the "
            "scrubbed published columns, the exact content hash, split buckets, MinHash "
            "signature and LSH band keys, embedding and its LSH keys, the eval file a row is "
            "contaminated by and whether it fails the quality gate, in "
            f"`curation/{products_table(config)}/<day>.parquet`. Computed in slices of the "
            "day's rows (memory bounded per slice); the release's `curate` reuses it while "
            "the feed partitions, curation rules, embedder and eval sets are unchanged, and "
            "computes it itself otherwise. No file for a day without a feed partition."
        ),
    )
    def products(
        context: dg.AssetExecutionContext, settings: DistillSettings, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        """Bring the day's product file of the config up to date (`products.refresh_day`)."""
        (product_context,) = product_contexts(settings, embedder, [config])
        refresh = refresh_day(settings.resolved().lake_root, product_context, context.partition_key)
        return dg.MaterializeResult(metadata=products_metadata(refresh, product_context))

    return products


daily_product_assets: list[dg.AssetsDefinition] = [
    products_asset(config) for config in CONFIG_FEEDS
]
