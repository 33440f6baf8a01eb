"""The curation pipeline: feeds → products → global decisions → splits → curated rows.

Pure (no Dagster). Per-row work (scrub, content hash, MinHash signature, embedding, contamination,
quality gate) is `products.py`; decisions over all history of a config from compact keys only are
`decide.py`; the splits are decided once over the published keys of every config curated
together (`splits.py`). `curate` runs one config from a frame of feed rows (from scratch, in
memory); `curate_lakes` keeps one product per feed partition in the lake, recomputes only the days
whose feed partitions changed and splits every config it is given as one. Both give the same
result for the same feed rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl
from upath import UPath

from distill_assets.contracts.published import (
    CONFIG_FEEDS,
    EXCLUSION_SCHEMA,
    EXCLUSION_TABLES,
    SUBJECT_COLUMN,
    feed_schema,
)
from distill_assets.defs.curation.curated_table import (
    CuratedPartition,
    curated_schema,
    refresh_curated,
)
from distill_assets.defs.curation.decide import ArraySource, Decisions, RowVectors, decide
from distill_assets.defs.curation.decontaminate import NO_EVAL_SETS
from distill_assets.defs.curation.links import (
    LinkedDecisions,
    LinkState,
    decide_links,
    forget_state,
    keeps_link_state,
    read_state,
    write_state,
)
from distill_assets.defs.curation.products import (
    FULL_VECTORS,
    KEY_COLUMNS,
    ROW_ARRAYS,
    LakeVectors,
    ProductContext,
    ProductRefresh,
    compute_products,
    feed_name,
    matrix,
    read_products,
    refresh_products,
    scan_feed_file,
)
from distill_assets.defs.curation.splits import assign_splits
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.lake import global_path, partition_files, write_parquet_atomic
from distill_assets.lib.scrub import redaction_column
from distill_assets.rules.curation import (
    NEAR_DUPLICATE_PARTS,
    REDACTIONS,
    REMOVAL_REASONS,
    SEMANTIC_SKIPPED_CONFIGS,
)

# Audit columns kept in the curated lake table beside the published ones; the release drops them.
AUDIT_COLUMNS: tuple[str, ...] = ("split_group", "content_hash", "partition", "split_by")
# what `curate_lakes` keeps in memory of the published rows (their text stays in the files)
SUMMARY_COLUMNS: tuple[str, ...] = (
    "partition",
    "product_row",
    "id",
    "source",
    "quality_score",
    "split",
    "split_by",
)
# what the splits read of a published row (`splits.assign_splits`)
SPLIT_KEY_COLUMNS: tuple[str, ...] = (
    "id",
    "source",
    "source_ref",
    "split_group",
    "group_bucket",
    "prompt_key",
)
REMOVED_COLUMNS: tuple[str, ...] = (
    "id",
    "source",
    "source_ref",
    "partition",
    "content_hash",
    "reason",
    "kept_id",
    "eval_file",
)


def feed_partitions(lake_root: str, config: str) -> dict[str, list[str]]:
    """Return, per feed table of `config`, the partitions present in the lake (sorted)."""
    return {
        feed_name(source, table): [
            path.rsplit("/", 1)[-1].removesuffix(".parquet")
            for path in partition_files(lake_root, source, table)
        ]
        for source, table in CONFIG_FEEDS.get(config, [])
    }


def scan_feeds(lake_root: str, config: str, days: set[str] | None = None) -> pl.LazyFrame:
    """Lazily read every partition (or those in `days`) of every feed table of `config`.

    The frame holds the contract columns, `subject` and `partition`, feed table by feed table
    (`CONFIG_FEEDS` order), each in partition order (`products.scan_feed_file`). A feed table
    with no partition yet contributes no rows.
    """
    schema = feed_schema(config)
    frames = []
    for source, table in CONFIG_FEEDS.get(config, []):
        for path in partition_files(lake_root, source, table):
            day = path.rsplit("/", 1)[-1].removesuffix(".parquet")
            if days is None or day in days:
                frames.append(scan_feed_file(config, source, table, path, day))
    if not frames:
        return pl.LazyFrame(
            schema={**schema, SUBJECT_COLUMN: pl.String(), "partition": pl.String()}
        )
    return pl.concat(frames, how="vertical")


def scan_exclusions(lake_root: str) -> pl.LazyFrame:
    """Lazily read every exclusion table present (`EXCLUSION_TABLES`; absent ones list nothing)."""
    frames = [
        pl.scan_parquet(str(path)).select(
            pl.col(name).cast(dtype) for name, dtype in EXCLUSION_SCHEMA.items()
        )
        for path in (global_path(lake_root, source, table) for source, table in EXCLUSION_TABLES)
        if path.exists()
    ]
    if not frames:
        return pl.LazyFrame(schema=EXCLUSION_SCHEMA)
    return pl.concat(frames, how="vertical")


@dataclass(frozen=True)
class CurationResult:
    """What curating one config produced.

    `curated` holds the curated rows: every column (`curated_schema`) from `curate`, only
    `SUMMARY_COLUMNS` from `curate_lake`, whose rows are in the partition files `partitions`.

    `duplicates` holds the removed rows (`REMOVED_COLUMNS`), `duplicates_rows` and
    `duplicates_kept_ids` their count and distinct `kept_id` values; `curate_lakes` writes each
    config's removed rows to its table as soon as they are decided and keeps only their schema.
    """

    curated: pl.DataFrame
    duplicates: pl.DataFrame
    rows_in: int
    redactions: dict[str, int] = field(default_factory=dict)
    redacted_rows: int = 0
    replacement_chars: dict[str, dict[str, int]] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    split_by: dict[str, int] = field(default_factory=dict)
    products_computed: list[str] = field(default_factory=list)
    products_reused: list[str] = field(default_factory=list)
    partitions: list[CuratedPartition] = field(default_factory=list)
    decided: dict[str, int] = field(default_factory=dict)
    duplicates_rows: int = 0
    duplicates_kept_ids: int = 0

    @property
    def curated_rewritten(self) -> list[str]:
        """Return the partitions whose curated file this run wrote."""
        return [p.partition for p in self.partitions if p.rewritten]

    @property
    def drop_reasons(self) -> dict[str, int]:
        """Return why rows left, by reason code (exclusions, then the funnel's order)."""
        return {**self.excluded, **self.removed}

    @property
    def funnel(self) -> dict[str, int]:
        """Return the rows left after each stage: in → scrubbed → each removal → published."""
        stages = {"rows_in": self.rows_in}
        left = self.rows_in - sum(self.excluded.values())
        stages["scrubbed"] = left
        for reason in REMOVAL_REASONS:
            left -= self.removed.get(reason, 0)
            stages[reason] = left
        stages["published"] = self.curated.height
        return stages


def exclude_subjects(
    feeds: pl.LazyFrame, exclusions: pl.LazyFrame
) -> tuple[pl.LazyFrame, dict[str, int]]:
    """Drop feed rows whose `(source, subject)` or `(source, id)` an exclusion lists.

    Returns the kept rows and the dropped ones per reason. A subject names a removal subject
    (a player's data type, an escalation example) or one row by its `id` (a Witness rejection);
    a row listed under several reasons counts under the smallest reason code.
    """
    listed = (
        exclusions.drop_nulls([SUBJECT_COLUMN])
        .group_by("source", SUBJECT_COLUMN)
        .agg(pl.col("reason").min())
    )
    keys = ["source", SUBJECT_COLUMN]
    by_id = listed.rename({SUBJECT_COLUMN: "id"})
    reasons = (
        feeds.select("source", SUBJECT_COLUMN, "id")
        .join(listed, on=keys, how="left", nulls_equal=False)
        .join(by_id, on=["source", "id"], how="left", suffix="_of_id")
        .select(pl.min_horizontal("reason", "reason_of_id").alias("reason"))
        .drop_nulls()
    )
    counted = reasons.group_by("reason").len().collect()
    kept = feeds.join(listed.select(keys), on=keys, how="anti", nulls_equal=False).join(
        by_id.select("source", "id"), on=["source", "id"], how="anti"
    )
    return kept, {str(reason): int(n) for reason, n in sorted(counted.iter_rows())}


def frame_vectors(products: pl.DataFrame) -> RowVectors:
    """Return the vectors of in-memory products (`ROW_ARRAYS`, `FULL_VECTORS` held in memory)."""
    full = {name: matrix(products.get_column(name), dtype) for name, dtype in FULL_VECTORS.items()}
    return RowVectors(
        *(matrix(products.get_column(name), dtype) for name, dtype in ROW_ARRAYS.items()),
        ArraySource(full),
        np.arange(products.height),
    )


def _compact(products: pl.DataFrame) -> pl.DataFrame:
    """Return the key and redaction columns of products (what global decisions read)."""
    redactions = [redaction_column(r.kind) for r in REDACTIONS]
    return products.select(*KEY_COLUMNS, *redactions)


def _not_excluded(
    keys: pl.DataFrame, vectors: RowVectors, exclusions: pl.LazyFrame | None
) -> tuple[pl.DataFrame, RowVectors, dict[str, int]]:
    """Drop excluded subjects; return the kept keys, their vectors and the exclusion counts.

    The exclusions are joined with the columns they match on only; the kept rows of `keys` and
    `vectors` are then taken once (nothing is copied when no row is excluded).
    """
    if exclusions is None:
        return keys, vectors, {}
    listed = keys.select(
        "source", SUBJECT_COLUMN, "id", pl.int_range(pl.len(), dtype=pl.Int64).alias("key_row")
    )
    kept, excluded = exclude_subjects(listed.lazy(), exclusions)
    rows = kept.select("key_row").collect().get_column("key_row").to_numpy()
    if np.array_equal(rows, np.arange(keys.height)):
        return keys, vectors, excluded
    return keys[rows], vectors.take(rows), excluded


def decide_products(
    keys: pl.DataFrame,
    vectors: RowVectors,
    exclusions: pl.LazyFrame | None,
    config: str,
) -> tuple[Decisions, dict[str, int], pl.DataFrame]:
    """Drop excluded subjects, then decide; return decisions, exclusion counts, kept keys."""
    kept, vectors, excluded = _not_excluded(keys, vectors, exclusions)
    parts = len(NEAR_DUPLICATE_PARTS.get(config, ("text",)))
    semantic = config not in SEMANTIC_SKIPPED_CONFIGS
    return decide(kept, vectors, parts, semantic=semantic), excluded, kept


def decide_linked(
    keys: pl.DataFrame,
    vectors: RowVectors,
    exclusions: pl.LazyFrame | None,
    config: str,
    *,
    previous: LinkState | None,
    changed: set[str],
) -> tuple[LinkedDecisions, dict[str, int], pl.DataFrame]:
    """`decide_products`, deciding again only what changed since the link state `previous`."""
    kept, vectors, excluded = _not_excluded(keys, vectors, exclusions)
    parts = len(NEAR_DUPLICATE_PARTS.get(config, ("text",)))
    semantic = config not in SEMANTIC_SKIPPED_CONFIGS
    linked = decide_links(
        kept, vectors, parts, semantic=semantic, previous=previous, changed=changed
    )
    return linked, excluded, kept


def decide_lake_rows(
    lake_root: str,
    context: ProductContext,
    refresh: ProductRefresh,
    keys: pl.DataFrame,
    vectors: RowVectors,
    *,
    exclusions: pl.LazyFrame | None,
) -> tuple[Decisions, dict[str, int], pl.DataFrame, dict[str, int]]:
    """Decide a config's lake products; return decisions, exclusion counts, kept keys, counts.

    A config keeping the link state (`links.keeps_link_state`) decides again only what changed
    since the stored state and stores the state it leaves; any other decides every row. The
    counts say how many rows were decided of how many, how many stored components were touched,
    and whether every row was decided from scratch.
    """
    config, version = context.config, context.version
    if not keeps_link_state(config):
        forget_state(lake_root, config)
        decisions, excluded, kept = decide_products(keys, vectors, exclusions, config)
        linked = LinkedDecisions(decisions, pl.DataFrame(), kept.height, 0, True)
    else:
        previous = read_state(lake_root, config, version)
        fingerprints = dict(zip(refresh.days, refresh.fingerprints, strict=True))
        changed = {
            day
            for day, fingerprint in fingerprints.items()
            if previous is None or previous.fingerprints.get(day) != fingerprint
        }
        linked, excluded, kept = decide_linked(
            keys, vectors, exclusions, config, previous=previous, changed=changed
        )
        write_state(lake_root, config, version, fingerprints, linked, previous=previous)
    counts = {
        "rows_decided": linked.rows_decided,
        "rows_total": kept.height,
        "components_touched": linked.components_touched,
        "full_recompute": int(linked.full),
    }
    return linked.decisions, excluded, kept, counts


def removed_rows(fates: pl.DataFrame, keys: pl.DataFrame) -> pl.DataFrame:
    """Return the removed rows (`REMOVED_COLUMNS`) from the decisions and the rows' keys."""
    row_keys = ["partition", "product_row"]
    # the removed rows' own columns, joined by their row keys alone (not every key column)
    read = keys.select(*row_keys, "id", "source", "source_ref", "content_hash")
    return (
        fates.filter(pl.col("reason").is_not_null())
        .join(read, on=row_keys, how="inner")
        .select(REMOVED_COLUMNS)
        .sort("reason", "kept_id", "id", "source_ref", "partition", nulls_last=True)
    )


def redaction_totals(keys: pl.DataFrame) -> tuple[dict[str, int], int]:
    """Return matches replaced per redaction kind and how many rows had any, over `keys`."""
    counts = [redaction_column(r.kind) for r in REDACTIONS]
    touched = keys.select(
        *(pl.col(c).sum() for c in counts), (pl.sum_horizontal(counts) > 0).sum().alias("rows")
    )
    totals = touched.row(0) if keys.height else (0,) * (len(counts) + 1)
    return {r.kind: int(totals[i] or 0) for i, r in enumerate(REDACTIONS)}, int(totals[-1] or 0)


def replacement_totals(keys: pl.DataFrame) -> dict[str, dict[str, int]]:
    """Return, per partition holding any, the rows with U+FFFD in their text and the characters.

    Over `keys` (every row after removal by subject); those rows fail the quality gate.
    """
    totals = (
        keys.filter(pl.col("replacement_chars") > 0)
        .group_by("partition")
        .agg(pl.len().alias("rows"), pl.col("replacement_chars").sum().alias("chars"))
        .sort("partition")
    )
    return {
        str(partition): {"rows": int(rows), "chars": int(chars)}
        for partition, rows, chars in totals.iter_rows()
    }


def split_by_counts(curated: pl.DataFrame) -> dict[str, int]:
    """Return published rows per `split_by`."""
    counts = curated.group_by("split_by").len().sort("split_by")
    return {str(k): int(n) for k, n in counts.iter_rows()}


def published_keys(decisions: Decisions, kept: pl.DataFrame) -> pl.DataFrame:
    """Return `partition, product_row` and the split keys of the published rows, in that order."""
    return (
        decisions.fates.filter(pl.col("reason").is_null())
        .select("partition", "product_row")
        .join(kept, on=["partition", "product_row"], how="inner")
        .select("partition", "product_row", "quality_score", *SPLIT_KEY_COLUMNS)
        .sort("partition", "product_row")
    )


def with_splits(published: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Return each config's published keys with `split, split_by`, split as one (`splits.py`)."""
    frames = [
        rows.with_columns(pl.lit(config).alias("config")) for config, rows in published.items()
    ]
    if not frames:
        return {}
    rows = pl.concat(frames, how="vertical")
    rows = pl.concat([rows, assign_splits(rows.select(SPLIT_KEY_COLUMNS))], how="horizontal")
    return {config: rows.filter(pl.col("config") == config).drop("config") for config in published}


def removals(
    kept: pl.DataFrame, decisions: Decisions, *, rows_in: int, excluded: dict[str, int]
) -> CurationResult:
    """Return what curating removed from the key rows `kept` (no curated rows yet)."""
    redactions, redacted_rows = redaction_totals(kept)
    duplicates = removed_rows(decisions.fates, kept).rechunk()
    return CurationResult(
        curated=pl.DataFrame(),
        duplicates=duplicates,
        duplicates_rows=duplicates.height,
        duplicates_kept_ids=duplicates.get_column("kept_id").n_unique(),
        rows_in=rows_in,
        redactions=redactions,
        redacted_rows=redacted_rows,
        replacement_chars=replacement_totals(kept),
        excluded=excluded,
        removed=decisions.removal_counts,
    )


def curate(
    feeds: pl.LazyFrame,
    config: str,
    exclusions: pl.LazyFrame | None = None,
    context: ProductContext | None = None,
) -> CurationResult:
    """Curate the feed rows of `config` from scratch, in memory, split alone (rules/curation.py)."""
    context = context or ProductContext(config, load_embedder(), NO_EVAL_SETS)
    products = compute_products(feeds, context)
    keys = _compact(products)
    decisions, excluded, kept = decide_products(keys, frame_vectors(products), exclusions, config)
    published = with_splits({config: published_keys(decisions, kept)})[config]
    curated = (
        products.join(
            published.select("partition", "product_row", "split", "split_by"),
            on=["partition", "product_row"],
        )
        .select(curated_schema(config).names())
        .cast(dict(curated_schema(config)))
        .sort("split", "id", "source_ref", "content_hash", "partition", maintain_order=True)
        .rechunk()
    )
    result = removals(kept, decisions, rows_in=products.height, excluded=excluded)
    return replace(result, curated=curated, split_by=split_by_counts(curated))


@dataclass(frozen=True)
class LakeDecisions:
    """One config's decisions over its lake products, before the splits (`curate_lakes`).

    `published` holds `partition, product_row`, `quality_score` and the split keys of every
    published row; `result` what was removed.
    """

    config: str
    version: str
    refresh: ProductRefresh
    published: pl.DataFrame
    result: CurationResult


def decide_lake(
    lake_root: str, context: ProductContext, exclusions: pl.LazyFrame | None
) -> LakeDecisions:
    """Refresh a config's products (changed feed partitions only), then decide over all of them.

    The decisions read compact product columns only; only the published rows' keys are kept. The
    removed rows are written to the config's removed-duplicates table (`duplicates_path`) here,
    so the configs decided after this one do not find them still held.
    """
    config = context.config
    refresh = refresh_products(lake_root, config, context)
    redactions = [redaction_column(r.kind) for r in REDACTIONS]
    if refresh.paths:
        keys = read_products(refresh.paths, [*KEY_COLUMNS, *redactions])
        lake = LakeVectors(refresh.paths)
        vectors = RowVectors(*lake.columns(ROW_ARRAYS), lake, np.arange(keys.height))
    else:
        empty = compute_products(scan_feeds(lake_root, config, days=set()), context)
        keys = empty.select(*KEY_COLUMNS, *redactions)
        vectors = frame_vectors(empty)
    rows_in = keys.height
    # the kept rows replace every row before deciding, so history's keys are not held twice
    keys, vectors, excluded = _not_excluded(keys, vectors, exclusions)
    decisions, _, kept, decided = decide_lake_rows(
        lake_root, context, refresh, keys, vectors, exclusions=None
    )
    del keys, vectors
    result = removals(kept, decisions, rows_in=rows_in, excluded=excluded)
    # written now, not held until every config is decided: what is left is its empty schema
    write_parquet_atomic(result.duplicates, duplicates_path(lake_root, config))
    result = replace(result, duplicates=result.duplicates.clear())
    return LakeDecisions(
        config,
        context.version,
        refresh,
        published_keys(decisions, kept),
        replace(
            result,
            products_computed=refresh.computed,
            products_reused=refresh.reused,
            decided=decided,
        ),
    )


def duplicates_path(lake_root: str, config: str) -> UPath:
    """Return the path of a config's removed-duplicates table (`REMOVED_COLUMNS`)."""
    return global_path(lake_root, "curation", f"{config}_duplicates")


def curate_lakes(
    lake_root: str,
    contexts: list[ProductContext],
    exclusions: pl.LazyFrame | None = None,
) -> dict[str, CurationResult]:
    """Curate each context's config from its per-partition products into curated partition files.

    Every config is decided alone (`decide_lake`), then all are split as one (`with_splits`), so
    a source record or a prompt shared by two configs is in one split in both. A curated partition
    file is rewritten only when its key changed (`curated_table.py`), so a night reads the text of
    its new partition and of the partitions whose rows' fate or split it changed.
    """
    decided = [decide_lake(lake_root, context, exclusions) for context in contexts]
    split = with_splits({d.config: d.published for d in decided})
    results = {}
    for d in decided:
        published = split[d.config].select(SUMMARY_COLUMNS)
        partitions = refresh_curated(lake_root, d.config, d.refresh, d.version, published)
        results[d.config] = replace(
            d.result,
            curated=published,
            split_by=split_by_counts(published),
            partitions=partitions,
        )
    return results
