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

With `DISTILL_INGEST_SHARDS=N` above 1 a config's day is split across workers too
(`product_shards`): one round of N steps per checked redaction rule collects its candidates in
N pieces of the day (`curation/<config>_products_found_<rule>_<piece>`), a step stages their
union (`curation/<config>_products_found`), N shard steps (`curation/<config>_products_shard_<k>`)
each compute a contiguous range of the day's slices, and `curation/<config>_products` merges
them into the same bytes (or computes the day itself when they are missing or stale).
"""

from collections.abc import Callable

import dagster as dg
import polars as pl

from distill_assets.contracts.published import CONFIG_FEEDS, SUBJECT_COLUMN, feed_schema
from distill_assets.defs.curation.decontaminate import load_eval_ngrams
from distill_assets.defs.curation.product_shards import (
    merge_or_compute,
    stage_found,
    stage_found_piece,
    write_product_shard,
)
from distill_assets.defs.curation.products import (
    DayRefresh,
    ProductContext,
    checked_rules,
    compute_products,
    products_table,
    refresh_day,
)
from distill_assets.defs.jobs import DAILY_TAG
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, EmbedderResource
from distill_assets.defs.shards import shard_count
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


def _feeds(config: str) -> list[dg.AssetKey]:
    return [dg.AssetKey([source, table]) for source, table in CONFIG_FEEDS[config]]


def _daily_step(
    key: dg.AssetKey, deps: list[dg.AssetKey], kinds: set[str], description: str
) -> Callable[[Callable[..., dg.MaterializeResult]], dg.AssetsDefinition]:
    """Return the decorator of one of curation's daily steps (products, found, shards).

    The day's partitions, curation's group and daily tag, the curation rules' version as code
    version; the step's own key, deps, kinds and description.
    """
    return dg.asset(
        key=key,
        deps=deps,
        partitions_def=daily_partitions(),
        group_name=GROUP,
        kinds=kinds,
        code_version=rules_version(GROUP),
        tags=DAILY_TAG,
        description=description,
    )


def found_key(config: str) -> dg.AssetKey:
    """Return the key of the step staging a day's checked candidates of `config` (sharded)."""
    return dg.AssetKey([GROUP, f"{products_table(config)}_found"])


def found_piece_key(config: str, rule: int, piece: int) -> dg.AssetKey:
    """Return the key of piece `piece` of the `rule`-th checked rule's candidates (from 0)."""
    return dg.AssetKey([GROUP, f"{products_table(config)}_found_{rule}_{piece}"])


def product_shard_key(config: str, shard: int) -> dg.AssetKey:
    """Return the key of a config's product shard step `shard` (from 0)."""
    return dg.AssetKey([GROUP, f"{products_table(config)}_shard_{shard}"])


def products_asset(config: str, shards: int = 1) -> dg.AssetsDefinition:
    """Return the daily-partitioned asset writing one day's products of `config`.

    With `shards` above 1 it depends on the config's shard steps and merges them
    (`product_shards.merge_or_compute`); its metadata then also gives `shards` merged.
    """
    names = ", ".join(f"`{source}/{table}`" for source, table in CONFIG_FEEDS[config])
    shard_deps = [product_shard_key(config, k) for k in range(shards)] if shards > 1 else []
    merge = (
        f" Merges the day's {shards} shard steps (the same bytes), or computes the day itself "
        "when they are missing or stale."
        if shards > 1
        else ""
    )

    @_daily_step(
        key=products_key(config),
        deps=[*_feeds(config), *shard_deps],
        kinds={"polars", "duckdb"},
        description=(
            f"Per-row curation products of the day's `{config}` feed rows ({names}): the "
            "scrubbed published columns, the exact content hash, split buckets, MinHash "
            "signature and LSH band keys, embedding and its LSH keys, the eval file a row is "
            "contaminated by and whether it fails the quality gate, in "
            f"`curation/{products_table(config)}/<day>.parquet`. Computed in slices of the "
            "day's rows (memory bounded per slice); the release's `curate` reuses it while "
            "the feed partitions, curation rules, embedder and eval sets are unchanged, and "
            "computes it itself otherwise. No file for a day without a feed partition." + merge
        ),
    )
    def products(
        context: dg.AssetExecutionContext, settings: DistillSettings, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        """Bring the day's product file of the config up to date (`products.refresh_day`)."""
        (product_context,) = product_contexts(settings, embedder, [config])
        lake_root = settings.resolved().lake_root
        if shards == 1:
            refresh = refresh_day(lake_root, product_context, context.partition_key)
            return dg.MaterializeResult(metadata=products_metadata(refresh, product_context))
        day = merge_or_compute(lake_root, product_context, context.partition_key, shards)
        if day.not_merged is not None:
            context.log.info(f"{day.not_merged}: computed the day's products here")
        metadata = products_metadata(day.refresh, product_context)
        return dg.MaterializeResult(metadata={**metadata, "shards": day.merged})

    return products


def _round_deps(config: str, rule: int, pieces: int) -> list[dg.AssetKey]:
    """Return the previous round's piece steps (none before the first checked rule's)."""
    return [found_piece_key(config, rule - 1, k) for k in range(pieces)] if rule else []


def found_piece_asset(config: str, rule: int, piece: int, pieces: int) -> dg.AssetsDefinition:
    """Return the step collecting piece `piece` of `pieces` of a checked rule's candidates."""

    @_daily_step(
        key=found_piece_key(config, rule, piece),
        deps=[*_feeds(config), *_round_deps(config, rule, pieces)],
        kinds={"polars"},
        description=(
            f"Piece {piece + 1} of {pieces} of the day's `{config}` feed rows: the valid "
            f"candidates of checked redaction rule {rule + 1} in it, on the text as the rules "
            "before it leave it (with the day's candidates of the checked ones: the previous "
            "round's pieces), staged for the found step "
            f"(`curation/{products_table(config)}_found`). Removed by the merge."
        ),
    )
    def found_piece(
        context: dg.AssetExecutionContext, settings: DistillSettings, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        """Stage the piece's candidates (`product_shards.stage_found_piece`): a count."""
        (product_context,) = product_contexts(settings, embedder, [config])
        count = stage_found_piece(
            settings.resolved().lake_root,
            product_context,
            context.partition_key,
            rule=rule,
            piece=piece,
            pieces=pieces,
        )
        return dg.MaterializeResult(
            metadata={
                "piece": dg.MetadataValue.text(f"{piece + 1} of {pieces}"),
                "staged": dg.MetadataValue.bool(count is not None),
                "candidates": dg.MetadataValue.int(count or 0),
            }
        )

    return found_piece


def found_asset(config: str, pieces: int) -> dg.AssetsDefinition:
    """Return the step staging a day's checked candidates of `config` for its product shards.

    The union of the last round of `pieces` piece steps (`found_piece_asset`), the rounds of
    the checked rules before it read by those.
    """

    @_daily_step(
        key=found_key(config),
        deps=[*_feeds(config), *_round_deps(config, len(checked_rules()), pieces)],
        kinds={"polars"},
        description=(
            f"The checked numbers (cards, IBANs) found valid anywhere in the day's `{config}` "
            "feed rows (the union of each checked rule's staged pieces, or collected here when "
            "they are missing or stale), staged once for the day's product shards: each shard "
            "replaces them in its rows, as the whole day's scrub does. Removed by the merge "
            f"(`curation/{products_table(config)}`); nothing staged for a fresh day."
        ),
    )
    def found(
        context: dg.AssetExecutionContext, settings: DistillSettings, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        """Stage the day's candidates (`product_shards.stage_found`): counts in metadata."""
        (product_context,) = product_contexts(settings, embedder, [config])
        lake_root = settings.resolved().lake_root
        staged = stage_found(lake_root, product_context, context.partition_key, pieces)
        rules = len(checked_rules())
        if staged is not None and staged.from_pieces < rules:
            context.log.info(
                f"{rules - staged.from_pieces} of {rules} checked rules' pieces not current: "
                "collected here"
            )
        return dg.MaterializeResult(
            metadata={
                "staged": dg.MetadataValue.bool(staged is not None),
                "candidates": dg.MetadataValue.json(staged.counts if staged else {}),
                "rules_from_pieces": dg.MetadataValue.int(staged.from_pieces if staged else 0),
            }
        )

    return found


def product_shard_asset(config: str, shard: int, shards: int) -> dg.AssetsDefinition:
    """Return the step computing shard `shard` of `shards` of a day's products of `config`."""

    @_daily_step(
        key=product_shard_key(config, shard),
        deps=[*_feeds(config), found_key(config)],
        kinds={"polars", "duckdb"},
        description=(
            f"Shard {shard + 1} of {shards} of the day's `{config}` products: a contiguous "
            "range of the day's slices (about 1/N of the feed bytes), staged for the merge "
            f"(`curation/{products_table(config)}`), which removes it."
        ),
    )
    def product_shard(
        context: dg.AssetExecutionContext, settings: DistillSettings, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        """Compute and stage the shard's slices (`product_shards.write_product_shard`)."""
        (product_context,) = product_contexts(settings, embedder, [config])
        written = write_product_shard(
            settings.resolved().lake_root,
            product_context,
            context.partition_key,
            shard=shard,
            shards=shards,
        )
        if not written.reused and written.slices and not written.found_staged:
            context.log.info("no current staged candidates: collected the day's here")
        return dg.MaterializeResult(
            metadata={
                "shard": dg.MetadataValue.text(f"{shard + 1} of {shards}"),
                "rows": dg.MetadataValue.int(written.rows),
                "slices": dg.MetadataValue.int(written.slices),
                "reused": dg.MetadataValue.bool(written.reused),
            }
        )

    return product_shard


def product_assets(config: str, shards: int) -> list[dg.AssetsDefinition]:
    """Return a config's daily product steps: its products asset (and, sharded, the rest).

    With `shards` above 1: the pieces of each checked rule's candidates (`shards` per rule, a
    round waiting for the previous one), the step staging the day's candidates and the shard
    steps the products asset merges.
    """
    if shards == 1:
        return [products_asset(config)]
    return [
        *(
            found_piece_asset(config, rule, piece, shards)
            for rule in range(len(checked_rules()))
            for piece in range(shards)
        ),
        found_asset(config, shards),
        *(product_shard_asset(config, k, shards) for k in range(shards)),
        products_asset(config, shards),
    ]


daily_product_assets: list[dg.AssetsDefinition] = [
    asset for config in CONFIG_FEEDS for asset in product_assets(config, shard_count())
]
