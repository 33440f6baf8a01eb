"""One day's `telemetry/validation` split across workers by player: shards, the id guard, the merge.

With `DISTILL_INGEST_SHARDS=N` above 1 (`defs.shards`: "a day across N workers"), a day of
`telemetry/validation` (`validation.validate_events`) is made by N + 1 steps (`telemetry.assets`),
of which only the merge stays serial (docs/scaling-out.md):

1. **N shards** (`write_shard`): shard k takes the day's players (deleted players left out, as
   the unsharded step leaves them out) whose stable bucket of the player_key
   (`lib.hashing.with_stable_bucket`, `PLAYER_SALT`) is k, writes their bronze rows once to a
   local scratch Parquet file (removed after) and runs the checks on it
   (`validation.check_events`: every check reads that file, not the day). It stages its
   validation rows in `<k>.parquet` and the groups its checks compared (`CheckedEvents.groups`:
   conversation and episode ids, no player key, no payload) in `ids-<k>.parquet`.
2. **The merge** (`merge_or_compute`, the `telemetry/validation` step): when every shard is
   current and no conversation or episode id is in two shards' ids, the shards' rows are
   concatenated and given the unsharded step's final unique and sort
   (`validation.validation_rows`): the day's table is the unsharded step's, byte for byte once
   written (tests/unit/telemetry/test_validation_shards.py). Otherwise (a shard missing, its
   inputs changed since, or ids that span shards) the step validates the day itself, as with one
   shard. Either way it removes the staging folder `<lake>/_shards/telemetry/validation/<day>`.

Why the merge is exact, and why it needs the guard: event ids are unique in a day's bronze, so
every (event_id, check) row comes from one event, hence one shard, where the checks run in the
unsharded step's order. The bot signature (a player's sessions) and the per-event checks
(timestamps, action ranges, the offered option) judge one player's events; but the turn order
compares a conversation's turns, the step order and `step_index_backwards` an episode's steps,
and `action_after_episode_end` a step with its episode's end, whoever sent them. Those ids are
the clients' and a client may reuse another player's (the gaming this layer catches): then the
shards compared less than the day does, and the merge falls back.

Every staged file's footer holds the fingerprint of what it was computed from
(`validation_fingerprint`: the bronze partitions up to the day, which hold its events and the
deletion requests, and the validation rules' version) and which shard of how many it is; a stale
file is never merged. The staged rows are the validation table's (pseudonymous player keys);
they are removed by the merge and never logged nor put in metadata.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass

import polars as pl
from upath import UPath

from distill_assets.defs.shards import shard_dir, staged_current, staged_footer
from distill_assets.defs.telemetry import validation
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.hashing import with_stable_bucket
from distill_assets.lib.lake import (
    feed_fingerprint,
    partition_files,
    read_parquet_table,
    write_parquet_atomic,
)
from distill_assets.rules import rules_version

SOURCE = "telemetry"
TABLE = "validation"
# the footer key of every staged file: its fingerprint and which shard it is (JSON)
STAGED_KEY = b"distill.validation_shard"
# the salt of the players' stable buckets (`with_stable_bucket`)
PLAYER_SALT = "telemetry_validation"
# the codec of a shard's scratch copy of its bronze rows (read by every check, then removed)
SCRATCH_COMPRESSION = "lz4"


def validation_shard_dir(lake_root: str, day: str) -> UPath:
    """Return the staging folder of a day's validation shards (rows and ids per shard)."""
    return shard_dir(lake_root, SOURCE, TABLE, day)


def validation_fingerprint(lake_root: str, day: str) -> str:
    """Return the fingerprint of what a day's staged validation files are computed from.

    The bronze partitions up to `day` (`feed_fingerprint`: names, sizes, footers): the day's
    events and the deletion requests that leave players out; and the validation rules' version.
    """
    files = [UPath(f) for f in partition_files(lake_root, SOURCE, "events") if UPath(f).stem <= day]
    inputs = feed_fingerprint(files)
    version = rules_version("telemetry_validation")
    return hashlib.sha256(f"{inputs} {version}".encode()).hexdigest()


@dataclass(frozen=True)
class ValidationDay:
    """A day's inputs to validation, its staging folder and the fingerprint of its inputs.

    `bronze`: the day's bronze events; `deleted`: the players a deletion request up to the day
    removes (`player_key`), left out of every check.
    """

    bronze: pl.LazyFrame
    deleted: pl.LazyFrame
    staging: UPath
    fingerprint: str

    def events(self) -> pl.LazyFrame:
        """Return the events the unsharded step validates: bronze without the deleted players."""
        return self.bronze.join(self.deleted, on="player_key", how="anti")


def _rows_file(day: ValidationDay, shard: int) -> UPath:
    return day.staging / f"{shard}.parquet"


def _ids_file(day: ValidationDay, shard: int) -> UPath:
    return day.staging / f"ids-{shard}.parquet"


def shard_players(day: ValidationDay, shard: int, shards: int) -> pl.Series:
    """Return the day's players (deleted ones left out) in stable bucket `shard` of `shards`."""
    players = (
        day.bronze.select("player_key")
        .unique()
        .join(day.deleted, on="player_key", how="anti")
        .collect()
    )
    buckets = with_stable_bucket(players, "player_key", PLAYER_SALT, shards)
    return buckets.filter(pl.col("bucket") == shard).get_column("player_key")


@dataclass(frozen=True)
class ShardWrite:
    """What a validation shard step staged: its validation rows and the group ids it judged."""

    rows: int
    ids: int


def write_shard(day: ValidationDay, *, shard: int, shards: int) -> ShardWrite:
    """Validate shard `shard` of `shards` of the day's players; stage its rows and group ids.

    The shard's bronze rows (`shard_players`) are written once to a local scratch file, which
    `validation.check_events` reads, and removed.
    """
    players = shard_players(day, shard, shards)
    scratch = working_dir("validation-shard")
    try:
        events = scratch / "events.parquet"
        day.bronze.select(validation.EVENT_COLUMNS).filter(
            pl.col("player_key").is_in(players.implode())
        ).sink_parquet(events, compression=SCRATCH_COMPRESSION)
        checked = validation.check_events(pl.scan_parquet(events))
        ids = checked.groups.collect()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    footer = staged_footer(STAGED_KEY, day.fingerprint, shard=shard, shards=shards)
    for frame, path in ((checked.rows, _rows_file(day, shard)), (ids, _ids_file(day, shard))):
        write_parquet_atomic(frame.to_arrow().replace_schema_metadata(footer), path)
    return ShardWrite(checked.rows.height, ids.height)


def check_shards(day: ValidationDay, shards: int) -> str | None:
    """Return why the staged shards cannot be merged into the day's validation, or None.

    Every shard's rows and ids must be current (this fingerprint, this shard of `shards`), and
    no conversation or episode id (a missing one included) may be in two shards' ids.
    """
    for shard in range(shards):
        for path in (_rows_file(day, shard), _ids_file(day, shard)):
            if not staged_current(path, STAGED_KEY, day.fingerprint, shard=shard, shards=shards):
                return f"shard {shard} is not staged for these inputs"
    ids = pl.concat(
        [pl.from_arrow(read_parquet_table(_ids_file(day, shard))) for shard in range(shards)]
    )
    spanning = ids.group_by("group", "id").len().filter(pl.col("len") > 1).height
    return f"{spanning} ids span shards" if spanning else None


@dataclass(frozen=True)
class MergedValidation:
    """The day's validation after the merge: its rows, the shards merged (0: none) and why not."""

    rows: pl.DataFrame
    merged: int
    not_merged: str | None


def merge_or_compute(day: ValidationDay, shards: int) -> MergedValidation:
    """Return the day's validation table from its `shards` staged shards, or compute it.

    Shards that pass `check_shards` are concatenated and given the unsharded step's unique and
    sort (`validation.validation_rows`); otherwise the day is validated here
    (`validation.validate_events`). The staging folder is removed in every case.
    """
    try:
        reason = check_shards(day, shards)
        if reason is not None:
            return MergedValidation(validation.validate_events(day.events()), 0, reason)
        staged = [pl.from_arrow(read_parquet_table(_rows_file(day, k))) for k in range(shards)]
        rows = validation.validation_rows(pl.concat(staged, how="vertical_relaxed").lazy())
        return MergedValidation(rows, shards, None)
    finally:
        if day.staging.exists():
            day.staging.fs.rm(day.staging.path, recursive=True)
