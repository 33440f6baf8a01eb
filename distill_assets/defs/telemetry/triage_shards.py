"""One day's `telemetry/triage` split across workers: candidate pieces, context, shards, the merge.

With `DISTILL_INGEST_SHARDS=N` above 1 (`defs.shards`: "a day across N workers"), a day of
`telemetry/triage` (`triage.write_triage`) is made by 2N + 2 steps (`telemetry.assets`), of which
only the context and the merge's copy stay serial (docs/scaling-out.md):

1. **N candidate pieces** (`stage_candidates`): piece k reads a contiguous range of the day's
   silver row groups (about 1/N of its bytes, `silver_shards.token_rows`), lifts its candidates'
   payload fields and its peer predictions (`triage.candidate_batches`, `triage.peer_batches`)
   and stages them in `candidates-<k>.parquet` and `peer-<k>.parquet`. Lifting the payloads is
   about 0.4 of the unsharded step.
2. **The day's context** (`stage_context`): `select_triage_context.sql` over all the pieces, its
   day-wide windows (a player's karma, an episode's previous action and state, the first sighting
   of a game state, the peer predictions) and its order, with the columns only the rules read
   (`JUDGED_ONLY`) left null; the context columns (`CONTEXT_COLUMNS`) are staged in
   `context.parquet`, one row per candidate in silver order.
3. **N shards** (`write_shard`): shard k judges piece k's candidates (`triage.judge`) with their
   rows of the context (the pieces follow silver's order, which is the query's: the event ids
   are checked to match) and stages the rows in `judged-<k>.parquet`.
4. **The merge** (`merge_or_compute`, the `telemetry/triage` step): when the context and every
   shard are current, the judged rows are written in shard order by `write_frames`, whose row
   groups depend on the rows alone: the file is byte-identical to the unsharded step's
   (tests/unit/telemetry/test_triage_shards.py). Otherwise (a step missing, silver or the rules
   changed since) the step judges the day itself, as with one shard. Either way it removes the
   staging folder `<lake>/_shards/telemetry/triage/<day>`.

Every staged file's footer holds the fingerprint of what it was computed from
(`triage_fingerprint`: the day's silver file and the triage rules' version) and which piece of
how many it is; a stale file is never merged. The staged pieces hold silver's columns (pseudonymous
player keys, payload fields); they are removed by the merge and never logged nor put in metadata.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
from upath import UPath

from distill_assets.defs.shards import shard_dir, staged_current, staged_footer
from distill_assets.defs.telemetry import triage
from distill_assets.defs.telemetry.silver_shards import token_rows
from distill_assets.lib.lake import (
    ROW_GROUP_SIZE,
    feed_fingerprint,
    frame_batches,
    local_file,
    parquet_writer_atomic,
    write_frames,
)
from distill_assets.lib.sql import connect
from distill_assets.rules import rules_version

SOURCE = "telemetry"
TABLE = "triage"
# the footer key of every staged file: its fingerprint and which piece it is (JSON)
STAGED_KEY = b"distill.triage_shard"
CONTEXT_FILE = "context.parquet"
# the columns `select_triage_context.sql` computes from other candidates than a row's own
CONTEXT_COLUMNS = (
    "entropy",
    "top_skill",
    "peer_flagged",
    "player_karma",
    "repeated_action",
    "seen_scenario",
)
# the candidate columns only the rules read (no context is computed from them): null in the
# context step, so its query sorts and carries no more than it needs
JUDGED_ONLY = {
    "ambiguity_score": "DOUBLE",
    "reasoning_given": "BOOLEAN",
    "quest_id": "VARCHAR",
    "ambiguity_level": "VARCHAR",
    "social_context": "VARCHAR",
    "action_action_type": "VARCHAR",
}


def triage_shard_dir(lake_root: str, day: str) -> UPath:
    """Return the staging folder of a day's triage shards (pieces, context, judged rows)."""
    return shard_dir(lake_root, SOURCE, TABLE, day)


def triage_fingerprint(silver: UPath) -> str:
    """Return the fingerprint of what a day's staged triage files are computed from.

    The day's silver file (`feed_fingerprint`: name, size, footer) and the triage rules' version.
    """
    inputs = feed_fingerprint([silver] if silver.exists() else [])
    version = rules_version("telemetry_triage")
    return hashlib.sha256(f"{inputs} {version}".encode()).hexdigest()


@dataclass(frozen=True)
class TriageDay:
    """The staging folder of a day's triage shards and the fingerprint of its inputs."""

    staging: UPath
    fingerprint: str


def _write_staged(frames: Iterable[pl.DataFrame], path: UPath, footer: dict[bytes, bytes]) -> int:
    """Write `frames` (at least one, maybe empty) to `path` atomically with `footer`; the rows."""
    iterator = iter(frames)
    first = next(iterator)
    schema = first.to_arrow().schema.with_metadata(footer)
    rows = 0
    with parquet_writer_atomic(path, schema) as writer:
        for frame in itertools.chain([first], iterator):
            writer.write_table(frame.to_arrow().cast(schema), row_group_size=ROW_GROUP_SIZE)
            rows += frame.height
    return rows


def _piece(day: TriageDay, name: str, piece: int) -> UPath:
    return day.staging / f"{name}-{piece}.parquet"


def stage_candidates(day: TriageDay, silver: Path, *, piece: int, pieces: int) -> int:
    """Stage the candidates and peer predictions of piece `piece` of `pieces`; return candidates.

    The piece's rows of the day's silver file `silver` (local) are a contiguous range of its row
    groups (`token_rows`), read alone.
    """
    rows = token_rows(silver, piece, pieces)
    events = triage.triage_events(pl.scan_parquet(silver).slice(rows.start, len(rows)))
    footer = staged_footer(STAGED_KEY, day.fingerprint, piece=piece, pieces=pieces)
    _write_staged(triage.peer_batches(events), _piece(day, "peer", piece), footer)
    return _write_staged(triage.candidate_batches(events), _piece(day, "candidates", piece), footer)


def _pieces_current(day: TriageDay, pieces: int) -> bool:
    return all(
        staged_current(
            _piece(day, name, piece), STAGED_KEY, day.fingerprint, piece=piece, pieces=pieces
        )
        for name in ("candidates", "peer")
        for piece in range(pieces)
    )


def stage_context(day: TriageDay, pieces: int) -> int | None:
    """Stage the day's context of every candidate (`CONTEXT_COLUMNS`) in silver order; the rows.

    Needs the `pieces` current candidate pieces (else stages nothing: None). DuckDB reads them
    with the `JUDGED_ONLY` columns null and runs `select_triage_context.sql`, spilling past
    `triage.CONTEXT_MEMORY_LIMIT`; its rows are streamed to `context.parquet`.
    """
    if not _pieces_current(day, pieces):
        return None
    con = connect(private=True)  # a memory limit is global to a database: not the shared one's
    try:
        con.execute(f"SET memory_limit = '{triage.CONTEXT_MEMORY_LIMIT}'")
        with ExitStack() as stack:
            files = {
                name: [
                    str(stack.enter_context(local_file(_piece(day, name, piece))))
                    for piece in range(pieces)
                ]
                for name in ("candidates", "peer")
            }
            nulls = ", ".join(f"NULL::{kind} AS {name}" for name, kind in JUDGED_ONLY.items())
            query = triage.context_query(
                con,
                con.read_parquet(files["candidates"]).select(f"* REPLACE ({nulls})"),
                con.read_parquet(files["peer"]),
            )
            reader = query.fetch_record_batch(triage.JUDGE_BATCH_ROWS)
            columns = ("event_id", *CONTEXT_COLUMNS)
            batches = (pl.from_arrow(batch).select(columns) for batch in reader)
            empty = pl.from_arrow(reader.schema.empty_table()).select(columns)
            return _write_staged(
                itertools.chain(batches, [empty]),
                day.staging / CONTEXT_FILE,
                staged_footer(STAGED_KEY, day.fingerprint, pieces=pieces),
            )
    finally:
        con.close()


@dataclass(frozen=True)
class ShardWrite:
    """What a triage shard step did: the rows it judged and staged, or why it staged nothing."""

    rows: int | None
    not_staged: str | None


def write_shard(day: TriageDay, *, shard: int, shards: int) -> ShardWrite:
    """Judge piece `shard` of `shards` of the day with its rows of the context; stage the rows.

    Needs the current pieces and context (else stages nothing and says why). The piece's rows of
    the context follow the rows of the pieces before it; the rows are judged
    `triage.JUDGE_BATCH_ROWS` at a time into `judged-<shard>.parquet`.
    """
    context_file = day.staging / CONTEXT_FILE
    if not _pieces_current(day, shards) or not staged_current(
        context_file, STAGED_KEY, day.fingerprint, pieces=shards
    ):
        return ShardWrite(None, "the day's candidates or context are not staged for these inputs")
    sizes = [_rows(_piece(day, "candidates", piece)) for piece in range(shards)]
    offset, rows = sum(sizes[:shard]), sizes[shard]
    with (
        local_file(_piece(day, "candidates", shard)) as candidates,
        local_file(context_file) as context,
    ):
        judged = _write_staged(
            _judged(pl.scan_parquet(candidates), pl.scan_parquet(context), offset, rows),
            _piece(day, "judged", shard),
            staged_footer(STAGED_KEY, day.fingerprint, piece=shard, pieces=shards),
        )
    return ShardWrite(judged, None)


def _rows(path: UPath) -> int:
    with local_file(path) as local:
        return pq.ParquetFile(local).metadata.num_rows


def _judged(
    candidates: pl.LazyFrame, context: pl.LazyFrame, offset: int, rows: int
) -> Iterator[pl.DataFrame]:
    """Yield the judged rows of `candidates`, whose context is `context`'s rows from `offset`."""
    size = triage.JUDGE_BATCH_ROWS
    for start in range(0, max(rows, 1), size):
        length = min(size, rows - start)
        rows_of = candidates.slice(start, length).collect()
        context_of = context.slice(offset + start, length).collect()
        if not rows_of.get_column("event_id").equals(context_of.get_column("event_id")):
            raise ValueError("the day's context does not follow the shard's candidates")
        yield triage.judge(pl.concat([rows_of, context_of.drop("event_id")], how="horizontal"))


def check_shards(day: TriageDay, shards: int) -> str | None:
    """Return why the staged shards cannot be merged into the day's triage, or None.

    The pieces, the context and every shard's judged rows must be current (this fingerprint,
    these pieces).
    """
    if not _pieces_current(day, shards):
        return "the day's candidate pieces are not staged for these inputs"
    if not staged_current(day.staging / CONTEXT_FILE, STAGED_KEY, day.fingerprint, pieces=shards):
        return "the day's context is not staged for these inputs"
    for shard in range(shards):
        judged = _piece(day, "judged", shard)
        if not staged_current(judged, STAGED_KEY, day.fingerprint, piece=shard, pieces=shards):
            return f"shard {shard} is not staged for these inputs"
    return None


@dataclass(frozen=True)
class MergedTriage:
    """The day's triage after the merge: its rows, the shards merged (0: none) and why not."""

    rows: int
    merged: int
    not_merged: str | None


def merge_or_compute(
    day: TriageDay, silver: pl.LazyFrame, target: Path, shards: int
) -> MergedTriage:
    """Write the day's triage to `target` from its `shards` staged shards, or compute it.

    Shards that pass `check_shards` are written in order by `write_frames` (the unsharded
    step's writer: the same bytes); otherwise the day is judged here from `silver` (the step's
    input, `triage.write_triage`). The staging folder is removed in every case.
    """
    try:
        reason = check_shards(day, shards)
        if reason is not None:
            return MergedTriage(triage.write_triage(silver, target), 0, reason)
        with ExitStack() as stack:
            files = [
                stack.enter_context(local_file(_piece(day, "judged", shard)))
                for shard in range(shards)
            ]
            batches = itertools.chain.from_iterable(
                frame_batches(pl.scan_parquet(path), triage.JUDGE_BATCH_ROWS) for path in files
            )
            return MergedTriage(write_frames(batches, target), shards, None)
    finally:
        if day.staging.exists():
            day.staging.fs.rm(day.staging.path, recursive=True)
