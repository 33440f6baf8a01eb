"""The curation pipeline of one config: feeds → scrub → exact dedup → split.

Pure (no Dagster): `scan_feeds` reads every partition of a config's feed tables from the lake
lazily (only the contract's columns), `curate` returns the curated rows, the removed duplicates
and the counts the asset reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from distill_assets.contracts.published import (
    COMMON_SCHEMA,
    CONFIG_FEEDS,
    EXCLUSION_SCHEMA,
    EXCLUSION_TABLES,
    SUBJECT_COLUMN,
    feed_schema,
    published_schema,
)
from distill_assets.defs.curation.dedup import content_key, duplicate_clusters, split_assignments
from distill_assets.defs.curation.scrub import redaction_column, scrub, scrubbed_columns
from distill_assets.lib.lake import global_path, partition_files, scan_partitions
from distill_assets.rules.curation import REDACTIONS

DUPLICATE_REASON = "exact_duplicate"
# Audit columns kept in the curated lake table beside the published ones; the release drops them.
AUDIT_COLUMNS: tuple[str, ...] = ("split_group", "content_hash", "partition")
DUPLICATE_COLUMNS: tuple[str, ...] = (
    "id",
    "source",
    "source_ref",
    "partition",
    "content_hash",
    "kept_id",
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


def scan_feeds(lake_root: str, config: str) -> pl.LazyFrame:
    """Lazily read every partition of every feed table of `config` (contract columns + partition).

    A feed table with no partition yet contributes no rows. A partition missing a contract
    column is a bug in the room that writes it: reported by table and file, not read as nulls.
    """
    schema = feed_schema(config)
    frames = []
    for source, table in CONFIG_FEEDS.get(config, []):
        for path in partition_files(lake_root, source, table):
            present = pl.read_parquet_schema(path)
            missing = [name for name in schema if name not in present]
            if missing:
                raise ValueError(
                    f"feed table {feed_name(source, table)} of config {config!r} lacks "
                    f"{missing} in {path}"
                )
        scan = scan_partitions(lake_root, source, table, schema=schema)
        subject = (
            pl.col(SUBJECT_COLUMN).cast(pl.String)
            if SUBJECT_COLUMN in scan.collect_schema()
            else pl.lit(None, dtype=pl.String).alias(SUBJECT_COLUMN)
        )
        frames.append(
            scan.select(
                *(pl.col(name).cast(dtype) for name, dtype in schema.items()),
                subject,
                pl.col("partition").cast(pl.String),
            )
        )
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
    """What curating one config produced."""

    curated: pl.DataFrame
    duplicates: pl.DataFrame
    rows_in: int
    redactions: dict[str, int] = field(default_factory=dict)
    redacted_rows: int = 0
    excluded: dict[str, int] = field(default_factory=dict)

    @property
    def drop_reasons(self) -> dict[str, int]:
        """Return why rows left, by reason code."""
        return {**self.excluded, DUPLICATE_REASON: self.duplicates.height}


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


def curate(
    feeds: pl.LazyFrame, config: str, exclusions: pl.LazyFrame | None = None
) -> CurationResult:
    """Exclude, scrub, deduplicate and split the feed rows of `config` (`rules/curation.py`)."""
    published = published_schema(config)
    core = {name: dtype for name, dtype in published.items() if name not in COMMON_SCHEMA}
    counts = [redaction_column(r.kind) for r in REDACTIONS]
    excluded: dict[str, int] = {}
    if exclusions is not None:
        feeds, excluded = exclude_subjects(feeds, exclusions)
    scrubbed = (
        scrub(feeds, scrubbed_columns(published))
        .with_row_index("row_nr")
        .with_columns(content_key(core).alias("content_key"))
        .collect(engine="streaming")
    )
    redactions = {
        r.kind: int(scrubbed.get_column(redaction_column(r.kind)).sum()) for r in REDACTIONS
    }
    redacted_rows = scrubbed.select(pl.sum_horizontal(counts) > 0).to_series().sum()

    clusters = duplicate_clusters(
        scrubbed.select("row_nr", "id", "source_ref", "quality_score", "event_time", "content_key")
    )
    ranked = scrubbed.drop("content_key", *counts).join(clusters, on="row_nr", how="left")
    kept = ranked.filter(pl.col("cluster_rank") == 1)
    splits = split_assignments(kept.select("row_nr", "id", "split_group"))
    curated = (
        kept.join(splits, on="row_nr", how="left")
        .select(curated_schema(config).names())
        .cast(dict(curated_schema(config)))
        .sort("split", "id", "source_ref", "content_hash", maintain_order=True)
    )
    duplicates = (
        ranked.filter(pl.col("cluster_rank") > 1)
        .select(DUPLICATE_COLUMNS)
        .sort("kept_id", "id", "source_ref", maintain_order=True)
    )
    return CurationResult(
        curated=curated.rechunk(),
        duplicates=duplicates.rechunk(),
        rows_in=scrubbed.height + sum(excluded.values()),
        redactions=redactions,
        redacted_rows=int(redacted_rows),
        excluded=excluded,
    )
