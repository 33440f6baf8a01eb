"""The curated table of a config, one file per feed partition: `curation/<config>/<day>.parquet`.

A partition's file holds the published rows of that day's products (curated columns,
`curated_schema`), sorted by `split, id, source_ref, content_hash`. It carries, in its
Parquet key-value metadata, a key over everything its bytes depend on (`CURATED_FORMAT`, the
product version, the feed fingerprint of the partition and a digest of the global decisions about
its rows: which rows are published and their `split, split_by`) and the placeholder counts of its
text (read by the release instead of the text). A night rewrites a partition's file only when its
key changed: the new day, a rewritten feed partition, or an older partition whose rows a new day
changed the fate of (a new representative outranking one of its rows, an oversized group crossing
the share that splits it by row). Every other partition is neither read nor written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass

import polars as pl
from upath import UPath

from distill_assets.contracts.published import published_schema
from distill_assets.defs.curation.products import ProductRefresh, read_products
from distill_assets.lib.lake import (
    global_path,
    is_remote,
    parquet_file,
    parquet_key_values,
    partition_path,
    table_dir,
    write_parquet_atomic,
)
from distill_assets.lib.scrub import placeholder_counts, scrubbed_columns

GROUP = "curation"
CURATED_FORMAT = "1"
KEY_METADATA = b"distill.curated_key"
PLACEHOLDERS_METADATA = b"distill.placeholders"
CONTENT_METADATA = b"distill.curated_content"
SORT_COLUMNS: tuple[str, ...] = ("split", "id", "source_ref", "content_hash")
# what the global decisions say about a published row (the digest of a partition covers these)
DECISION_COLUMNS: tuple[str, ...] = ("product_row", "split", "split_by")


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


@dataclass(frozen=True)
class CuratedPartition:
    """One partition file of a curated table, as the release reads it."""

    partition: str
    path: UPath
    key: str
    rows: int
    placeholders: dict[str, int]
    rewritten: bool
    content: str | None


def curated_dir(lake_root: str, config: str) -> UPath:
    """Return the folder of a config's curated partition files."""
    return table_dir(lake_root, GROUP, config)


def curated_files(lake_root: str, config: str) -> list[UPath]:
    """Return a config's curated partition files in partition order."""
    folder = curated_dir(lake_root, config)
    if not folder.exists():
        return []
    return sorted(
        (p for p in folder.iterdir() if p.name.endswith(".parquet") and not p.name.startswith(".")),
        key=lambda p: p.name,
    )


def read_curated(lake_root: str, config: str, columns: list[str] | None = None) -> pl.DataFrame:
    """Read a config's curated rows (only `columns` when given), partition after partition."""
    schema = curated_schema(config)
    frame = read_products(curated_files(lake_root, config), columns)
    if frame.is_empty() and not frame.columns:
        names = columns or schema.names()
        return pl.DataFrame(schema={name: schema[name] for name in names})
    return frame


def stored_partitions(lake_root: str, config: str) -> list[CuratedPartition]:
    """Return a config's curated partition files as last written, from their footers only."""
    partitions = []
    for path in curated_files(lake_root, config):
        with parquet_file(path) as footer:
            stored = footer.schema_arrow.metadata or {}
            rows = footer.metadata.num_rows
        partitions.append(
            CuratedPartition(
                partition=path.name.removesuffix(".parquet"),
                path=path,
                key=stored[KEY_METADATA].decode(),
                rows=rows,
                placeholders=json.loads(stored[PLACEHOLDERS_METADATA]),
                rewritten=False,
                content=stored[CONTENT_METADATA].decode() if CONTENT_METADATA in stored else None,
            )
        )
    return partitions


def decision_digests(published: pl.DataFrame) -> dict[str, str]:
    """Return, per partition, a SHA-256 over its published rows' `DECISION_COLUMNS`, row order."""
    lines = (
        published.sort("partition", "product_row")
        .group_by("partition", maintain_order=True)
        .agg(pl.format("{}\t{}\t{}", *DECISION_COLUMNS).str.join("\n").alias("lines"))
    )
    return {
        str(partition): hashlib.sha256(text.encode()).hexdigest()
        for partition, text in lines.iter_rows()
    }


def content_digest(rows: pl.DataFrame) -> str:
    """Return a digest of a curated partition's rows: its columns, types and values, in order.

    Two 64-bit row hashes per row (Polars' `hash_rows`, two seeds) and the schema: the same rows
    give the same digest whatever lake inputs they were curated from, so a release shard is
    reused, and its manifest entry is the same, exactly when its rows are.
    """
    digest = hashlib.sha256(repr(rows.schema).encode())
    for seed in (0, 1):
        digest.update(rows.hash_rows(seed=seed).to_numpy().tobytes())
    return digest.hexdigest()


def partition_key(version: str, fingerprint: str, digest: str) -> str:
    """Return the key of a curated partition file (see the module docstring)."""
    parts = [CURATED_FORMAT, version, fingerprint, digest]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def published_rows(products: UPath, decisions: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    """Return `columns` of the rows of the product file `products` that `decisions` publish.

    `decisions` holds the published rows' `product_row` (and what to add to them). The file is
    read one row group at a time, only `columns` (never the vectors), and each row group is cut
    to its published rows as it is read, so a partition's removed rows are never all held, nor
    a second copy of its text; the rows keep the file's order.
    """
    frames = []
    with parquet_file(products) as reader:
        for group in range(reader.metadata.num_row_groups):
            table = reader.read_row_group(
                group, columns=columns, use_threads=not is_remote(products)
            )
            frame = pl.from_arrow(table.replace_schema_metadata(None))
            assert isinstance(frame, pl.DataFrame)
            frames.append(
                frame.join(decisions, on="product_row", how="inner", maintain_order="left")
            )
    if not frames:
        empty = read_products([products], columns)
        return empty.join(decisions, on="product_row", how="inner")
    return pl.concat(frames, how="vertical")


def write_partition(
    config: str, products: UPath, decisions: pl.DataFrame, path: UPath, key: str
) -> tuple[dict[str, int], str]:
    """Write one curated partition from its product file and its published rows' decisions.

    `decisions` holds `DECISION_COLUMNS` of the partition's published rows. Return the placeholder
    counts of the written text and the digest of its rows (both also stored in the file's
    metadata).
    """
    schema = curated_schema(config)
    text = [name for name in schema.names() if name not in ("split", "split_by")]
    rows = (
        published_rows(products, decisions, [*text, "product_row"])
        .select(schema.names())
        .cast(dict(schema))
        .sort(list(SORT_COLUMNS), maintain_order=True)
    )
    placeholders = placeholder_counts(rows, scrubbed_columns(published_schema(config)))
    content = content_digest(rows)
    arrow = rows.to_arrow().replace_schema_metadata(
        {
            KEY_METADATA: key.encode(),
            PLACEHOLDERS_METADATA: json.dumps(placeholders, sort_keys=True).encode(),
            CONTENT_METADATA: content.encode(),
        }
    )
    write_parquet_atomic(arrow, path)
    return placeholders, content


def refresh_curated(
    lake_root: str,
    config: str,
    products: ProductRefresh,
    version: str,
    published: pl.DataFrame,
) -> list[CuratedPartition]:
    """Bring a config's curated partition files up to date with the global decisions.

    `published` holds `partition` and `DECISION_COLUMNS` of every published row; `version` is the
    product version. A partition whose stored key matches is left alone (only its footer is read);
    any other is rewritten from its product file. Files of partitions without products, and the
    single-file table of earlier layouts, are deleted.
    """
    digests = decision_digests(published)
    by_partition = published.partition_by("partition", as_dict=True, include_key=False)
    empty = published.select(DECISION_COLUMNS).clear()
    partitions = []
    for day, product, fingerprint in zip(
        products.days, products.paths, products.fingerprints, strict=True
    ):
        path = partition_path(lake_root, GROUP, config, day)
        key = partition_key(version, fingerprint, digests.get(day, ""))
        decisions = by_partition.get((day,), empty).select(DECISION_COLUMNS)
        stored = parquet_key_values(path)
        # a file of an earlier layout without the content digest is rewritten once
        rewritten = stored.get(KEY_METADATA) != key.encode() or CONTENT_METADATA not in stored
        placeholders, content = (
            write_partition(config, product, decisions, path, key)
            if rewritten
            else (json.loads(stored[PLACEHOLDERS_METADATA]), stored[CONTENT_METADATA].decode())
        )
        partitions.append(
            CuratedPartition(day, path, key, decisions.height, placeholders, rewritten, content)
        )
    for stale in _stale_files(lake_root, config, set(products.days)):
        stale.unlink()
    return partitions


def _stale_files(lake_root: str, config: str, days: set[str]) -> Iterator[UPath]:
    for path in curated_files(lake_root, config):
        if path.name.removesuffix(".parquet") not in days:
            yield path
    legacy = global_path(lake_root, GROUP, config)
    if legacy.exists():
        yield legacy
