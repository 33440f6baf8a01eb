"""The curation pipeline of one config: feeds → products → global decisions → curated rows.

Pure (no Dagster). Per-row work (scrub, content hash, MinHash signature, embedding, contamination,
quality gate) is `products.py`; decisions over all history from compact keys only are
`decide.py`. `curate` runs everything from a frame of feed rows (from scratch, in memory);
`curate_lake` keeps one product per feed partition in the lake and recomputes only the days whose
feed partitions changed. Both give the same result for the same feed rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl

from distill_assets.contracts.published import (
    CONFIG_FEEDS,
    EXCLUSION_SCHEMA,
    EXCLUSION_TABLES,
    SUBJECT_COLUMN,
    feed_schema,
    published_schema,
)
from distill_assets.defs.curation.decide import Decisions, decide
from distill_assets.defs.curation.decontaminate import NO_EVAL_SETS
from distill_assets.defs.curation.products import (
    KEY_COLUMNS,
    ProductContext,
    compute_products,
    matrix,
    read_products,
    refresh_products,
)
from distill_assets.defs.curation.scrub import redaction_column
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.lake import global_path, partition_files, scan_partition
from distill_assets.rules.curation import EXACT_DEDUP_ONLY, REDACTIONS, REMOVAL_REASONS

# Audit columns kept in the curated lake table beside the published ones; the release drops them.
AUDIT_COLUMNS: tuple[str, ...] = ("split_group", "content_hash", "partition", "split_by")
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


def curated_schema(config: str) -> pl.Schema:
    """Return the columns of a curated table: published columns, `split`, then audit columns."""
    return pl.Schema(
        {
            **published_schema(config),
            "split": pl.String(),
            "split_group": pl.String(),
            "content_hash": pl.String(),
            "partition": pl.String(),
            "split_by": pl.String(),
        }
    )


def feed_name(source: str, table: str) -> str:
    """Return the `source/table` name of a feed table (its asset key path)."""
    return f"{source}/{table}"


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
    (`CONFIG_FEEDS` order), each in partition order. A feed table with no partition yet
    contributes no rows. A partition missing a contract column is a bug in the room that writes
    it: reported by table and file, not read as nulls.
    """
    schema = feed_schema(config)
    frames = []
    for source, table in CONFIG_FEEDS.get(config, []):
        for path in partition_files(lake_root, source, table):
            day = path.rsplit("/", 1)[-1].removesuffix(".parquet")
            if days is not None and day not in days:
                continue
            present = pl.read_parquet_schema(path)
            missing = [name for name in schema if name not in present]
            if missing:
                raise ValueError(
                    f"feed table {feed_name(source, table)} of config {config!r} lacks "
                    f"{missing} in {path}"
                )
            subject = (
                pl.col(SUBJECT_COLUMN).cast(pl.String)
                if SUBJECT_COLUMN in present
                else pl.lit(None, dtype=pl.String).alias(SUBJECT_COLUMN)
            )
            frames.append(
                scan_partition(lake_root, source, table, day).select(
                    *(pl.col(name).cast(dtype) for name, dtype in schema.items()),
                    subject,
                    pl.lit(day, dtype=pl.String).alias("partition"),
                )
            )
    if not frames:
        return pl.LazyFrame(
            schema={**schema, SUBJECT_COLUMN: pl.String(), "partition": pl.String()}
        )
    return pl.concat(frames, how="vertical")


def scan_feed_day(lake_root: str, config: str, day: str) -> pl.LazyFrame:
    """Lazily read one day of every feed table of `config` (as `scan_feeds` reads all days)."""
    return scan_feeds(lake_root, config, days={day})


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
    """What curating one config produced."""

    curated: pl.DataFrame
    duplicates: pl.DataFrame
    rows_in: int
    redactions: dict[str, int] = field(default_factory=dict)
    redacted_rows: int = 0
    excluded: dict[str, int] = field(default_factory=dict)
    removed: dict[str, int] = field(default_factory=dict)
    split_by: dict[str, int] = field(default_factory=dict)
    products_computed: list[str] = field(default_factory=list)
    products_reused: list[str] = field(default_factory=list)

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
    """Drop feed rows whose `(source, subject)` an exclusion lists; count them per reason.

    A subject listed under several reasons counts under the smallest reason code.
    """
    listed = (
        exclusions.drop_nulls([SUBJECT_COLUMN])
        .group_by("source", SUBJECT_COLUMN)
        .agg(pl.col("reason").min())
    )
    keys = ["source", SUBJECT_COLUMN]
    counted = (
        feeds.select(keys).join(listed, on=keys, how="inner").group_by("reason").len().collect()
    )
    kept = feeds.join(listed.select(keys), on=keys, how="anti", nulls_equal=False)
    return kept, {str(reason): int(n) for reason, n in sorted(counted.iter_rows())}


def _compact(products: pl.DataFrame) -> pl.DataFrame:
    """Return the key and redaction columns of products (what global decisions read)."""
    redactions = [redaction_column(r.kind) for r in REDACTIONS]
    return products.select(*KEY_COLUMNS, *redactions)


def decide_products(
    keys: pl.DataFrame,
    signatures: np.ndarray,
    embeddings: np.ndarray,
    exclusions: pl.LazyFrame | None,
    config: str,
) -> tuple[Decisions, dict[str, int], pl.DataFrame]:
    """Drop excluded subjects, then decide; return decisions, exclusion counts, kept keys."""
    indexed = keys.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("key_row"))
    excluded: dict[str, int] = {}
    if exclusions is not None:
        kept, excluded = exclude_subjects(indexed.lazy(), exclusions)
        indexed = kept.collect()
    rows = indexed.get_column("key_row").to_numpy()
    decisions = decide(
        indexed.drop("key_row"),
        signatures[rows],
        embeddings[rows],
        fuzzy=config not in EXACT_DEDUP_ONLY,
    )
    return decisions, excluded, indexed.drop("key_row")


def assemble(
    config: str,
    *,
    products: pl.LazyFrame,
    keys: pl.DataFrame,
    decisions: Decisions,
    rows_in: int,
    excluded: dict[str, int],
) -> CurationResult:
    """Join decisions back onto the product rows: curated rows, removed rows and counts."""
    on = ["partition", "product_row"]
    fates = decisions.fates
    joined = products.join(fates.lazy(), on=on, how="inner")
    curated = (
        joined.filter(pl.col("reason").is_null())
        .select(curated_schema(config).names())
        .cast(dict(curated_schema(config)))
        .collect()
        .sort("split", "id", "source_ref", "content_hash", "partition", maintain_order=True)
    )
    removed = (
        joined.filter(pl.col("reason").is_not_null())
        .select(REMOVED_COLUMNS)
        .collect()
        .sort("reason", "kept_id", "id", "source_ref", "partition", nulls_last=True)
    )
    counts = [redaction_column(r.kind) for r in REDACTIONS]
    touched = keys.select(
        *(pl.col(c).sum() for c in counts), (pl.sum_horizontal(counts) > 0).sum().alias("rows")
    )
    totals = touched.row(0) if keys.height else (0,) * (len(counts) + 1)
    split_by = curated.group_by("split_by").len().sort("split_by")
    return CurationResult(
        curated=curated.rechunk(),
        duplicates=removed.rechunk(),
        rows_in=rows_in,
        redactions={r.kind: int(totals[i] or 0) for i, r in enumerate(REDACTIONS)},
        redacted_rows=int(totals[-1] or 0),
        excluded=excluded,
        removed=decisions.removal_counts,
        split_by={str(k): int(n) for k, n in split_by.iter_rows()},
    )


def curate(
    feeds: pl.LazyFrame,
    config: str,
    exclusions: pl.LazyFrame | None = None,
    context: ProductContext | None = None,
) -> CurationResult:
    """Curate the feed rows of `config` from scratch, in memory (`rules/curation.py`)."""
    context = context or ProductContext(config, load_embedder(), NO_EVAL_SETS)
    products = compute_products(feeds, context)
    keys = _compact(products)
    decisions, excluded, kept = decide_products(
        keys,
        matrix(products.get_column("signature"), np.uint32),
        matrix(products.get_column("embedding"), np.float32),
        exclusions,
        config,
    )
    return assemble(
        config,
        products=products.lazy(),
        keys=kept,
        decisions=decisions,
        rows_in=products.height,
        excluded=excluded,
    )


def curate_lake(
    lake_root: str,
    config: str,
    context: ProductContext,
    exclusions: pl.LazyFrame | None = None,
) -> CurationResult:
    """Curate `config` from its per-partition products, refreshing only changed partitions."""
    refresh = refresh_products(
        lake_root, config, context, lambda day: scan_feed_day(lake_root, config, day)
    )
    redactions = [redaction_column(r.kind) for r in REDACTIONS]
    compact = read_products(refresh.paths, [*KEY_COLUMNS, *redactions, "signature", "embedding"])
    if compact.is_empty():
        return curate(scan_feeds(lake_root, config, days=set()), config, exclusions, context)
    decisions, excluded, kept = decide_products(
        compact.select(*KEY_COLUMNS, *redactions),
        matrix(compact.get_column("signature"), np.uint32),
        matrix(compact.get_column("embedding"), np.float32),
        exclusions,
        config,
    )
    text_columns = [
        *published_schema(config).names(),
        "split_group",
        "content_hash",
        "partition",
        "product_row",
    ]
    products = read_products(refresh.paths, text_columns).lazy()
    result = assemble(
        config,
        products=products,
        keys=kept,
        decisions=decisions,
        rows_in=compact.height,
        excluded=excluded,
    )
    return replace(result, products_computed=refresh.computed, products_reused=refresh.reused)
