"""A partition's `rlds` episodes and hard-negative pair candidates, built in buckets of episodes.

See docs/sources/telemetry.md#episodes and docs/performance.md.

Memory is bounded by a bucket, not by the day. The day's trajectory steps and episode ends are
lifted a batch at a time (one payload parse for both) into one scratch Parquet file per bucket. A
bucket is a contiguous range of episode ids: the bounds are every `bucket_episodes`-th id of the
partition's competence rows (one per built episode), so an episode is never split and the
buckets in order are the episodes in the order of the published rows (sorted by episode_id):
assembling the partition is a concatenation, no sort. Steps without an episode id go to the
bucket of the empty id (one bucket, so triage gates them as one product, as a whole-day build).

Each bucket is gated (its steps' triage rows only), built, tokenized, weighed by trust (its
players' walk) and embedded alone (`_build_bucket`). Novelty compares a row with its subject's
(player's) rows, so it runs after every bucket is built, on the keys and vectors of the rows of a
set of whole subjects at a time (a stable hash of the subject), in the day's row order; the built
rows then take their scores and go to the output file a row group at a time. The hard-negative
pairs need a task's best successes over the day: a bucket adds its candidates to the partners so
far (`competence.partners`) and its hard negatives, which the pairs are made of at the end.

The bucket loop (`built_buckets`, over any contiguous range of the buckets) and the day-wide part
after it (`finish_day`: novelty, the ordered write) are separate, so that a sharded day
(`episode_shards.py`) builds ranges of buckets in other steps and its merge runs the same
`finish_day` over their rows; a range's counts and pair candidates fold into the day's
(`EpisodeDay.absorb`) as a bucket's do.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.telemetry import privacy, witness
from distill_assets.defs.telemetry.competence import pair_candidates, partners
from distill_assets.defs.telemetry.episodes import (
    END_FIELDS,
    STEP_FIELDS,
    episodes_of,
    first_ends,
    ordered_steps,
    rlds_rows,
)
from distill_assets.defs.telemetry.events import payload_field_batches
from distill_assets.defs.telemetry.novelty import (
    EMBEDDING,
    best_similarity,
    published_index,
    scored,
    with_embedding,
)
from distill_assets.defs.telemetry.taxonomy import class_counts, with_value_class
from distill_assets.defs.telemetry.triage import audit_false_negatives, gate, passed
from distill_assets.defs.telemetry.trust import product_flags, trust_weighted
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.embed import Embedder
from distill_assets.lib.hashing import with_stable_bucket
from distill_assets.lib.lake import ROW_GROUP_SIZE, write_frames_as_one
from distill_assets.lib.metadata import reason_counts
from distill_assets.rules.telemetry_triage import AUDIT_VALUABLE_CLASSES

# episodes per bucket (about): a bucket's steps, tokens and rows are what is in memory at once
BUCKET_EPISODES = 25_000
# episode buckets per set of subjects scored for novelty at once (its keys and vectors only)
BUCKETS_PER_SUBJECT_SET = 4
_SUBJECT_SALT = "episodes-subject:"
_EVENT_COLUMNS = ("event_id", "event_type", "player_key", "session_id", "event_time")
_LIFTED = {**STEP_FIELDS, **END_FIELDS}
_POSITION = "_position"
SUBJECT_BUCKET = "_subject_bucket"
# the metadata preview's rows and columns
HEAD_ROWS = 5
PREVIEW_COLUMNS = ("id", "episode_id", "task_description", "success")


@dataclass
class EpisodeDay:
    """What `build_episode_day` made: the rows file, the pair candidates and the day's counts."""

    partners: pl.DataFrame | None = None
    negatives: list[pl.DataFrame] = field(default_factory=list)
    built: int = 0
    passed: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    audit: dict[str, dict[str, int]] = field(default_factory=dict)
    below_floor: int = 0
    published: int = 0
    steps: int = 0
    flagged_steps: int = 0
    index_rows: int = 0
    duplicates: int = 0
    scores: list[pl.Series] = field(default_factory=list)
    value_classes: dict[str, int] = field(default_factory=dict)
    head: list[tuple] = field(default_factory=list)

    def absorb(self, part: EpisodeDay) -> None:
        """Add the bucket counts and pair candidates of a later range of the day's buckets."""
        self.built += part.built
        self.passed += part.passed
        _add_counts(self.verdicts, part.verdicts)
        _add_audit(self.audit, part.audit)
        self.below_floor += part.below_floor
        self.flagged_steps += part.flagged_steps
        self.add_partners(part.partners)
        self.negatives += part.negatives

    def bucket_counts(self) -> dict[str, object]:
        """Return the counts the bucket loop made (JSON), as `with_bucket_counts` reads them."""
        return {
            "built": self.built,
            "passed": self.passed,
            "verdicts": self.verdicts,
            "audit": self.audit,
            "below_floor": self.below_floor,
            "flagged_steps": self.flagged_steps,
        }

    @classmethod
    def with_bucket_counts(
        cls, counts: dict, partners: pl.DataFrame, negatives: pl.DataFrame
    ) -> EpisodeDay:
        """Return the day of a range of buckets from its `bucket_counts` and pair candidates."""
        return cls(partners=partners, negatives=[negatives], **counts)

    def add_partners(self, found: pl.DataFrame | None) -> None:
        """Keep the successful partners among the partners so far and `found` candidates."""
        # the partners of a set of candidates are the partners of its parts' partners
        if found is not None:
            both = found if self.partners is None else pl.concat([self.partners, found])
            self.partners = partners(both)

    def candidates(self) -> pl.DataFrame:
        """Return the pair candidates `competence.pairs_of_candidates` makes the day's pairs of."""
        return pl.concat([*self.negatives, self.partners])

    def preview_rows(self) -> pl.DataFrame:
        """Return the first published rows' `PREVIEW_COLUMNS` (for the metadata preview)."""
        schema = {name: feed_schema("rlds")[name] for name in PREVIEW_COLUMNS}
        return pl.DataFrame(self.head, schema=schema, orient="row")


@dataclass(frozen=True)
class DayInputs:
    """The partition's inputs a bucket reads (`triage`, `classes` lazily, by episode range)."""

    events: pl.LazyFrame
    triage: pl.LazyFrame
    classes: pl.LazyFrame
    walk: pl.DataFrame
    excluded: pl.DataFrame
    decisions: pl.DataFrame
    lake_root: str
    partition: str
    table: str


def bucket_bounds(classes: pl.LazyFrame, bucket_episodes: int) -> pl.Series:
    """Return the lowest episode id of every bucket but the first (sorted, byte order)."""
    ids = classes.select("episode_id").drop_nulls().collect().get_column("episode_id").sort()
    return ids.gather_every(bucket_episodes, offset=bucket_episodes)


def _bucket_of(ids: pl.Series, bounds: pl.Series) -> pl.Series:
    """Return the bucket of each episode id: how many bounds are <= it (null as the empty id)."""
    return bounds.search_sorted(ids.fill_null(""), side="right").cast(pl.Int64)


def _in_bucket(index: int, bounds: pl.Series) -> pl.Expr:
    """Return whether `episode_id` is in bucket `index` (the inverse of `_bucket_of`)."""
    inside = pl.lit(True)
    if index > 0:
        inside &= pl.col("episode_id") >= bounds[index - 1]
    if index < bounds.len():
        inside &= pl.col("episode_id") < bounds[index]
    return inside


def bucket_count(bounds: pl.Series) -> int:
    """Return how many buckets `bounds` (`bucket_bounds`) cut the day into."""
    return bounds.len() + 1


def _scatter(events: pl.LazyFrame, bounds: pl.Series, buckets: range, folder: Path) -> list[Path]:
    """Lift the steps and ends of `events` into one Parquet file per bucket of `buckets`.

    Returns the files, in bucket order; the steps and ends of other buckets are dropped.
    """
    columns = (*_EVENT_COLUMNS, "payload", "flag_checks")
    batches = payload_field_batches(
        events.select(columns), ("trajectory_step", "episode_end"), _LIFTED
    )
    paths = [folder / f"lifted-{index}.parquet" for index in buckets]
    writers: list[pq.ParquetWriter] = []
    try:
        for batch in batches:
            if not writers:
                schema = batch.to_arrow().schema
                writers = [pq.ParquetWriter(path, schema) for path in paths]
            index = _bucket_of(batch.get_column("episode_id"), bounds) - buckets.start
            kept = batch.with_columns(index.alias("_b")).filter(
                pl.col("_b").is_between(0, len(buckets) - 1)
            )
            for (part_index,), part in kept.partition_by("_b", as_dict=True).items():
                writers[part_index].write_table(part.drop("_b").to_arrow().cast(schema))
    finally:
        for writer in writers:
            writer.close()
    return paths


def _add_counts(total: dict[str, int], part: dict[str, int]) -> None:
    for name, count in part.items():
        total[name] = total.get(name, 0) + count


def _add_audit(total: dict[str, dict[str, int]], part: dict[str, dict[str, float | int]]) -> None:
    for kind, found in part.items():
        counts = total.setdefault(kind, {"audited": 0, "false_negatives": 0})
        counts["audited"] += int(found["audited"])
        counts["false_negatives"] += int(found["false_negatives"])


def audit_rates(audit: dict[str, dict[str, int]]) -> dict[str, dict[str, float | int]]:
    """Return `audit_false_negatives`' answer from counts summed over buckets (kinds sorted)."""
    return {
        kind: {
            **audit[kind],
            "rate": round(audit[kind]["false_negatives"] / audit[kind]["audited"], 4),
        }
        for kind in sorted(audit)
    }


def _build_bucket(
    path: Path,
    *,
    index: int,
    bounds: pl.Series,
    inputs: DayInputs,
    embedder: Embedder,
    day: EpisodeDay,
) -> pl.DataFrame:
    """Gate, build and weigh bucket `index`'s episodes; return its rows (with `embedding`)."""
    lifted = pl.read_parquet(path)
    steps = lifted.filter(pl.col("event_type") == "trajectory_step")
    keys = steps.select("event_id", "episode_id")
    # the triage rows of the bucket's steps only: the gate and the audit join no other row
    triage = (
        inputs.triage.filter(pl.col("event_id").is_in(keys.get_column("event_id").implode()))
        .collect()
        .lazy()
    )
    verdicts = gate(keys.lazy(), triage, "episode_id")
    classes = inputs.classes.filter(_in_bucket(index, bounds)).collect()
    valuable = classes.filter(pl.col("competence").is_in(AUDIT_VALUABLE_CLASSES))
    _add_audit(
        day.audit, audit_false_negatives(keys.lazy(), triage, verdicts, valuable, "episode_id")
    )
    built = episodes_of(
        ordered_steps(
            steps.select(*_EVENT_COLUMNS, *(n.replace(".", "_") for n in STEP_FIELDS)).lazy()
        ),
        first_ends(
            lifted.filter(pl.col("event_type") == "episode_end")
            .select(*_EVENT_COLUMNS, *(n.replace(".", "_") for n in END_FIELDS))
            .lazy()
        ),
    )
    flags = product_flags(
        steps.select("episode_id", "flag_checks").lazy(), "episode_id", "episode:"
    )
    del lifted, steps
    episodes = passed(built, verdicts, "episode_id")
    day.built += built.height
    day.passed += episodes.height
    _add_counts(day.verdicts, reason_counts(verdicts, "triage"))
    day.flagged_steps += int(episodes.get_column("flagged_steps").sum())
    found = pair_candidates(episodes, classes, inputs.excluded)
    # the partners so far and every hard negative: what the day's pairs are made of
    day.add_partners(found)
    day.negatives.append(found.filter(pl.col("competence") == "hard_negative"))
    rows = rlds_rows(episodes, classes).select(
        *(pl.col(name).cast(dtype) for name, dtype in feed_schema("rlds").items()),
        privacy.subject("rlds", pl.col("player_key")).alias(SUBJECT_COLUMN),
        "player_key",
    )
    # a row's trust is its player's walk alone: the bucket's players' signals are all it reads
    players = rows.get_column("player_key").unique().implode()
    walk = inputs.walk.filter(pl.col("player_key").is_in(players))
    rows, below_floor = trust_weighted(rows, walk, flags)
    day.below_floor += below_floor
    rows = witness.with_validation_records(with_value_class(rows, inputs.table), inputs.decisions)
    return with_embedding(rows, "rlds", embedder)


def _subject_scores(
    paths: Sequence[Path], buckets: int, inputs: DayInputs, day: EpisodeDay
) -> np.ndarray:
    """Return every built row's best similarity (`novelty.best_similarity`), in the day's order.

    The rows of `buckets` sets of whole subjects at a time: their keys and vectors only.
    """
    scan = pl.concat([pl.scan_parquet(path) for path in paths]).with_row_index(_POSITION)
    total = scan.select(pl.len()).collect().item()
    best = np.zeros(total, dtype=np.float64)
    for index in range(buckets):
        rows = (
            scan.filter(pl.col(SUBJECT_BUCKET) == index)
            .select(_POSITION, SUBJECT_COLUMN, EMBEDDING)
            .collect()
        )
        if rows.is_empty():
            continue
        found = published_index(
            inputs.lake_root, inputs.table, inputs.partition, rows.get_column(SUBJECT_COLUMN)
        )
        day.index_rows += found.height
        best[rows.get_column(_POSITION).to_numpy()] = best_similarity(rows, found)
    return best


def _published(paths: Sequence[Path], best: np.ndarray, day: EpisodeDay) -> Iterator[pl.DataFrame]:
    """Yield the built rows that are no near-duplicate, in order, `ROW_GROUP_SIZE` at a time."""
    position = 0
    for path in paths:
        with pq.ParquetFile(path) as built:
            for batch in built.iter_batches(batch_size=ROW_GROUP_SIZE):
                rows = pl.from_arrow(batch).drop(SUBJECT_BUCKET)
                yield _scored(rows, best[position : position + rows.height], day)
                position += rows.height
    if not position:
        rows = pl.read_parquet(paths[0], n_rows=0).drop(SUBJECT_BUCKET)
        yield _scored(rows, best[:0], day)


def _scored(rows: pl.DataFrame, best: np.ndarray, day: EpisodeDay) -> pl.DataFrame:
    """Return `rows` but near-duplicates, novelty noted (`novelty.scored`); count them in `day`."""
    result = scored(rows, best)
    kept = result.kept
    day.duplicates += result.duplicates
    day.published += kept.height
    day.steps += int(kept.get_column("steps").list.len().sum())
    day.scores.append(
        kept.get_column("metadata").str.json_path_match("$.novelty_score").cast(pl.Float64)
    )
    for name, count in class_counts(kept).items():
        day.value_classes[name] = day.value_classes.get(name, 0) + count
    # copied out of the rows, so that no buffer of theirs outlives them
    day.head += kept.select(PREVIEW_COLUMNS).head(HEAD_ROWS - len(day.head)).rows()
    return kept


def subject_sets(bounds: pl.Series) -> int:
    """Return how many sets of whole subjects the day's rows are scored for novelty in."""
    return -(-bucket_count(bounds) // BUCKETS_PER_SUBJECT_SET)


def built_buckets(
    inputs: DayInputs,
    embedder: Embedder,
    *,
    bounds: pl.Series,
    buckets: range,
    folder: Path,
    day: EpisodeDay,
) -> Iterator[pl.DataFrame]:
    """Yield the rows of each bucket of `buckets` in order, built (`_build_bucket`) into `day`.

    The steps and ends of the range are lifted into `folder` first (`_scatter`); a row carries
    the set of subjects it is scored for novelty with (`SUBJECT_BUCKET`, `subject_sets`), which
    depends on the day's buckets alone, not on the range.
    """
    lifted = _scatter(inputs.events, bounds, buckets, folder)
    sets = subject_sets(bounds)
    for index, path in zip(buckets, lifted, strict=True):
        rows = _build_bucket(
            path, index=index, bounds=bounds, inputs=inputs, embedder=embedder, day=day
        )
        path.unlink()
        yield with_stable_bucket(rows, SUBJECT_COLUMN, _SUBJECT_SALT, sets, SUBJECT_BUCKET)


def finish_day(
    built: Sequence[Path], bounds: pl.Series, inputs: DayInputs, day: EpisodeDay, out: Path
) -> None:
    """Score the day's built rows for novelty and write the kept ones to `out`, in order.

    `built`: local Parquet files holding every bucket's rows (`built_buckets`) in bucket order,
    however they are cut into files (at least one file).
    """
    best = _subject_scores(built, subject_sets(bounds), inputs, day)
    write_frames_as_one(_published(built, best, day), out)


def build_episode_day(
    inputs: DayInputs, embedder: Embedder, out: Path, bucket_episodes: int = BUCKET_EPISODES
) -> EpisodeDay:
    """Write the partition's `rlds` rows to `out` (Parquet) in buckets; return what was made.

    The rows are those of a whole-day build (`rlds_rows` of the episodes triage passed, weighed
    by trust, classed by value, near-duplicates of their subject dropped), in its order.
    """
    day = EpisodeDay()
    folder = working_dir("telemetry-episodes")
    try:
        bounds = bucket_bounds(inputs.classes, bucket_episodes)
        built = []
        buckets = range(bucket_count(bounds))
        for index, rows in zip(
            buckets,
            built_buckets(inputs, embedder, bounds=bounds, buckets=buckets, folder=folder, day=day),
            strict=True,
        ):
            built.append(folder / f"rows-{index}.parquet")
            rows.write_parquet(built[-1])
        finish_day(built, bounds, inputs, day, out)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return day
