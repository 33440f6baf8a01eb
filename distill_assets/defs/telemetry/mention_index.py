"""The mention index: per bronze day, the known players its payload texts name by raw id.

See docs/privacy.md#the-mention-index.

Silver finds, once per day, the tokens of the day's bronze payloads that name a player known by
the day's end (`privacy.player_tokens`). From that short list it also writes
`<lake>/_index/telemetry/mentions/<day>.parquet`: the distinct known `player_key`s that the keyed
hash of a token (as written, lower-cased, upper-cased) equals (`mentioned_keys`). Pseudonymous
keys only, never a token. Its footer holds the fingerprint of what it was computed from: the
bronze `events` partitions up to the day (they hold the day's texts and the known players) and
the privacy rules' version (`day_fingerprints`).

A deletion's mention redaction (`deletion.redact_mentions`) reads it to skip a bronze partition
(`plan_redaction`): for a player P known on day D, D's texts name P (what the redaction replaces)
only if P is in D's index, so a partition is skipped only when its index is current and every
newly deleted player was known on its day (their first bronze row on it or before) and is not in
it; any other partition is scanned as without an index. After the deletion's rewrites of bronze
(rows removed, raw ids replaced: what an index says of the other players stays true), every index
that was current is rewritten without the redacted players and stamped with the new fingerprint
(`restamp`), so later nights use it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import duckdb
import polars as pl
import pyarrow as pa
from upath import UPath

from distill_assets.defs.player_ids import pads_player_key
from distill_assets.defs.shards import staged_current, staged_footer
from distill_assets.lib.lake import (
    feed_fingerprints,
    partition_files,
    read_parquet_table,
    write_parquet_atomic,
)
from distill_assets.rules import rules_version

SOURCE = "telemetry"
BRONZE_TABLE = "events"
INDEX_FOLDER = "_index"
# the footer key of an index file: the fingerprint of its inputs (JSON)
INDEX_KEY = b"distill.mention_index"
INDEX_SCHEMA = pa.schema([("player_key", pa.string())])


@dataclass(frozen=True)
class MentionIndex:
    """Where a day's mention index goes (`path`) and the fingerprint of its inputs."""

    path: UPath
    fingerprint: str


def index_folder(lake_root: str) -> UPath:
    """Return the folder of the bronze days' mention index files."""
    return UPath(lake_root).joinpath(INDEX_FOLDER, SOURCE, "mentions")


def index_path(lake_root: str, day: str) -> UPath:
    """Return the mention index file of a bronze day."""
    return index_folder(lake_root) / f"{day}.parquet"


def _bronze_files(lake_root: str) -> list[UPath]:
    return [UPath(f) for f in partition_files(lake_root, SOURCE, BRONZE_TABLE)]


def _stamp(inputs: str) -> str:
    return hashlib.sha256(f"{inputs} {rules_version('telemetry_privacy')}".encode()).hexdigest()


def day_fingerprints(lake_root: str) -> dict[str, str]:
    """Return, per bronze day, the fingerprint of its index's inputs (every footer read once).

    The bronze partitions up to the day (`feed_fingerprint`) and the privacy rules' version.
    """
    files = _bronze_files(lake_root)
    return {
        f.stem: _stamp(inputs) for f, inputs in zip(files, feed_fingerprints(files), strict=True)
    }


def day_index(lake_root: str, day: str) -> MentionIndex:
    """Return a bronze day's mention index: its file and its inputs' fingerprint now."""
    files = [f for f in _bronze_files(lake_root) if f.stem <= day]
    prefixes = feed_fingerprints(files)
    return MentionIndex(index_path(lake_root, day), _stamp(prefixes[-1] if prefixes else ""))


def mentioned_keys(
    con: duckdb.DuckDBPyConnection, tokens: list[str], pads: Mapping[str, bytes]
) -> list[str]:
    """Return the keys of `known` (a table of `con`) that a token of `tokens` names (sorted).

    A token names the player whose key is the keyed hash of the token as written, lower-cased or
    upper-cased (`select_player_tokens.sql`); tokens are ASCII (rules TOKEN_CHARS), so Python's
    case mapping is DuckDB's.
    """
    variants = {v for token in tokens for v in (token, token.lower(), token.upper())}
    hashes = sorted(pads_player_key(pads, v) for v in variants)
    named = con.from_arrow(pa.table({"player_key": hashes}, schema=INDEX_SCHEMA))
    rows = (
        con.table("known")
        .select("player_key")
        .join(named, "player_key", how="semi")
        .distinct()
        .order("player_key")
        .fetchall()
    )
    return [key for (key,) in rows]


def write_index(index: MentionIndex, keys: Collection[str]) -> None:
    """Write `keys` (player keys, sorted and distinct) to `index.path` atomically, stamped."""
    table = pa.table({"player_key": sorted(set(keys))}, schema=INDEX_SCHEMA)
    footer = staged_footer(INDEX_KEY, index.fingerprint)
    write_parquet_atomic(table.replace_schema_metadata(footer), index.path)


def current_keys(index: MentionIndex) -> list[str] | None:
    """Return the keys of the index file if it is current for `index.fingerprint`, else None."""
    if not index.path.exists() or not staged_current(index.path, INDEX_KEY, index.fingerprint):
        return None
    return read_parquet_table(index.path).column("player_key").to_pylist()


@dataclass(frozen=True)
class MentionPlan:
    """Which bronze partitions a deletion's mention redaction skips, and the indexes it keeps.

    `skipped`: bronze partition files whose index says no newly deleted player is named;
    `current`: day -> keys of every index that was current before the deletion (`restamp`).
    """

    skipped: frozenset[str]
    current: dict[str, list[str]]


def first_days(lake_root: str, players: list[str]) -> dict[str, str]:
    """Return each of `players`' first bronze day (the earliest partition with a row of theirs).

    A player with no bronze row is left out. One read of the `player_key` column of bronze.
    """
    wanted = pl.Series(players, dtype=pl.String)
    scans = [
        pl.scan_parquet(str(f))
        .select("player_key")
        .filter(pl.col("player_key").is_in(wanted.implode()))
        .unique()
        .with_columns(pl.lit(f.stem).alias("day"))
        for f in _bronze_files(lake_root)
    ]
    if not scans or not players:
        return {}
    found = pl.concat(scans).group_by("player_key").agg(pl.col("day").min()).collect()
    return dict(found.iter_rows())


def plan_redaction(lake_root: str, players: list[str]) -> MentionPlan:
    """Return which bronze partitions need no mention scan for the newly deleted `players`.

    Run before the deletion rewrites bronze. A partition of day D is skipped when its index is
    current and every player of `players` has a bronze row on D or before (so was known when the
    index was computed) and is not in it; every other partition is scanned as without an index.
    """
    fingerprints = day_fingerprints(lake_root)
    current: dict[str, list[str]] = {}
    for day, fingerprint in fingerprints.items():
        keys = current_keys(MentionIndex(index_path(lake_root, day), fingerprint))
        if keys is not None:
            current[day] = keys
    first = first_days(lake_root, players) if current and players else {}
    skipped = {
        str(f)
        for f in _bronze_files(lake_root)
        if f.stem in current
        and all(p in first and first[p] <= f.stem for p in players)
        and not set(players).intersection(current[f.stem])
    }
    return MentionPlan(frozenset(skipped), current)


def restamp(lake_root: str, plan: MentionPlan, redacted: list[str]) -> int:
    """Rewrite each index `plan` found current without `redacted`, stamped with bronze now.

    Run after the deletion's rewrites of bronze (rows removed, the `redacted` players' raw ids
    replaced in the texts): what each index says of the other players stays true. Only those
    rewrites may have changed bronze since the plan: the deletion log is a global step, which
    runs under the data dir's exclusive lock (`lib.runlock`), so no ingest writes bronze
    meanwhile. An index that was not current (its bronze changed since silver wrote it, or the
    day is gone) is removed: it could not be used again, and it may list a player just deleted;
    silver writes the day's again when it runs. Returns the indexes rewritten (one unchanged is
    left as it is).
    """
    fingerprints = day_fingerprints(lake_root)
    folder = index_folder(lake_root)
    for path in sorted(folder.glob("*.parquet")) if folder.exists() else []:
        if path.stem not in plan.current:
            path.unlink()
    gone = set(redacted)
    rewritten = 0
    for day, keys in plan.current.items():
        if day not in fingerprints:
            continue
        index = MentionIndex(index_path(lake_root, day), fingerprints[day])
        kept = [k for k in keys if k not in gone]
        if kept != keys or current_keys(index) is None:
            write_index(index, kept)
            rewritten += 1
    return rewritten
