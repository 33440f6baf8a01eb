"""One day's `telemetry/episodes` split across workers: ranges of episode buckets, then the merge.

With `DISTILL_INGEST_SHARDS=N` above 1 (`defs.shards`: "a day across N workers"), a day of
`telemetry/episodes` and `telemetry/episode_pairs` (`episode_day.build_episode_day`) is made by
N + 1 steps (`episode_assets`), of which the merge and what every shard reads of the whole day
stay serial (docs/scaling-out.md):

1. **N shards** (`write_shard`): the day's buckets of episodes are cut by the competence rows as
   the unsharded step cuts them (`episode_day.bucket_bounds`: the same bounds at any N, so the
   same rows), and shard k builds a contiguous range of about 1/N of them (`shard_buckets`,
   `episode_day.built_buckets`: the lift of the day's steps and ends, of which it keeps its
   range's; then gate, build, tokenize, trust-weigh, embed per bucket). It stages the built rows
   (with their embedding and set of subjects) in `rows-<k>.parquet`, and the range's pair
   candidates (its partners so far and its hard negatives, `PARTNER` telling which) in
   `candidates-<k>.parquet`, whose footer also holds the range's counts (built, passed, triage
   verdicts, audit, below the trust floor, flagged steps: `EpisodeDay.bucket_counts`). A shard
   whose range is empty (fewer buckets than shards) stages nothing.
2. **The merge** (`merge_or_compute`, the `telemetry/episodes` step): when every shard with
   buckets is current, the ranges' counts and candidates fold into the day's in shard order
   (`EpisodeDay.absorb`) and the staged rows go through the unsharded step's day-wide part
   (`episode_day.finish_day`: novelty per set of subjects against the earlier days' index, the
   ordered write): the rows file is byte-identical to the unsharded step's, and so are the pairs
   and the metadata (tests/unit/telemetry/test_episode_shards.py). Otherwise (a shard missing,
   an input, the rules, the embedder or the bucket size changed since) the step builds the day
   itself, as with one shard. Either way it removes the staging folder
   `<lake>/_shards/telemetry/episodes/<day>`.

Every staged file's footer holds the fingerprint of what it was computed from
(`episodes_fingerprint`) and which shard of how many it is; a stale file is never merged. The
staged rows are the episodes output's rows before novelty (payload text as silver redacted it,
the pseudonymous `player_key` and the subject hash, no raw player id), with the pair candidates'
columns; they are removed by the merge and never logged nor put in metadata (counts only).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from upath import UPath

from distill_assets.defs.shards import shard_dir, split_sizes, staged_current, staged_footer
from distill_assets.defs.telemetry.episode_day import (
    DayInputs,
    EpisodeDay,
    bucket_bounds,
    bucket_count,
    build_episode_day,
    built_buckets,
    finish_day,
)
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.embed import Embedder
from distill_assets.lib.lake import (
    ROW_GROUP_SIZE,
    feed_fingerprint,
    local_file,
    parquet_key_values,
    parquet_writer_atomic,
)

SOURCE = "telemetry"
TABLE = "episodes"
# the footer key of every staged file: its fingerprint and which shard it is (JSON)
STAGED_KEY = b"distill.episode_shard"
# the footer key of a shard's candidates file: its range's counts (`EpisodeDay.bucket_counts`)
COUNTS_KEY = b"distill.episode_shard_counts"
# the candidates file's column telling a partner (True) from a hard negative (False)
PARTNER = "_partner"


def episode_shard_dir(lake_root: str, day: str) -> UPath:
    """Return the staging folder of a day's episode shards (rows and pair candidates)."""
    return shard_dir(lake_root, SOURCE, TABLE, day)


def episodes_fingerprint(
    inputs: list[UPath], decisions: Path, *, rules: str, embedder: str, bucket_episodes: int
) -> str:
    """Return the fingerprint of what a day's staged episode shards are computed from.

    The day's input files that exist among `inputs` (`feed_fingerprint`: names, sizes, footers;
    silver, triage, competence, the bronze the pair exclusions read), the Witness `decisions`
    file's content, the rules' version, the embedder's name and the bucket size.
    """
    files = feed_fingerprint([path for path in inputs if path.exists()])
    decided = hashlib.sha256(decisions.read_bytes()).hexdigest() if decisions.exists() else ""
    parts = f"{files} {decided} {rules} {embedder} {bucket_episodes}"
    return hashlib.sha256(parts.encode()).hexdigest()


@dataclass(frozen=True)
class EpisodeStaging:
    """The staging folder of a day's episode shards, its inputs' fingerprint, the bucket size."""

    staging: UPath
    fingerprint: str
    bucket_episodes: int


def shard_buckets(bounds: pl.Series, shard: int, shards: int) -> range:
    """Return the contiguous range of the day's buckets (`bucket_bounds`) shard `shard` builds."""
    return split_sizes([1] * bucket_count(bounds), shards)[shard]


def _path(day: EpisodeStaging, name: str, shard: int) -> UPath:
    return day.staging / f"{name}-{shard}.parquet"


def _footer(day: EpisodeStaging, shard: int, shards: int) -> dict[bytes, bytes]:
    return staged_footer(STAGED_KEY, day.fingerprint, shard=shard, shards=shards)


def _current(path: UPath, day: EpisodeStaging, shard: int, shards: int) -> bool:
    """Return whether a staged file exists and is shard `shard` of `shards` for these inputs."""
    return staged_current(path, STAGED_KEY, day.fingerprint, shard=shard, shards=shards)


def _write_staged(frames: Iterable[pl.DataFrame], path: UPath, footer: dict[bytes, bytes]) -> int:
    """Write `frames` (at least one) to `path` atomically with `footer`; return the rows."""
    rows = 0
    writer = None
    with ExitStack() as stack:
        for frame in frames:
            if writer is None:
                schema = frame.to_arrow().schema.with_metadata(footer)
                writer = stack.enter_context(parquet_writer_atomic(path, schema))
            writer.write_table(frame.to_arrow().cast(schema), row_group_size=ROW_GROUP_SIZE)
            rows += frame.height
    return rows


@dataclass(frozen=True)
class ShardWrite:
    """What an episode shard step staged: its buckets (0: none, nothing staged) and rows."""

    buckets: int
    rows: int


def write_shard(
    day: EpisodeStaging, inputs: DayInputs, embedder: Embedder, *, shard: int, shards: int
) -> ShardWrite:
    """Build shard `shard` of `shards`' range of the day's buckets; stage its rows and candidates.

    The rows go to `rows-<shard>.parquet` a bucket at a time, as they are built; the range's
    pair candidates and counts to `candidates-<shard>.parquet` (see the module docstring).
    """
    bounds = bucket_bounds(inputs.classes, day.bucket_episodes)
    buckets = shard_buckets(bounds, shard, shards)
    if not buckets:
        return ShardWrite(0, 0)
    part = EpisodeDay()
    footer = _footer(day, shard, shards)
    folder = working_dir(f"{SOURCE}-{TABLE}-shard-{shard}")
    try:
        built = built_buckets(
            inputs, embedder, bounds=bounds, buckets=buckets, folder=folder, day=part
        )
        rows = _write_staged(built, _path(day, "rows", shard), footer)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    candidates = pl.concat(
        [
            pl.concat(part.negatives).with_columns(pl.lit(False).alias(PARTNER)),
            part.partners.with_columns(pl.lit(True).alias(PARTNER)),
        ]
    )
    counts = json.dumps(part.bucket_counts(), sort_keys=True).encode()
    _write_staged([candidates], _path(day, "candidates", shard), {**footer, COUNTS_KEY: counts})
    return ShardWrite(len(buckets), rows)


def _staged_part(day: EpisodeStaging, shard: int) -> EpisodeDay:
    """Return shard `shard`'s range of buckets as `EpisodeDay` counts and pair candidates."""
    path = _path(day, "candidates", shard)
    counts = json.loads(parquet_key_values(path)[COUNTS_KEY])
    with local_file(path) as local:
        candidates = pl.read_parquet(local)
    partner = pl.col(PARTNER)
    return EpisodeDay.with_bucket_counts(
        counts,
        partners=candidates.filter(partner).drop(PARTNER),
        negatives=candidates.filter(~partner).drop(PARTNER),
    )


def check_shards(day: EpisodeStaging, bounds: pl.Series, shards: int) -> str | None:
    """Return why the staged shards cannot be merged into the day's episodes, or None.

    Every shard with buckets must have its rows and candidates staged for these inputs.
    """
    for shard in range(shards):
        if shard_buckets(bounds, shard, shards) and not all(
            _current(_path(day, name, shard), day, shard, shards) for name in ("rows", "candidates")
        ):
            return f"shard {shard} is not staged for these inputs"
    return None


@dataclass(frozen=True)
class MergedEpisodes:
    """The day's episodes after the merge: what was made, the shards merged (0: none), why not."""

    day: EpisodeDay
    merged: int
    not_merged: str | None


def merge_or_compute(
    day: EpisodeStaging, inputs: DayInputs, embedder: Embedder, out: Path, shards: int
) -> MergedEpisodes:
    """Write the day's episode rows to `out` from its `shards` staged shards, or build them.

    Shards that pass `check_shards` fold into the day in order and their rows go through
    `finish_day` (the unsharded step's day-wide part: the same bytes); otherwise the day is
    built here (`build_episode_day`). The staging folder is removed in every case.
    """
    try:
        bounds = bucket_bounds(inputs.classes, day.bucket_episodes)
        reason = check_shards(day, bounds, shards)
        if reason is not None:
            built = build_episode_day(inputs, embedder, out, day.bucket_episodes)
            return MergedEpisodes(built, 0, reason)
        merged = EpisodeDay()
        with ExitStack() as stack:
            files = []
            for shard in range(shards):
                if shard_buckets(bounds, shard, shards):
                    merged.absorb(_staged_part(day, shard))
                    files.append(stack.enter_context(local_file(_path(day, "rows", shard))))
            finish_day(files, bounds, inputs, merged, out)
        return MergedEpisodes(merged, shards, None)
    finally:
        if day.staging.exists():
            day.staging.fs.rm(day.staging.path, recursive=True)
