"""One day's silver telemetry events split across workers: tokens, keys, shards, the merge.

With `DISTILL_INGEST_SHARDS=N` above 1 (`defs.shards`: "a day across N workers"), a day of
`telemetry/accepted_events` (`privacy.write_accepted_events`) is made by 2N + 2 steps
(`telemetry.assets`), of which only the keys and the merge's copy stay serial
(docs/scaling-out.md):

1. **The day's known-player tokens, in N pieces** (`stage_tokens`): which tokens of the day's
   texts name a known player is decided per token, so the day's set (the redaction's regexes,
   and whether every text goes through all of them, need all of it) is the union of the sets of
   any pieces of the day's events. Piece k reads a contiguous range of bronze's row groups
   (about 1/N of its bytes) and stages its tokens in `tokens-<k>.parquet`, and the known
   players they name in `mentions-<k>.parquet` (the merge writes their union as the day's
   mention index, `mention_index`). This per-event regex pass is over a third of the unsharded
   step.
2. **The day's keys** (`stage_keys`, beside the pieces): the accepted events and their
   `event_seq` (day-wide: the order of the whole day), staged in `keys.parquet`.
3. **N shards** (`write_shard`): the day's `event_seq` ranges of `privacy.SORT_CHUNK_ROWS` rows
   are cut into N contiguous runs of about equal rows (`defs.shards.split_sizes`); shard k reads
   bronze restricted to its ranges' keys, redacts with the day's tokens and writes one sorted
   file per range (`privacy.write_sorted_ranges`, as the unsharded step writes them) into
   `ranges/<i>.parquet`, then `shard-<k>.parquet`, a file of no column whose footer says which
   ranges, of how many rows, it wrote.
4. **The merge** (`merge_or_compute`, the `telemetry/accepted_events` step): when the shards'
   footers cover exactly the day's ranges, the range files are copied in order into the day's
   file (`privacy.concat_pieces`, as the unsharded step does): the file is byte-identical to the
   unsharded step's (tests/unit/telemetry/test_silver_shards.py). Otherwise (a step missing, an
   input rewritten since, a day of one range) the step computes the day itself, as with one
   shard. Either way it removes the staging folder `<lake>/_shards/telemetry/accepted_events/<day>`.

Every staged file's footer holds the fingerprint of what it was computed from
(`silver_fingerprint`: the bronze partitions up to the day, which hold its events and the player
state, the day's validation partition for the keys and shards, the privacy rules' version and
the range size); a stale file is never merged. A day of at most one range of bronze rows has
nothing to divide: no step stages anything and the merge computes it. The tokens are staged in
the lake as bronze holds them (its payload texts), and removed by the merge; they are never
logged nor put in metadata.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from distill_assets.defs.shards import shard_dir, split_sizes, staged_footer
from distill_assets.defs.telemetry import privacy
from distill_assets.defs.telemetry.mention_index import (
    INDEX_SCHEMA,
    MentionIndex,
    mentioned_keys,
    write_index,
)
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import (
    feed_fingerprint,
    local_file,
    move_into_place,
    parquet_key_values,
    parquet_writer_atomic,
    partition_files,
    partition_path,
    read_parquet_table,
    write_parquet_atomic,
)
from distill_assets.lib.sql import connect
from distill_assets.rules import rules_version

SOURCE = "telemetry"
TABLE = "accepted_events"
# the footer key of every staged file: its fingerprint and what it holds (JSON)
STAGED_KEY = b"distill.silver_shard"
KEYS_FILE = "keys.parquet"
RANGES_FOLDER = "ranges"
TOKENS_SCHEMA = pa.schema([("token", pa.string())])
KEYS_SCHEMA = pa.schema([("event_id", pa.string()), ("event_seq", pa.int64())])
# why a shard of a day of one range stages nothing
ONE_RANGE = "the day's silver is one range: nothing to divide"
# the key rows streamed to `keys.parquet` at a time
KEY_BATCH_ROWS = 1_000_000


def silver_shard_dir(lake_root: str, day: str) -> UPath:
    """Return the staging folder of a day's silver shards (tokens, keys, ranges, shard files)."""
    return shard_dir(lake_root, SOURCE, TABLE, day)


def silver_fingerprint(lake_root: str, day: str, *, validation: bool = True) -> str:
    """Return the fingerprint of what a day's staged silver files are computed from.

    The bronze partitions up to `day` (`feed_fingerprint`: names, sizes, footers), with
    `validation` the day's validation partition too, the privacy rules' version and the range
    size. The token pieces do not read validation (they run beside it).
    """
    files = [UPath(f) for f in partition_files(lake_root, SOURCE, "events") if UPath(f).stem <= day]
    if validation:
        files.append(partition_path(lake_root, SOURCE, "validation", day))
    inputs = feed_fingerprint([f for f in files if f.exists()])
    version = rules_version("telemetry_privacy")
    return hashlib.sha256(f"{inputs} {version} {privacy.SORT_CHUNK_ROWS}".encode()).hexdigest()


def _staged(path: UPath, fingerprint: str) -> dict[str, object] | None:
    """Return what a staged file holds if it exists and is for `fingerprint`, else None."""
    value = parquet_key_values(path).get(STAGED_KEY)
    holds = json.loads(value) if value is not None else None
    return holds if holds is not None and holds.pop("fingerprint") == fingerprint else None


def divides(events_file: Path) -> bool:
    """Return whether a bronze day has more rows than one range (else nothing is staged)."""
    return pq.ParquetFile(events_file).metadata.num_rows > privacy.SORT_CHUNK_ROWS


def token_rows(events_file: Path, piece: int, pieces: int) -> range:
    """Return the bronze rows (file row numbers) token piece `piece` of `pieces` reads.

    Contiguous row groups of about equal bytes (`split_sizes`), so a piece reads its own.
    """
    meta = pq.ParquetFile(events_file).metadata
    groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
    span = split_sizes([g.total_byte_size for g in groups], pieces)[piece]
    first = sum(g.num_rows for g in groups[: span.start])
    return range(first, first + sum(g.num_rows for g in groups[span.start : span.stop]))


def stage_tokens(
    events_file: Path,
    identity: privacy.SilverIdentity,
    staging: UPath,
    fingerprint: str,
    *,
    piece: int,
    pieces: int,
) -> int | None:
    """Stage the known-player tokens of piece `piece` of a bronze day; return how many.

    The keys of the known players they name are staged beside them (`mention_index`).
    `identity` gives the player keys known by the day's end and the HMAC key pads (its consent
    decisions are not read). None: the day has nothing to divide (`divides`).
    """
    if not divides(events_file):
        return None
    rows = token_rows(events_file, piece, pieces)
    con = connect(private=True)
    try:
        con.register("known", identity.known.select("player_key").unique().collect().to_arrow())
        number = duckdb.ColumnExpression("file_row_number")
        con.read_parquet(str(events_file), file_row_number=True).filter(
            (number >= duckdb.ConstantExpression(rows.start))
            & (number < duckdb.ConstantExpression(rows.stop))
        ).select("payload").create_view("events")
        tokens = privacy.player_tokens(con, identity.pads)
        keys = mentioned_keys(con, tokens, identity.pads)
    finally:
        con.close()
    footer = staged_footer(STAGED_KEY, fingerprint, piece=piece, pieces=pieces)
    named = pa.table({"player_key": keys}, schema=INDEX_SCHEMA)
    write_parquet_atomic(
        named.replace_schema_metadata(footer), staging / f"mentions-{piece}.parquet"
    )
    table = pa.table({"token": tokens}, schema=TOKENS_SCHEMA)
    write_parquet_atomic(table.replace_schema_metadata(footer), staging / f"tokens-{piece}.parquet")
    return len(tokens)


def staged_mentions(staging: UPath, fingerprint: str, pieces: int) -> list[str] | None:
    """Return the day's mentioned keys (the union of its staged pieces') if all are current."""
    keys: set[str] = set()
    for piece in range(pieces):
        path = staging / f"mentions-{piece}.parquet"
        if _staged(path, fingerprint) != {"piece": piece, "pieces": pieces}:
            return None
        keys.update(read_parquet_table(path).column("player_key").to_pylist())
    return sorted(keys)


def staged_tokens(staging: UPath, fingerprint: str, pieces: int) -> list[str] | None:
    """Return the day's tokens (the union of its `pieces` staged pieces) if all are current."""
    tokens: set[str] = set()
    for piece in range(pieces):
        path = staging / f"tokens-{piece}.parquet"
        if _staged(path, fingerprint) != {"piece": piece, "pieces": pieces}:
            return None
        tokens.update(read_parquet_table(path).column("token").to_pylist())
    return sorted(tokens)


@dataclass(frozen=True)
class SilverDay:
    """A day's inputs to silver (as `privacy.write_accepted_events` takes them), its staging.

    `events_file`: the day's bronze file (local); `staging`: `silver_shard_dir`; `fingerprint`:
    `silver_fingerprint` of the day's inputs, `tokens_fingerprint` that of the token pieces'
    (without validation); `mentions`: the day's mention index the merge writes (None: none).
    """

    events_file: Path
    validation: pl.LazyFrame
    deleted: pl.LazyFrame
    identity: privacy.SilverIdentity
    staging: UPath
    fingerprint: str
    tokens_fingerprint: str
    mentions: MentionIndex | None = None


def stage_keys(day: SilverDay) -> int | None:
    """Stage the day's accepted keys (event_id, event_seq) in `keys.parquet`; return the rows.

    `select_accepted_keys.sql` over the whole bronze day, streamed in `event_seq` order. None:
    the day has nothing to divide (`divides`).
    """
    if not divides(day.events_file):
        return None
    spill = working_dir("silver-keys")
    con = connect(private=True)
    try:
        privacy.register_day(con, day.validation, day.deleted, day.identity, spill)
        events = con.read_parquet(str(day.events_file)).select(*privacy.BRONZE_COLUMNS)
        events.create_view("events")
        rows = privacy.create_accepted_keys(con)
        keys = con.sql("SELECT event_id, event_seq FROM accepted ORDER BY event_seq")
        schema = KEYS_SCHEMA.with_metadata(staged_footer(STAGED_KEY, day.fingerprint, rows=rows))
        with parquet_writer_atomic(day.staging / KEYS_FILE, schema) as writer:
            for batch in keys.to_arrow_reader(KEY_BATCH_ROWS):
                writer.write_batch(batch.cast(KEYS_SCHEMA))
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    return rows


def range_rows(rows: int) -> list[int]:
    """Return the rows of each `event_seq` range of a day of `rows` silver rows, in order."""
    size = privacy.SORT_CHUNK_ROWS
    return [min(size, rows - index * size) for index in range(privacy.sort_ranges(rows))]


@dataclass(frozen=True)
class ShardCover:
    """What a silver shard wrote: ranges `first .. end` of the day's, their rows."""

    shard: int
    shards: int
    first: int
    end: int
    rows: list[int]


@dataclass(frozen=True)
class ShardWrite:
    """What a silver shard step did: the cover it staged, or why it staged nothing."""

    cover: ShardCover | None
    not_staged: str | None


def write_shard(day: SilverDay, *, shard: int, shards: int) -> ShardWrite:
    """Write shard `shard` of `shards` of a day's silver: its ranges' sorted files, its cover.

    Needs the day's current staged keys and tokens (else stages nothing and says why). The
    shard's ranges (`split_sizes` of the day's range rows) are written by
    `privacy.write_sorted_ranges` over bronze restricted to their keys, with the day's tokens,
    into `ranges/<i>.parquet`; then `shard-<k>.parquet` records the cover (`ShardCover`).
    """
    if not divides(day.events_file):
        return ShardWrite(None, ONE_RANGE)
    keys = _staged(day.staging / KEYS_FILE, day.fingerprint)
    tokens = staged_tokens(day.staging, day.tokens_fingerprint, shards)
    if keys is None or tokens is None:
        return ShardWrite(None, "the day's keys or tokens are not staged for these inputs")
    day_rows = range_rows(int(keys["rows"]))
    if len(day_rows) <= 1:
        return ShardWrite(None, ONE_RANGE)
    span = split_sizes(day_rows, shards)[shard]
    cover = ShardCover(shard, shards, span.start, span.stop, day_rows[span.start : span.stop])
    if span:
        _write_ranges(day, tokens, span)
    footer = staged_footer(STAGED_KEY, day.fingerprint, **asdict(cover))
    write_parquet_atomic(
        pa.table({}).replace_schema_metadata(footer), day.staging / f"shard-{shard}.parquet"
    )
    return ShardWrite(cover, None)


def _write_ranges(day: SilverDay, tokens: list[str], span: range) -> None:
    """Write the sorted files of the day's ranges `span` into `staging/ranges/`."""
    spill = working_dir("silver-shard")
    con = connect(private=True)
    try:
        privacy.register_day(con, day.validation, day.deleted, day.identity, spill)
        size = privacy.SORT_CHUNK_ROWS
        with local_file(day.staging / KEYS_FILE) as keys:
            con.execute(
                "CREATE TEMP TABLE accepted AS SELECT event_id, event_seq FROM read_parquet($keys)"
                " WHERE event_seq > $first AND event_seq <= $end",
                {"keys": str(keys), "first": span.start * size, "end": span.stop * size},
            )
        con.read_parquet(str(day.events_file)).select(*privacy.BRONZE_COLUMNS).join(
            con.table("accepted").select("event_id"), "event_id", how="semi"
        ).create_view("events")
        query, params = privacy.silver_query(con, tokens)
        pieces = privacy.write_sorted_ranges(
            con,
            query,
            params,
            spill,
            span,
            row_bytes=privacy.parquet_row_bytes(day.events_file),
        )
        for index, piece in zip(span, pieces, strict=True):
            move_into_place(piece, day.staging / RANGES_FOLDER / f"{index}.parquet")
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def check_shards(staging: UPath, fingerprint: str, shards: int) -> str | None:
    """Return why the staged shards cannot be merged into the day's silver, or None.

    The day's keys and every shard's cover must be current (this fingerprint), the covers must
    follow one another over exactly the day's ranges, with their rows, and every range's file
    must be staged.
    """
    keys = _staged(staging / KEYS_FILE, fingerprint)
    if keys is None:
        return "the day's keys are not staged for these inputs"
    day_rows = range_rows(int(keys["rows"]))
    end = 0
    for shard in range(shards):
        holds = _staged(staging / f"shard-{shard}.parquet", fingerprint)
        if holds is None:
            return f"shard {shard} is not staged for these inputs"
        cover = ShardCover(**holds)
        if cover.first != end or cover.rows != day_rows[cover.first : cover.end]:
            return f"shard {shard} covers other ranges than the day's"
        end = cover.end
    if end != len(day_rows) or len(day_rows) <= 1:
        return f"the shards cover {end} of the day's {len(day_rows)} ranges"
    missing = [i for i in range(end) if not (staging / RANGES_FOLDER / f"{i}.parquet").exists()]
    return f"range {missing[0]} is not staged" if missing else None


@dataclass(frozen=True)
class MergedSilver:
    """The day's silver after the merge: its rows, the shards merged (0: none) and why not."""

    rows: int
    merged: int
    not_merged: str | None


def merge_or_compute(day: SilverDay, target: Path, shards: int) -> MergedSilver:
    """Write the day's silver to `target` from its `shards` staged shards, or compute it.

    Shards that pass `check_shards` are copied in range order (`privacy.concat_pieces`), and
    the token pieces' mentioned keys, when all are current, written as the day's mention index
    (`day.mentions`); otherwise the day is computed here (`privacy.write_accepted_events`, which
    writes the index). The staging folder is removed in every case.
    """
    try:
        reason = check_shards(day.staging, day.fingerprint, shards)
        if reason is not None:
            rows = privacy.write_accepted_events(
                day.events_file,
                day.validation,
                day.deleted,
                target,
                day.identity,
                mentions=day.mentions,
            )
            return MergedSilver(rows, 0, reason)
        if day.mentions is not None:
            keys = staged_mentions(day.staging, day.tokens_fingerprint, shards)
            if keys is not None:
                write_index(day.mentions, keys)
        return MergedSilver(_concat_staged(day.staging, target), shards, None)
    finally:
        if day.staging.exists():
            day.staging.fs.rm(day.staging.path, recursive=True)


def _concat_staged(staging: UPath, target: Path) -> int:
    """Copy the staged range files, in order, into `target`; return the rows."""
    keys = parquet_key_values(staging / KEYS_FILE)[STAGED_KEY]
    ranges = privacy.sort_ranges(int(json.loads(keys)["rows"]))
    con = connect(private=True)
    try:
        with ExitStack() as stack:
            pieces = [
                stack.enter_context(local_file(staging / RANGES_FOLDER / f"{index}.parquet"))
                for index in range(ranges)
            ]
            return privacy.concat_pieces(con, pieces, target)
    finally:
        con.close()
