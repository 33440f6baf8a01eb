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
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
from upath import UPath

from distill_assets.contracts.published import published_schema
from distill_assets.defs.curation.products import ProductRefresh, read_products
from distill_assets.lib.lake import (
    ROW_GROUP_SIZE,
    global_path,
    parquet_file,
    parquet_key_values,
    parquet_writer_atomic,
    partition_path,
    table_dir,
)
from distill_assets.lib.scrub import placeholder_counts, placeholders, scrubbed_columns
from distill_assets.lib.sql import connect

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
    return pieces_digest(rows.schema, [rows])


def pieces_digest(schema: pl.Schema, pieces: Iterable[pl.DataFrame]) -> str:
    """Return `content_digest` of the rows of `pieces` one after another, a piece at a time.

    A row's hashes depend on that row alone, so only the hashes (16 bytes a row) are held.
    """
    hashes: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for piece in pieces:
        for seed, kept in enumerate(hashes):
            kept.append(piece.hash_rows(seed=seed).to_numpy())
    digest = hashlib.sha256(repr(schema).encode())
    for kept in hashes:
        for values in kept:
            digest.update(values.tobytes())
    return digest.hexdigest()


def partition_key(version: str, fingerprint: str, digest: str) -> str:
    """Return the key of a curated partition file (see the module docstring)."""
    parts = [CURATED_FORMAT, version, fingerprint, digest]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _sorted_rows(
    lake_root: str, products: UPath, decisions: pl.DataFrame, columns: list[str]
) -> Iterator[pa.RecordBatch]:
    """Yield `columns` of the published rows of `products`, with `decisions`, in curated order.

    The rows `decisions` (`DECISION_COLUMNS`) publish, sorted by `SORT_COLUMNS` (nulls first, as
    Polars sorts) and then by `product_row`, the product file's order (Polars' stable sort). DuckDB
    joins the keys-only `decisions` and sorts, spilling past its memory limit, so the partition's
    text is never all in memory.
    """
    text = ", ".join(f'p."{name}"' for name in columns)
    order = ", ".join(f'"{name}" ASC NULLS FIRST' for name in SORT_COLUMNS)
    con = connect(lake_root)
    try:
        con.register("decisions", decisions.to_arrow())
        query = (
            f"SELECT {text}, d.split, d.split_by FROM read_parquet(?) AS p "
            "JOIN decisions AS d ON p.product_row = d.product_row "
            f"ORDER BY {order}, p.product_row"
        )
        reader = con.sql(query, params=[str(products)]).to_arrow_reader(ROW_GROUP_SIZE)
        yield from reader
    finally:
        con.close()


def _pieces(batches: Iterator[pa.RecordBatch], schema: pl.Schema) -> Iterator[pl.DataFrame]:
    """Yield the rows of `batches` as frames of `schema` of `ROW_GROUP_SIZE` rows (the last fewer).

    Each is one chunk, so its row group, and the pages within it, are those of one whole frame.
    """
    held: list[pl.DataFrame] = []
    count = 0
    for batch in batches:
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        held.append(frame.select(schema.names()).cast(dict(schema)))
        count += batch.num_rows
        while count >= ROW_GROUP_SIZE:
            rows = pl.concat(held, how="vertical")
            yield rows.head(ROW_GROUP_SIZE).rechunk()
            held, count = [rows.slice(ROW_GROUP_SIZE)], count - ROW_GROUP_SIZE
    if count:
        yield pl.concat(held, how="vertical").rechunk()


def write_partition(
    lake_root: str, config: str, products: UPath, decisions: pl.DataFrame, *, path: UPath, key: str
) -> tuple[dict[str, int], str]:
    """Write one curated partition from its product file and its published rows' decisions.

    `decisions` holds `DECISION_COLUMNS` of the partition's published rows. Return the placeholder
    counts of the written text and the digest of its rows (both also stored in the file's
    metadata). The sorted rows (`_sorted_rows`) are staged once in a local Arrow file a row
    group at a time while the counts and the digest are taken, then written from it, so memory
    holds a row group, never the partition; the bytes are those of writing it whole.
    """
    schema = curated_schema(config)
    text = [name for name in schema.names() if name not in ("split", "split_by")]
    scrubbed = scrubbed_columns(published_schema(config))
    found: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="distill-curated-") as folder:
        staged = Path(folder) / "rows.arrow"
        arrow_schema = pl.DataFrame(schema=schema).to_arrow().schema
        with pa.OSFile(str(staged), "wb") as sink, pa.ipc.new_stream(sink, arrow_schema) as out:

            def staging() -> Iterator[pl.DataFrame]:
                for piece in _pieces(_sorted_rows(lake_root, products, decisions, text), schema):
                    found.update(placeholder_counts(piece, scrubbed))
                    out.write_table(piece.to_arrow())
                    yield piece

            content = pieces_digest(schema, staging())
        counts = {name: found[name] for name in placeholders() if found[name]}
        metadata = {
            KEY_METADATA: key.encode(),
            PLACEHOLDERS_METADATA: json.dumps(counts, sort_keys=True).encode(),
            CONTENT_METADATA: content.encode(),
        }
        with pa.OSFile(str(staged), "rb") as source:
            reader = pa.ipc.open_stream(source)
            with parquet_writer_atomic(path, reader.schema.with_metadata(metadata)) as writer:
                empty = True
                for batch in reader:
                    writer.write_table(
                        pa.Table.from_batches([batch]), row_group_size=ROW_GROUP_SIZE
                    )
                    empty = False
                if empty:
                    # no published row: the file `write_parquet_atomic` writes for an empty table
                    writer.write_table(reader.schema.empty_table())
    return counts, content


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
            write_partition(lake_root, config, product, decisions, path=path, key=key)
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
