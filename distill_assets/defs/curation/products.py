"""Per-partition curation products: everything about a row that depends on that row alone.

For the rows of one partition (every feed table of a config, one day) a product holds the scrubbed
published columns, the internal ones, and the compact keys the global steps need: the exact
content hash, the split buckets of its group and row keys, the MinHash signature and its LSH
band keys, the embedding and its LSH bucket keys (vectors stored plain, uncompressed: cheap to
read back every night), the eval file it is contaminated by and whether it fails the config's
quality gate. Products are written once per
partition to `<lake>/curation/<config>_products/<day>.parquet` and reused while the feed
partitions they were made from (Parquet footer fingerprints) and the product version (curation
rules, embedder, eval sets) are unchanged, so a night that adds one partition reads the text of
that partition only. A day's products are computed in slices of its feed rows (`day_products`),
each written as it is done, so memory is bounded by a slice; the day's ingest makes them
(`daily.py`; split across shard steps by slice range with `DISTILL_INGEST_SHARDS` above 1:
`product_shards.py`), and the release's `curate` makes any that are missing or stale
(`refresh_products`).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from distill_assets.contracts.published import (
    COMMON_SCHEMA,
    CONFIG_FEEDS,
    SUBJECT_COLUMN,
    feed_schema,
    published_schema,
)
from distill_assets.defs.curation.decide import near_keys, semantic_keys
from distill_assets.defs.curation.decontaminate import EvalNgrams, contaminated_by
from distill_assets.defs.curation.dedup import content_hashes, content_key
from distill_assets.defs.curation.shapes import published_shape
from distill_assets.defs.curation.splits import key_buckets, prompt_hashes, prompt_text
from distill_assets.lib.cosine_lsh import BOUND_DIMS, bound_parts
from distill_assets.lib.embed import Embedder
from distill_assets.lib.lake import (
    ROW_GROUP_SIZE,
    feed_fingerprint,
    is_remote,
    parquet_file,
    parquet_key_values,
    parquet_writer_atomic,
    partition_path,
    table_dir,
)
from distill_assets.lib.minhash import part_signatures, shingled
from distill_assets.lib.scrub import (
    redaction_column,
    rule_candidates,
    scrub,
    scrub_candidates,
    scrubbed_columns,
)
from distill_assets.lib.text import core_text, sum_columns
from distill_assets.rules import rules_version
from distill_assets.rules.curation import (
    LSH_BANDS,
    MINHASH_BINS,
    NEAR_DUPLICATE_PARTS,
    NEAR_DUPLICATE_SKIPPED_FIELDS,
    NEAR_DUPLICATE_SKIPPED_ROLES,
    QUALITY_GATES,
    REDACTIONS,
    REPLACEMENT_CHAR,
    SEMANTIC_LSH_BANDS,
    SHINGLE_WORDS,
    QualityGate,
)

PRODUCT_FORMAT = "7"
PRODUCTS_SUFFIX = "_products"
VERSION_KEY = b"distill.product_version"
FINGERPRINT_KEY = b"distill.feed_fingerprint"
# the compact columns the global steps read (never the text)
KEY_COLUMNS: tuple[str, ...] = (
    "id",
    "source",
    "source_ref",
    "trust",
    "quality_score",
    "event_time",
    "split_group",
    "group_bucket",
    "prompt_key",
    SUBJECT_COLUMN,
    "partition",
    "product_row",
    "content_hash",
    "gate_failed",
    "contaminated_by",
    "replacement_chars",
)
# the compact per-row arrays the global steps read for every row, in `decide.RowVectors` order,
# and their types
ROW_ARRAYS: dict[str, type[np.generic]] = {
    "band_keys": np.uint64,
    "shingled": np.bool_,
    "semantic_keys": np.uint64,
    "embedding_head": np.float32,
    "embedding_tail": np.float32,
}
# the full vectors, read only for the rows a candidate link needs (`LakeVectors`)
FULL_VECTORS: dict[str, type[np.generic]] = {"signature": np.uint32, "embedding": np.float32}
# numeric vectors, stored plain and uncompressed (`lib.lake.write_parquet_atomic`)
VECTOR_COLUMNS: tuple[str, ...] = (*ROW_ARRAYS, *FULL_VECTORS)
# bytes of a slice of a day's products computed at once (`feed_slices`): its uncompressed feed
# bytes (by the feed files' footers) plus its rows' vectors (`vector_row_bytes`); what bounds the
# memory of a product step, whatever the day's size
SLICE_BYTES = 64 << 20


@dataclass(frozen=True)
class ProductContext:
    """What products are computed with: the config, the embedder and the evaluation sets."""

    config: str
    embedder: Embedder
    evals: EvalNgrams

    @property
    def version(self) -> str:
        """Return the version of products made with this context.

        It covers the product layout, the curation rules, the embedder, the eval sets and the
        config's feed contract: a change to any of them recomputes every partition.
        """
        parts = [PRODUCT_FORMAT, rules_version("curation"), self.embedder.name]
        parts += [self.evals.fingerprint, str(feed_schema(self.config))]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def vector_row_bytes(context: ProductContext) -> int:
    """Return the bytes of one product row's vectors (`VECTOR_COLUMNS`) for `context`.

    A feed row of a few hundred bytes gets kilobytes of signature and embedding, so a slice is
    sized by both (`feed_slices`).
    """
    parts = len(NEAR_DUPLICATE_PARTS.get(context.config, ("text",)))
    dim = context.embedder.dim * parts
    widths = {
        "signature": MINHASH_BINS * parts * 4,
        "band_keys": LSH_BANDS * 8,
        "shingled": 1,
        "embedding": dim * 4,
        "semantic_keys": SEMANTIC_LSH_BANDS * 8,
        "embedding_head": min(dim, BOUND_DIMS) * 4,
        "embedding_tail": 4,
    }
    return sum(widths[name] for name in VECTOR_COLUMNS)


def near_duplicate_text(config: str) -> pl.Expr:
    """Return the text near-dup, semantic dedup and decontamination see (rules/curation.py)."""
    published = published_schema(config)
    core = {name: dtype for name, dtype in published.items() if name not in COMMON_SCHEMA}
    return core_text(core, NEAR_DUPLICATE_SKIPPED_ROLES, NEAR_DUPLICATE_SKIPPED_FIELDS)


def near_duplicate_parts(config: str) -> list[pl.Expr]:
    """Return the parts a row of `config` is compared by (`NEAR_DUPLICATE_PARTS`), one text each.

    A config without parts is compared by its whole near-duplicate text. `dpo`: the text of its
    prompt, chosen and rejected messages (system messages left out, as in the whole text);
    `rlds`: the task description, the action sequence (each step's action type and details,
    one line per step) and the outcome (`success`, `failure`, or `truncated` when no
    `episode_end` ended it).
    """
    names = NEAR_DUPLICATE_PARTS.get(config)
    if names is None:
        return [near_duplicate_text(config)]
    published = published_schema(config)
    step = pl.element().struct
    special = {
        "actions": pl.col("steps")
        .list.eval(
            pl.concat_str(
                step.field("action").struct.field("action_type"),
                step.field("action").struct.field("action_details"),
                separator=" ",
            )
        )
        .list.join("\n"),
        "outcome": pl.when(pl.col("success"))
        .then(pl.lit("success"))
        .when(pl.col("steps").list.last().struct.field("is_terminal"))
        .then(pl.lit("failure"))
        .otherwise(pl.lit("truncated")),
    }
    return [
        special[name]
        if name in special
        else core_text(
            {name: published[name]}, NEAR_DUPLICATE_SKIPPED_ROLES, NEAR_DUPLICATE_SKIPPED_FIELDS
        )
        for name in names
    ]


def contributor_trust() -> pl.Expr:
    """Return a row's contributor trust: `metadata.trust`, else the lower of a pair's two trusts.

    Null for rows that carry none (every source but telemetry); it ranks dedup representatives.
    """
    trust = [
        pl.col("metadata").str.json_path_match(f"$.{key}").cast(pl.Float64, strict=False)
        for key in ("trust_chosen", "trust_rejected")
    ]
    single = pl.col("metadata").str.json_path_match("$.trust").cast(pl.Float64, strict=False)
    return pl.coalesce(single, pl.min_horizontal(trust)).alias("trust")


def part_embeddings(parts: list[pl.Series], embedder: Embedder) -> np.ndarray:
    """Return each row's embedding over its parts: the parts' embeddings side by side.

    Each part's unit embedding is scaled by 1/sqrt(parts), so the cosine of two rows is the mean
    of their parts' cosines (a part without text embeds as zeros and never matches). One part
    is its embedding unchanged.
    """
    if len(parts) == 1:
        return embedder.embed(parts[0])
    scale = np.float32(1.0 / np.sqrt(len(parts)))
    return np.hstack([embedder.embed(part) * scale for part in parts]).astype(np.float32)


def gate_failed(gate: QualityGate) -> pl.Expr:
    """Return whether a row fails `gate`: score below its minimum or a required flag not true."""
    failed = pl.col("quality_score").fill_null(0.0) < gate.min_score
    for flag in gate.required_flags:
        value = pl.col("metadata").str.json_path_match(f"$.{flag}").fill_null("")
        failed = failed | (value != "true")
    return failed


def replacement_chars(columns: Mapping[str, pl.DataType]) -> pl.Expr:
    """Return each row's count of U+FFFD in `columns` (`rules.curation.REPLACEMENT_CHAR`).

    Products keep it as `replacement_chars` (Int64); a row with any fails the quality gate.
    """
    return sum_columns(columns, lambda text: text.str.count_matches(REPLACEMENT_CHAR, literal=True))


def compute_products(
    feeds: pl.LazyFrame,
    context: ProductContext,
    first_row: int = 0,
    found: Mapping[str, Sequence[str]] | None = None,
) -> pl.DataFrame:
    """Return the products of the feed rows `feeds` (any number of partitions).

    Rows are first given the config's published shape (`shapes.published_shape`). Every column
    of a row depends on that row alone but two: `product_row`, the row's index within its
    partition plus `first_row` (a slice of a day passes the rows of the day before it), and the
    scrub of checked numbers, whose candidates are `found` (`scrub_found` of the whole day) or,
    without it, those of `feeds`. So a day computed slice by slice (`day_products`) gives the
    products of the whole day computed at once.
    """
    config = context.config
    published = published_schema(config)
    core = {name: dtype for name, dtype in published.items() if name not in COMMON_SCHEMA}
    feeds = published_shape(feeds, config)
    part_texts = near_duplicate_parts(config)
    if SUBJECT_COLUMN not in feeds.collect_schema():
        feeds = feeds.with_columns(pl.lit(None, dtype=pl.String).alias(SUBJECT_COLUMN))
    product_row = pl.int_range(pl.len(), dtype=pl.Int64).over("partition") + first_row
    scrubbed = (
        scrub(feeds, scrubbed_columns(published), found=found)
        .with_columns(replacement_chars(scrubbed_columns(published)).alias("replacement_chars"))
        .with_columns(
            product_row.alias("product_row"),
            content_key(core).alias("content_key"),
            near_duplicate_text(config).alias("near_text"),
            *(text.alias(f"near_part_{i}") for i, text in enumerate(part_texts)),
            contributor_trust(),
            prompt_text(config, published).alias("prompt_text"),
            (
                gate_failed(QUALITY_GATES.get(config, QualityGate()))
                | (pl.col("replacement_chars") > 0)
            ).alias("gate_failed"),
        )
        .collect(engine="streaming")
    )
    texts = scrubbed.get_column("near_text")
    parts = [scrubbed.get_column(f"near_part_{i}") for i in range(len(part_texts))]
    signature = part_signatures(parts, SHINGLE_WORDS, MINHASH_BINS)
    embedding = part_embeddings(parts, context.embedder)
    bands = near_keys(signature)
    keys = semantic_keys(embedding)
    head, tail = bound_parts(embedding)
    return (
        scrubbed.drop("near_text", "prompt_text", *(f"near_part_{i}" for i in range(len(parts))))
        .with_columns(
            content_hashes(scrubbed.get_column("content_key")).alias("content_hash"),
            prompt_hashes(scrubbed.get_column("prompt_text")).alias("prompt_key"),
            *key_buckets(scrubbed.select("id", "split_group")),
            contaminated_by(texts, context.evals),
            pl.Series("signature", signature, dtype=pl.Array(pl.UInt32, signature.shape[1])),
            pl.Series("band_keys", bands, dtype=pl.Array(pl.UInt64, bands.shape[1])),
            pl.Series("shingled", shingled(signature, len(parts)), dtype=pl.Boolean),
            pl.Series("embedding", embedding, dtype=pl.Array(pl.Float32, embedding.shape[1])),
            pl.Series("semantic_keys", keys, dtype=pl.Array(pl.UInt64, keys.shape[1])),
            pl.Series("embedding_head", head, dtype=pl.Array(pl.Float32, head.shape[1])),
            pl.Series("embedding_tail", tail, dtype=pl.Float32),
            *(pl.col(redaction_column(r.kind)).cast(pl.Int64) for r in REDACTIONS),
        )
        .drop("content_key")
    )


def scrub_found(feeds: Sequence[pl.LazyFrame], config: str) -> dict[str, list[str]]:
    """Return the checked redaction rules' candidates of the feed rows of `feeds` together.

    What `compute_products` replaces in every slice of a day (`scrub_candidates` over the
    slices `feeds`: one pass per checked rule, a slice at a time, holding only the candidates).
    """
    columns = scrubbed_columns(published_schema(config))
    return scrub_candidates([published_shape(feed, config) for feed in feeds], columns)


def rule_found(
    feeds: Sequence[pl.LazyFrame], config: str, index: int, found: Mapping[str, Sequence[str]]
) -> list[str]:
    """Return the candidates of the checked rule `REDACTIONS[index]` in the feed rows of `feeds`.

    One of `scrub_found`'s passes (`rule_candidates`): `found` must hold the day's candidates
    of the checked rules before it.
    """
    columns = scrubbed_columns(published_schema(config))
    return rule_candidates([published_shape(feed, config) for feed in feeds], columns, index, found)


def checked_rules() -> list[int]:
    """Return the indices in `REDACTIONS` of the checked rules, in order (one pass each)."""
    return [index for index, redaction in enumerate(REDACTIONS) if redaction.check]


def products_table(config: str) -> str:
    """Return the lake table (under `curation/`) of a config's products."""
    return f"{config}{PRODUCTS_SUFFIX}"


def feed_name(source: str, table: str) -> str:
    """Return the `source/table` name of a feed table (its asset key path)."""
    return f"{source}/{table}"


def scan_feed_file(config: str, source: str, table: str, path: str, day: str) -> pl.LazyFrame:
    """Lazily read one feed partition file of `config`: contract columns, `subject`, `partition`.

    A partition missing a contract column is a bug in the room that writes it: reported by table
    and file, not read as nulls.
    """
    schema = feed_schema(config)
    present = pl.read_parquet_schema(path)
    missing = [name for name in schema if name not in present]
    if missing:
        raise ValueError(
            f"feed table {feed_name(source, table)} of config {config!r} lacks {missing} in {path}"
        )
    subject = (
        pl.col(SUBJECT_COLUMN).cast(pl.String)
        if SUBJECT_COLUMN in present
        else pl.lit(None, dtype=pl.String).alias(SUBJECT_COLUMN)
    )
    return pl.scan_parquet(path).select(
        *(pl.col(name).cast(dtype) for name, dtype in schema.items()),
        subject,
        pl.lit(day, dtype=pl.String).alias("partition"),
    )


FeedFile = tuple[str, str, UPath]


def day_feed_files(lake_root: str, config: str) -> dict[str, list[FeedFile]]:
    """Return, per day, the `(source, table, file)` of every feed partition of `config`."""
    days: dict[str, list[FeedFile]] = {}
    for source, table in CONFIG_FEEDS.get(config, []):
        folder = table_dir(lake_root, source, table)
        if not folder.exists():
            continue
        for path in sorted(folder.iterdir(), key=lambda p: p.name):
            if path.name.endswith(".parquet") and not path.name.startswith("."):
                day = path.name.removesuffix(".parquet")
                days.setdefault(day, []).append((source, table, path))
    return dict(sorted(days.items()))


def feed_files_of_day(lake_root: str, config: str, day: str) -> list[FeedFile]:
    """Return the `(source, table, file)` of `config`'s feed partitions of one day.

    The files `day_feed_files` lists for that day, without listing the other days.
    """
    found = []
    for source, table in CONFIG_FEEDS.get(config, []):
        path = partition_path(lake_root, source, table, day)
        if path.exists():
            found.append((source, table, path))
    return found


@dataclass(frozen=True)
class FeedSlice:
    """Rows `offset .. offset + rows` of the feed partition file `path`, computed together.

    `first_row` is the `product_row` of its first row (the day's rows before it), `feed_bytes`
    its uncompressed feed size by the file's footer.
    """

    path: UPath
    offset: int
    rows: int
    first_row: int
    feed_bytes: int


def _pieces(
    groups: list[tuple[int, int]], slice_bytes: int, row_bytes: int = 0
) -> list[tuple[int, int]]:
    """Return `(rows, bytes)` of consecutive pieces of a file of row groups `(rows, bytes)`.

    A piece costs its bytes plus `row_bytes` per row. A row group costing more than
    `slice_bytes` is cut into even row ranges of about `slice_bytes`; consecutive pieces are
    then joined while they stay within `slice_bytes`.
    """
    units = []
    for rows, size in groups:
        parts = max(1, min(rows, -(-(size + rows * row_bytes) // slice_bytes)))
        bounds = [rows * k // parts for k in range(parts + 1)]
        units += [
            (hi - lo, size * (hi - lo) // max(rows, 1)) for lo, hi in itertools.pairwise(bounds)
        ]
    joined: list[tuple[int, int]] = []
    for rows, size in units:
        cost = joined[-1][1] + size + (joined[-1][0] + rows) * row_bytes if joined else 0
        if joined and cost <= slice_bytes:
            joined[-1] = (joined[-1][0] + rows, joined[-1][1] + size)
        else:
            joined.append((rows, size))
    return joined


def feed_slices(
    paths: list[UPath], slice_bytes: int = SLICE_BYTES, row_bytes: int = 0
) -> list[FeedSlice]:
    """Cut a day's feed partition files (in `CONFIG_FEEDS` order) into slices of `slice_bytes`.

    A slice's size is its rows' uncompressed bytes in the files' footers (nothing else is read)
    plus `row_bytes` per row (the product's vectors: `vector_row_bytes`); a slice never spans
    two files, and the slices follow the day's row order. A day without a row is one empty
    slice of its first file.
    """
    slices: list[FeedSlice] = []
    first_row = 0
    for path in paths:
        with parquet_file(path) as parquet:
            meta = parquet.metadata
            groups = [
                (meta.row_group(i).num_rows, meta.row_group(i).total_byte_size)
                for i in range(meta.num_row_groups)
            ]
        offset = 0
        for rows, size in _pieces(groups, slice_bytes, row_bytes):
            if rows:
                slices.append(FeedSlice(path, offset, rows, first_row, size))
            offset += rows
            first_row += rows
    return slices or [FeedSlice(paths[0], 0, 0, 0, 0)]


def _day_scans(files: list[FeedFile], day: str, config: str) -> dict[str, pl.LazyFrame]:
    """Return the lazy scan of each of a day's feed files (`scan_feed_file`), by path."""
    return {
        str(path): scan_feed_file(config, source, table, str(path), day)
        for source, table, path in files
    }


def day_found(
    files: list[FeedFile], day: str, config: str, slice_bytes: int = SLICE_BYTES
) -> dict[str, list[str]]:
    """Return the checked rules' candidates of a whole day's feed files (`scrub_found`).

    Collected slice by slice in slices of feed bytes alone (they hold no vectors: fewer, larger
    passes than the products' slices), holding only the candidates.
    """
    return scrub_found(found_texts(files, day, config, found_slices(files, slice_bytes)), config)


def found_slices(files: list[FeedFile], slice_bytes: int = SLICE_BYTES) -> list[FeedSlice]:
    """Return the slices `day_found` reads a day's feed files in (feed bytes alone)."""
    return feed_slices([path for _, _, path in files], slice_bytes)


def found_texts(
    files: list[FeedFile], day: str, config: str, pieces: Sequence[FeedSlice]
) -> list[pl.LazyFrame]:
    """Return the lazy feed rows of `pieces` (some of the day's `found_slices`), one per slice."""
    scans = _day_scans(files, day, config)
    return [scans[str(p.path)].slice(p.offset, p.rows) for p in pieces]


def product_slices(
    files: list[FeedFile], context: ProductContext, slice_bytes: int = SLICE_BYTES
) -> list[FeedSlice]:
    """Return the slices a day's products are computed in: feed bytes plus the rows' vectors."""
    paths = [path for _, _, path in files]
    return feed_slices(paths, slice_bytes, vector_row_bytes(context))


def day_products(
    files: list[FeedFile],
    day: str,
    context: ProductContext,
    slice_bytes: int = SLICE_BYTES,
    *,
    found: Mapping[str, Sequence[str]] | None = None,
    pieces: Sequence[FeedSlice] | None = None,
) -> Iterator[tuple[FeedSlice, pl.DataFrame]]:
    """Yield the products of one day's feed files slice by slice (`feed_slices`), in row order.

    Every product column of a row depends on that row alone (`compute_products`): each slice
    gets its `first_row` and the checked rules' candidates of the whole day (`found`, else
    `day_found` of `files`), so the slices together are the day's products computed at once,
    with at most one slice's text, signatures and embeddings in memory. `pieces` (some of the
    day's `product_slices`, e.g. a shard's range) limits the slices computed.
    """
    scans = _day_scans(files, day, context.config)
    found = day_found(files, day, context.config, slice_bytes) if found is None else found
    pieces = product_slices(files, context, slice_bytes) if pieces is None else pieces
    for piece in pieces:
        rows = scans[str(piece.path)].slice(piece.offset, piece.rows)
        yield piece, compute_products(rows, context, first_row=piece.first_row, found=found)


@dataclass(frozen=True)
class ProductWrite:
    """How one day's product file was written: its rows, its slices and the largest slice."""

    rows: int
    slices: int
    largest_slice_rows: int
    largest_slice_bytes: int


def product_footer(context: ProductContext, fingerprint: str) -> dict[bytes, bytes]:
    """Return the footer key-values of a day's product file (what `product_is_fresh` compares)."""
    return {VERSION_KEY: context.version.encode(), FINGERPRINT_KEY: fingerprint.encode()}


def write_product_groups(writer: pq.ParquetWriter, table: pa.Table) -> None:
    """Write one slice's (or one row group's) products as row groups of `ROW_GROUP_SIZE` rows.

    The table is made one contiguous chunk first, so a row group's pages are those of its rows
    alone, not of where its columns' chunks happened to end: rewriting a row group read back
    from a product file (`product_shards.merge_day_products`) gives the same bytes.
    """
    writer.write_table(table.combine_chunks(), row_group_size=ROW_GROUP_SIZE)


def write_day_products(
    path: UPath,
    files: list[FeedFile],
    day: str,
    context: ProductContext,
    *,
    fingerprint: str,
    slice_bytes: int = SLICE_BYTES,
    found: Mapping[str, Sequence[str]] | None = None,
    pieces: Sequence[FeedSlice] | None = None,
    footer: Mapping[bytes, bytes] | None = None,
) -> ProductWrite:
    """Compute one day's products slice by slice into the product file `path`, atomically.

    Each slice is written as it is done (`write_product_groups`; vectors PLAIN and
    uncompressed); the file carries the product version and the feed `fingerprint` in its
    footer (what `product_is_fresh` compares), and `footer`'s keys too. `found` and `pieces` are
    `day_products`': a shard writes its range of the day's slices with the day's candidates.
    """
    slices = day_products(files, day, context, slice_bytes, found=found, pieces=pieces)
    first = next(slices)
    metadata = {**product_footer(context, fingerprint), **(footer or {})}
    schema = first[1].to_arrow().schema.with_metadata(metadata)
    rows = count = largest_rows = largest_bytes = 0
    with parquet_writer_atomic(path, schema, plain=VECTOR_COLUMNS) as writer:
        for piece, products in itertools.chain([first], slices):
            table = products.to_arrow()
            if not table.schema.equals(schema):
                table = table.cast(schema)
            write_product_groups(writer, table)
            rows += table.num_rows
            count += 1
            largest_rows = max(largest_rows, piece.rows)
            largest_bytes = max(largest_bytes, piece.feed_bytes)
    return ProductWrite(rows, count, largest_rows, largest_bytes)


def product_is_fresh(path: UPath, context: ProductContext, fingerprint: str) -> bool:
    """Return whether the product file `path` is current: `context`'s version, these feed files.

    Its footer holds both (`VERSION_KEY`, `FINGERPRINT_KEY`); a missing file is not fresh.
    """
    stored = parquet_key_values(path)
    return all(stored.get(k) == v for k, v in product_footer(context, fingerprint).items())


@dataclass(frozen=True)
class DayRefresh:
    """One day's product after `refresh_day`.

    `path` is its file (None: the day has no feed partition), `feeds` the feed tables it was
    made from, `reused` whether a fresh one was kept, `written` how a computed one was written.
    """

    path: UPath | None
    feeds: list[str]
    reused: bool
    written: ProductWrite | None


def refresh_day(
    lake_root: str, context: ProductContext, day: str, slice_bytes: int = SLICE_BYTES
) -> DayRefresh:
    """Bring one day's product of `context`'s config up to date with its feed partitions.

    What `refresh_products` does for that day: a fresh product is reused, any other computed
    (`write_day_products`); a day without a feed partition has no product (one left from
    earlier is deleted).
    """
    config = context.config
    path = partition_path(lake_root, "curation", products_table(config), day)
    files = feed_files_of_day(lake_root, config, day)
    feeds = [feed_name(source, table) for source, table, _ in files]
    if not files:
        if path.exists():
            path.unlink()
        return DayRefresh(None, feeds, reused=False, written=None)
    fingerprint = feed_fingerprint([file for _, _, file in files])
    if product_is_fresh(path, context, fingerprint):
        return DayRefresh(path, feeds, reused=True, written=None)
    written = write_day_products(
        path, files, day, context, fingerprint=fingerprint, slice_bytes=slice_bytes
    )
    return DayRefresh(path, feeds, reused=False, written=written)


@dataclass(frozen=True)
class ProductRefresh:
    """The product files of a config after a refresh, and which days were (re)computed.

    `days[i]` is the partition of `paths[i]` and `fingerprints[i]` the fingerprint of its feed
    files (`feed_fingerprint`), in day order.
    """

    days: list[str]
    paths: list[UPath]
    fingerprints: list[str]
    computed: list[str]
    reused: list[str]


def refresh_products(lake_root: str, config: str, context: ProductContext) -> ProductRefresh:
    """Bring the products of `config` up to date with its feed partitions; return their files.

    A day whose stored product has the current version and feed fingerprint is reused (the
    daily `curation/<config>_products` asset made it, or an earlier night); any other day is
    computed slice by slice (`write_day_products`). Products of days that no longer have a feed
    partition are deleted.
    """
    table = products_table(config)
    days = day_feed_files(lake_root, config)
    paths, fingerprints, computed, reused = [], [], [], []
    for day, files in days.items():
        path = partition_path(lake_root, "curation", table, day)
        fingerprint = feed_fingerprint([file for _, _, file in files])
        if product_is_fresh(path, context, fingerprint):
            reused.append(day)
        else:
            write_day_products(path, files, day, context, fingerprint=fingerprint)
            computed.append(day)
        paths.append(path)
        fingerprints.append(fingerprint)
    folder = table_dir(lake_root, "curation", table)
    if folder.exists():
        for stale in _stale_products(folder, set(days)):
            stale.unlink()
    return ProductRefresh(list(days), paths, fingerprints, computed, reused)


def _stale_products(folder: UPath, days: set[str]) -> Iterator[UPath]:
    for path in folder.iterdir():
        if path.name.endswith(".parquet") and path.name.removesuffix(".parquet") not in days:
            yield path


def _frame(table: pa.Table) -> pl.DataFrame:
    """Return an Arrow table read from a product file as a frame (its file metadata dropped)."""
    return pl.from_arrow(table.replace_schema_metadata(None))  # type: ignore[return-value]


def read_products(paths: list[UPath], columns: list[str] | None = None) -> pl.DataFrame:
    """Read product files (only `columns` when given) into one frame, in day order.

    A row group at a time, so Arrow holds one row group's columns beside the frame, not a file.
    """
    frames = []
    for path in paths:
        with parquet_file(path) as reader:
            threads = not is_remote(path)
            if not reader.metadata.num_row_groups:
                frames.append(_frame(reader.read(columns=columns, use_threads=threads)))
            for group in range(reader.metadata.num_row_groups):
                table = reader.read_row_group(group, columns=columns, use_threads=threads)
                frames.append(_frame(table))
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="vertical")  # type: ignore[arg-type]


def _values(chunk: pa.Array, width: int) -> np.ndarray:
    """Return an Arrow chunk as NumPy: rows of `width` values for a fixed-size list, else 1-D."""
    if not width:
        return chunk.to_numpy(zero_copy_only=False)
    return chunk.flatten().to_numpy(zero_copy_only=False).reshape(len(chunk), width)


class LakeVectors:
    """The per-row arrays of product files: whole columns, or the full vectors of a few rows.

    Row i is the i-th row of the files in order. The footers are read once; `columns` reads
    compact columns of every row (one read per file for all of them), `fetch` the full vectors
    (`FULL_VECTORS`) of a few rows, reading only the row groups that hold them, so a night never
    holds the history's signatures or embeddings.
    """

    def __init__(self, paths: list[UPath]) -> None:
        """Read the footers: rows and row groups of every file, the width of every column."""
        self.paths = paths
        sizes, self.group_starts = [], []
        self.widths: dict[str, int] = {}
        for path in paths:
            with parquet_file(path) as footer:
                meta, schema = footer.metadata, footer.schema_arrow
            groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
            self.group_starts.append(np.concatenate([[0], np.cumsum(groups)]).astype(np.int64))
            sizes.append(meta.num_rows)
            self.widths = {
                field.name: field.type.list_size if pa.types.is_fixed_size_list(field.type) else 0
                for field in schema
            }
        self.file_starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    def columns(self, dtypes: dict[str, type[np.generic]]) -> list[np.ndarray]:
        """Return whole columns (2-D for a fixed-size list) of every file, one array each.

        Straight from Arrow into one preallocated array per column, one row group of one column
        at a time, so history's arrays are held once and Arrow holds a row group's column at most
        (not every file's columns whole, not also as frame columns).
        """
        rows = int(self.file_starts[-1])
        out = {
            name: np.empty((rows, self.widths[name]) if self.widths.get(name) else rows, dtype)
            for name, dtype in dtypes.items()
        }
        for path, start, groups in zip(
            self.paths, self.file_starts, self.group_starts, strict=False
        ):
            with parquet_file(path) as reader:
                for group in range(len(groups) - 1):
                    first = int(start + groups[group])
                    for name in dtypes:
                        chunk = reader.read_row_group(
                            group, columns=[name], use_threads=not is_remote(path)
                        ).column(0)
                        out[name][first : first + len(chunk)] = _values(
                            chunk.combine_chunks(), self.widths[name]
                        )
                        del chunk
        return list(out.values())

    def fetch(self, column: str, rows: np.ndarray) -> np.ndarray:
        """Return the vectors of `column` of `rows` (any order), as one 2-D array."""
        rows = np.asarray(rows, dtype=np.int64)
        width = self.widths.get(column, 0)
        out = np.empty((len(rows), width), dtype=FULL_VECTORS[column])
        files = np.searchsorted(self.file_starts, rows, side="right") - 1
        for file in np.unique(files):
            chosen = np.flatnonzero(files == file)
            local = rows[chosen] - self.file_starts[file]
            starts = self.group_starts[file]
            groups = np.searchsorted(starts, local, side="right") - 1
            path = self.paths[file]
            with parquet_file(path) as reader:
                for group in np.unique(groups):
                    picked = groups == group
                    chunk = reader.read_row_group(
                        int(group), columns=[column], use_threads=not is_remote(path)
                    ).column(0)
                    values = _values(chunk.combine_chunks(), width)
                    out[chosen[picked]] = values[local[picked] - starts[group]]
        return out


def matrix(column: pl.Series, dtype: type[np.generic]) -> np.ndarray:
    """Return a column as a NumPy array of `dtype`: 2-D for an Array column, else 1-D."""
    if isinstance(column.dtype, pl.Array) and column.is_empty():
        return np.zeros((0, column.dtype.size), dtype=dtype)
    return np.ascontiguousarray(column.to_numpy(), dtype=dtype)
