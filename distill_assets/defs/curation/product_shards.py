"""One day's curation products split across workers: the day's candidates, shards, the merge.

With `DISTILL_INGEST_SHARDS=N` above 1 (`defs.shards`: "a day across N workers"), a config's
day of products (`curation/<config>_products`) is made by (R + 1) N + 2 steps, R the checked
redaction rules (`iban`, `payment_card`: `daily.product_assets`):

0. **The day's candidates in pieces** (`stage_found_piece`): the scrub of checked numbers
   replaces, in every row, the valid candidates found anywhere in the day (`products.day_found`),
   so no shard can scrub its rows from its own rows' candidates. Collecting them is a text pass
   per checked rule, each on the text as the rules before it leave it, the checked ones among
   them replacing their *day's* candidates (`scrub.scrub_candidates`). A rule's candidates of
   the day are the union of its candidates of any pieces of the day given those day sets
   (`scrub.rule_candidates`: one pass per slice, a set union), but not without them: an IBAN
   valid in one piece replaces its text glued to a word in another (no IBAN candidate there),
   whose digits may hold a valid card number. So there is one round of N steps per checked
   rule: piece k of round r collects rule r's candidates of its contiguous range of the day's
   `found_slices` (about 1/N of the feed bytes) with the day's candidates of rules before it
   (the union of their rounds' staged pieces, or collected here over the day when any is
   missing or stale: `found_before`), staged in `found_<r>_<k>.parquet` with the product
   version, the feed fingerprint and what it covers (`FoundPiece`) in its footer.
1. **The day's candidates** (`stage_found`): each rule's are the union of its round's pieces
   when they are all current and cover the day's slices exactly, else collected here, as the
   one step collected them all before the pieces (about a quarter of the unsharded step:
   docs/scaling-out.md). They are staged in `found.parquet` with the product version and the
   feed fingerprint in its footer, the same bytes either way. They are the valid checked
   numbers the day's feed partitions hold, in the same lake, removed by the merge, never in
   metadata (counts only).
2. **N shards** (`write_product_shard`): the day's product slices (`products.product_slices`)
   are cut into N contiguous ranges of about equal feed bytes (`defs.shards.split_sizes`); shard
   k computes its range with the day's candidates (its own `day_found` if none are staged or
   they are stale) and stages them, written as the day's file writes them, in `<k>.parquet`,
   whose footer holds the product version, the feed fingerprint and what it covers
   (`ShardRange`: its slices and their rows).
3. **The merge** (`merge_or_compute`): when the staged shards cover exactly the day's slices for
   the current version and feed fingerprint, their row groups are copied in order into the
   day's product file through the same writer (`products.write_product_groups`), atomically: the
   file is byte-identical to the unsharded step's. Otherwise (a shard missing, a feed partition
   rewritten since, a rules change, another slice size) the step computes the day itself, as
   with one shard. Either way it removes the staging folder
   `<lake>/_shards/curation/<config>/<day>` (pieces, candidates, shards).

A day whose product file is already fresh is reused by every step (nothing is staged), as
`products.refresh_day` reuses it; the release's `curate` is unchanged: it reuses fresh product
files and computes stale ones.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import ClassVar, Self

import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from distill_assets.defs.curation.products import (
    SLICE_BYTES,
    VECTOR_COLUMNS,
    DayRefresh,
    FeedFile,
    FeedSlice,
    ProductContext,
    ProductWrite,
    checked_rules,
    feed_files_of_day,
    feed_name,
    found_slices,
    found_texts,
    product_footer,
    product_is_fresh,
    product_slices,
    products_table,
    rule_found,
    write_day_products,
    write_product_groups,
)
from distill_assets.defs.shards import shard_dir, split_sizes
from distill_assets.lib.lake import (
    feed_fingerprint,
    is_remote,
    parquet_file,
    parquet_key_values,
    parquet_writer_atomic,
    partition_path,
    read_parquet_table,
    write_parquet_atomic,
)
from distill_assets.rules.curation import REDACTIONS

# the footer key of a staged shard's file: the slices it covers (`ShardRange`)
RANGE_KEY = b"distill.product_shard"
# the footer key of a staged piece of a checked rule's candidates: what it covers (`FoundPiece`)
PIECE_KEY = b"distill.found_piece"
FOUND_FILE = "found.parquet"
# where pyarrow keeps the Arrow schema a Parquet file was written with
ARROW_SCHEMA_KEY = b"ARROW:schema"
FOUND_SCHEMA = pa.schema([("rule", pa.string()), ("values", pa.list_(pa.string()))])


def product_shard_dir(lake_root: str, config: str, day: str) -> UPath:
    """Return the staging folder of a day's product shards of `config` (`<k>.parquet`, found)."""
    return shard_dir(lake_root, "curation", config, day)


def shard_ranges(pieces: Sequence[FeedSlice], shards: int) -> list[range]:
    """Return the contiguous ranges of a day's product slices the `shards` shards compute.

    About equal feed bytes each (`split_sizes`); a range is empty when the day has fewer
    slices than shards.
    """
    return split_sizes([piece.feed_bytes for piece in pieces], shards)


class _FooterRecord:
    """A staged file's record of what it covers, kept as JSON under the footer key `KEY`."""

    KEY: ClassVar[bytes]

    def encode(self) -> bytes:
        """Return the footer value of the staged file."""
        return json.dumps(asdict(self), sort_keys=True).encode()

    @classmethod
    def read(cls, metadata: dict[bytes, bytes]) -> Self | None:
        """Return the record in a staged file's footer key-values (None: not such a file)."""
        value = metadata.get(cls.KEY)
        return cls(**json.loads(value)) if value is not None else None


@dataclass(frozen=True)
class ShardRange(_FooterRecord):
    """What a staged product shard covers: slices `first .. end` of the day's, their rows."""

    KEY: ClassVar[bytes] = RANGE_KEY

    shard: int
    shards: int
    first: int
    end: int
    slice_rows: list[int]


@dataclass(frozen=True)
class DayInputs:
    """A day's feed files of a config, their fingerprint and where its product file goes."""

    path: UPath
    files: list[FeedFile]
    fingerprint: str

    @property
    def feeds(self) -> list[str]:
        """Return the `source/table` names of the day's feed tables."""
        return [feed_name(source, table) for source, table, _ in self.files]


def day_inputs(lake_root: str, config: str, day: str) -> DayInputs:
    """Return the day's feed files of `config` (no file: an empty fingerprint)."""
    files = feed_files_of_day(lake_root, config, day)
    fingerprint = feed_fingerprint([file for _, _, file in files]) if files else ""
    path = partition_path(lake_root, "curation", products_table(config), day)
    return DayInputs(path, files, fingerprint)


def _current(path: UPath, context: ProductContext, fingerprint: str) -> dict[bytes, bytes] | None:
    """Return a staged file's footer key-values if it is for this version and these feeds."""
    stored = parquet_key_values(path)
    expected = product_footer(context, fingerprint)
    return stored if all(stored.get(k) == v for k, v in expected.items()) else None


def found_piece_file(staging: UPath, rule: int, piece: int) -> UPath:
    """Return the staged piece `piece` of round `rule` (the `rule`-th checked rule, from 0)."""
    return staging / f"found_{rule}_{piece}.parquet"


@dataclass(frozen=True)
class FoundPiece(_FooterRecord):
    """What a staged piece of a checked rule's candidates covers.

    The rule's kind, piece `piece` of `pieces`: the day's `found_slices` `first .. end`, their
    rows.
    """

    KEY: ClassVar[bytes] = PIECE_KEY

    rule: str
    piece: int
    pieces: int
    first: int
    end: int
    slice_rows: list[int]


def _staged_round(
    staging: UPath,
    context: ProductContext,
    fingerprint: str,
    *,
    rule: int,
    pieces: int,
    slices: Sequence[FeedSlice],
) -> list[str] | None:
    """Return the union of round `rule`'s `pieces` staged pieces, or None if any is not current.

    Each must exist, be of this product version and feed fingerprint, of the round's rule and
    piece count, and together, in order, they must cover the day's `slices` exactly.
    """
    kind = REDACTIONS[checked_rules()[rule]].kind
    values: set[str] = set()
    end = 0
    for number in range(pieces):
        path = found_piece_file(staging, rule, number)
        footer = _current(path, context, fingerprint) if path.exists() else None
        covered = FoundPiece.read(footer) if footer is not None else None
        if covered is None or (covered.rule, covered.piece, covered.pieces, covered.first) != (
            kind,
            number,
            pieces,
            end,
        ):
            return None
        if covered.slice_rows != [p.rows for p in slices[covered.first : covered.end]]:
            return None
        (row,) = read_parquet_table(path).to_pylist()
        values.update(row["values"])
        end = covered.end
    return sorted(values) if end == len(slices) else None


def found_before(
    lake_root: str,
    context: ProductContext,
    day: str,
    *,
    inputs: DayInputs,
    rules: int,
    pieces: int,
    slices: Sequence[FeedSlice],
) -> tuple[dict[str, list[str]], int]:
    """Return the day's candidates of the first `rules` checked rules and how many were staged.

    A rule's are the union of its round's `pieces` staged pieces when they are current
    (`_staged_round`), else collected here over the whole day (`slices`, with the rules'
    before it): what `products.day_found` collects for them, either way.
    """
    staging = product_shard_dir(lake_root, context.config, day)
    found: dict[str, list[str]] = {}
    staged = 0
    for rule, index in enumerate(checked_rules()[:rules]):
        values = _staged_round(
            staging, context, inputs.fingerprint, rule=rule, pieces=pieces, slices=slices
        )
        if values is None:
            texts = found_texts(inputs.files, day, context.config, slices)
            values = rule_found(texts, context.config, index, found)
        else:
            staged += 1
        found[REDACTIONS[index].kind] = values
    return found, staged


def stage_found_piece(
    lake_root: str,
    context: ProductContext,
    day: str,
    *,
    rule: int,
    piece: int,
    pieces: int,
    slice_bytes: int = SLICE_BYTES,
) -> int | None:
    """Stage piece `piece` of `pieces` of the `rule`-th checked rule's candidates; their count.

    The piece's contiguous range of the day's `found_slices` (about equal feed bytes:
    `split_sizes`), scrubbed by the rules before it with the day's candidates of the checked
    ones (`found_before`: the previous rounds' staged pieces, else collected here), in
    `found_<rule>_<piece>.parquet` with the product version, feed fingerprint and its
    `FoundPiece` in the footer. None (nothing staged) for a day without a feed partition or
    whose product file is fresh.
    """
    inputs = day_inputs(lake_root, context.config, day)
    if not inputs.files or product_is_fresh(inputs.path, context, inputs.fingerprint):
        return None
    slices = found_slices(inputs.files, slice_bytes)
    span = split_sizes([p.feed_bytes for p in slices], pieces)[piece]
    mine = slices[span.start : span.stop]
    earlier, _ = found_before(
        lake_root, context, day, inputs=inputs, rules=rule, pieces=pieces, slices=slices
    )
    index = checked_rules()[rule]
    texts = found_texts(inputs.files, day, context.config, mine)
    values = rule_found(texts, context.config, index, earlier)
    kind = REDACTIONS[index].kind
    covered = FoundPiece(kind, piece, pieces, span.start, span.stop, [p.rows for p in mine])
    metadata = {**product_footer(context, inputs.fingerprint), PIECE_KEY: covered.encode()}
    table = pa.table({"rule": [kind], "values": [values]}, schema=FOUND_SCHEMA)
    staging = product_shard_dir(lake_root, context.config, day)
    write_parquet_atomic(
        table.replace_schema_metadata(metadata), found_piece_file(staging, rule, piece)
    )
    return len(values)


@dataclass(frozen=True)
class StagedFound:
    """The day's staged candidates: their count per rule, how many rules' came from pieces."""

    counts: dict[str, int]
    from_pieces: int


def stage_found(
    lake_root: str,
    context: ProductContext,
    day: str,
    pieces: int = 0,
    slice_bytes: int = SLICE_BYTES,
) -> StagedFound | None:
    """Stage the day's checked candidates (`found.parquet`): `products.day_found`'s.

    Each checked rule's from its round's `pieces` staged pieces (`stage_found_piece`) when
    they are current, else collected here (`found_before`; `pieces` 0: all of them here).
    None (nothing staged) for a day without a feed partition or whose product file is fresh.
    """
    inputs = day_inputs(lake_root, context.config, day)
    if not inputs.files or product_is_fresh(inputs.path, context, inputs.fingerprint):
        return None
    slices = found_slices(inputs.files, slice_bytes)
    rules = len(checked_rules())
    found, staged = found_before(
        lake_root, context, day, inputs=inputs, rules=rules, pieces=pieces, slices=slices
    )
    table = pa.table(
        {"rule": list(found), "values": list(found.values())}, schema=FOUND_SCHEMA
    ).replace_schema_metadata(product_footer(context, inputs.fingerprint))
    target = product_shard_dir(lake_root, context.config, day) / FOUND_FILE
    write_parquet_atomic(table, target)
    return StagedFound({rule: len(values) for rule, values in found.items()}, staged)


def staged_found(
    lake_root: str, context: ProductContext, day: str, fingerprint: str
) -> dict[str, list[str]] | None:
    """Return the day's staged candidates if current (this version, these feeds), else None."""
    path = product_shard_dir(lake_root, context.config, day) / FOUND_FILE
    if _current(path, context, fingerprint) is None:
        return None
    rows = read_parquet_table(path).to_pylist()
    return {row["rule"]: row["values"] for row in rows}


@dataclass(frozen=True)
class ShardWrite:
    """What a product shard step did: its slices and rows, whether the candidates were staged.

    `reused`: the day's product file was fresh, nothing was computed or staged.
    """

    slices: int
    rows: int
    found_staged: bool
    reused: bool


def write_product_shard(
    lake_root: str,
    context: ProductContext,
    day: str,
    *,
    shard: int,
    shards: int,
    slice_bytes: int = SLICE_BYTES,
) -> ShardWrite:
    """Compute shard `shard` of `shards` of a day's products into `<k>.parquet` (staged).

    The shard's range of the day's slices (`shard_ranges`), with the day's staged candidates
    (else its own `day_found`), written as the day's file writes them, with the product version,
    feed fingerprint and its `ShardRange` in the footer. An empty range stages a file of no
    column holding that footer alone.
    """
    config = context.config
    inputs = day_inputs(lake_root, config, day)
    if not inputs.files or product_is_fresh(inputs.path, context, inputs.fingerprint):
        return ShardWrite(0, 0, found_staged=False, reused=bool(inputs.files))
    pieces = product_slices(inputs.files, context, slice_bytes)
    span = shard_ranges(pieces, shards)[shard]
    mine = pieces[span.start : span.stop]
    covered = ShardRange(shard, shards, span.start, span.stop, [p.rows for p in mine])
    footer = {RANGE_KEY: covered.encode()}
    target = product_shard_dir(lake_root, config, day) / f"{shard}.parquet"
    found = staged_found(lake_root, context, day, inputs.fingerprint)
    if not mine:
        metadata = {**product_footer(context, inputs.fingerprint), **footer}
        write_parquet_atomic(pa.table({}).replace_schema_metadata(metadata), target)
        return ShardWrite(0, 0, found_staged=found is not None, reused=False)
    written = write_day_products(
        target,
        inputs.files,
        day,
        context,
        fingerprint=inputs.fingerprint,
        slice_bytes=slice_bytes,
        found=found,
        pieces=mine,
        footer=footer,
    )
    return ShardWrite(written.slices, written.rows, found_staged=found is not None, reused=False)


def check_shards(
    staged: list[UPath], context: ProductContext, fingerprint: str, pieces: Sequence[FeedSlice]
) -> str | None:
    """Return why the staged shard files cannot be merged into the day's products, or None.

    They must exist, be of this product version and feed fingerprint, and cover, in order, the
    day's slices `pieces` exactly (the same slices, of the same rows).
    """
    end = 0
    for number, path in enumerate(staged):
        if not path.exists():
            return f"shard {number} is not staged"
        footer = _current(path, context, fingerprint)
        covered = ShardRange.read(footer) if footer is not None else None
        if covered is None:
            return f"shard {number} is stale (another product version or feed partition)"
        rows = [piece.rows for piece in pieces[covered.first : covered.end]]
        if covered.first != end or covered.slice_rows != rows:
            return f"shard {number} covers other slices than the day's"
        end = covered.end
    if end != len(pieces):
        return f"the shards cover {end} of the day's {len(pieces)} slices"
    return None


def written_schema(reader: pq.ParquetFile) -> pa.Schema:
    """Return the Arrow schema a Parquet file was written with (its footer's `ARROW:schema`).

    Not `schema_arrow`, the schema read back: it names every list's items `element` where the
    writer's said `item`, and the footer stores the writer's.
    """
    encoded = (reader.metadata.metadata or {})[ARROW_SCHEMA_KEY]
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(encoded)))


def merge_day_products(
    path: UPath,
    staged: list[UPath],
    context: ProductContext,
    fingerprint: str,
    pieces: Sequence[FeedSlice],
) -> ProductWrite:
    """Copy the staged shards' row groups, in order, into the day's product file `path`.

    Atomically, through the writer and settings of `products.write_day_products`, with its
    footer (the shards' ranges dropped): the bytes the unsharded step writes. The shards must
    pass `check_shards`.
    """
    files = [(p, parquet_key_values(p)) for p in staged]
    ranges = [ShardRange.read(footer) for _, footer in files]
    first = next(p for p, r in zip(staged, ranges, strict=True) if r is not None and r.slice_rows)
    with parquet_file(first) as reader:
        schema = written_schema(reader).with_metadata(product_footer(context, fingerprint))
    rows = 0
    with parquet_writer_atomic(path, schema, plain=VECTOR_COLUMNS) as writer:
        for shard, covered in zip(staged, ranges, strict=True):
            if covered is None or not covered.slice_rows:
                continue
            with parquet_file(shard) as reader:
                for group in range(reader.metadata.num_row_groups):
                    table = reader.read_row_group(group, use_threads=not is_remote(shard))
                    table = table.replace_schema_metadata(None)
                    if not table.schema.equals(schema, check_metadata=False):
                        table = table.cast(schema)
                    write_product_groups(writer, table)
                    rows += table.num_rows
    return ProductWrite(
        rows,
        len(pieces),
        max(piece.rows for piece in pieces),
        max(piece.feed_bytes for piece in pieces),
    )


@dataclass(frozen=True)
class MergedDay:
    """The day's product after the merge step.

    `refresh` as `products.refresh_day` reports it, `merged` the staged shards merged into it (0:
    none), `not_merged` why they were not (None: they were, or the day needed none).
    """

    refresh: DayRefresh
    merged: int
    not_merged: str | None


def merge_or_compute(
    lake_root: str,
    context: ProductContext,
    day: str,
    shards: int,
    slice_bytes: int = SLICE_BYTES,
) -> MergedDay:
    """Bring the day's product file up to date from its `shards` staged shards, or by itself.

    A fresh file is kept; staged shards that pass `check_shards` are merged
    (`merge_day_products`); otherwise the day is computed here, as with one shard (with the
    staged candidates if they are current). The staging folder is removed in every case.
    """
    config = context.config
    inputs = day_inputs(lake_root, config, day)
    staging = product_shard_dir(lake_root, config, day)
    try:
        if not inputs.files:
            if inputs.path.exists():
                inputs.path.unlink()
            return MergedDay(DayRefresh(None, [], reused=False, written=None), 0, None)
        if product_is_fresh(inputs.path, context, inputs.fingerprint):
            return MergedDay(DayRefresh(inputs.path, inputs.feeds, True, None), 0, None)
        pieces = product_slices(inputs.files, context, slice_bytes)
        staged = [staging / f"{k}.parquet" for k in range(shards)]
        reason = check_shards(staged, context, inputs.fingerprint, pieces)
        if reason is None:
            written = merge_day_products(inputs.path, staged, context, inputs.fingerprint, pieces)
        else:
            written = write_day_products(
                inputs.path,
                inputs.files,
                day,
                context,
                fingerprint=inputs.fingerprint,
                slice_bytes=slice_bytes,
                found=staged_found(lake_root, context, day, inputs.fingerprint),
                pieces=pieces,
            )
        refresh = DayRefresh(inputs.path, inputs.feeds, reused=False, written=written)
        return MergedDay(refresh, shards if reason is None else 0, reason)
    finally:
        if staging.exists():
            staging.fs.rm(staging.path, recursive=True)
