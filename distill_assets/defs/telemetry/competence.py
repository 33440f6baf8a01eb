"""Competence filter (docs/sources/telemetry.md#competence; rules: `rules/telemetry_competence.py`).

`competence` classifies every episode `expert | hard_negative | ordinary | noise` with a reason;
`write_competence` classifies a partition's episodes a bucket at a time (a stable hash of the
episode id) from the few step fields the score reads, so memory holds one bucket, not the day;
`hard_negative_pairs` pairs each hard negative with the best `MAX_PARTNERS` successful episodes of
the same task (highest score, then smallest episode_id) as `dpo` feed rows: more than one, so a
partner later excluded (consent, deletion) at release does not lose the hard negative.
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.telemetry import privacy
from distill_assets.defs.telemetry.episodes import END_FIELDS, episode_text, first_ends
from distill_assets.defs.telemetry.events import payload_field_batches
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.embed import Embedder
from distill_assets.lib.hashing import with_stable_bucket, with_stable_id
from distill_assets.lib.lake import ROW_GROUP_SIZE, write_frames
from distill_assets.lib.sql import connect
from distill_assets.rules import telemetry_competence as rules

SOURCE = "telemetry"
# the trajectory-step fields the score reads (`build_episodes` lifts these and more)
SCORE_STEP_FIELDS: dict[str, pl.DataType] = {
    "episode_id": pl.String(),
    "step_index": pl.Int64(),
    "observation.natural_language_instruction": pl.String(),
    "action.action_type": pl.String(),
    "reward": pl.Float64(),
}
# trajectory steps per episode bucket (about): `write_competence` classifies a bucket at a time
BUCKET_STEPS = 100_000
BUCKET_SALT = "competence-bucket:"
COMPETENCE_SCHEMA = pl.Schema(
    {
        "episode_id": pl.String(),
        "player_key": pl.String(),
        "task_description": pl.String(),
        "success": pl.Boolean(),
        "ended": pl.Boolean(),
        "score": pl.Float64(),
        "score_source": pl.String(),
        "peak_intermediate_reward": pl.Float64(),
        "competence": pl.String(),
        "reason": pl.String(),
    }
)


def similarity_scores(episodes: pl.DataFrame, embedder: Embedder) -> pl.Series:
    """Return the cosine of each episode's text to its task description (clipped to [0, 1])."""
    if episodes.is_empty():
        return pl.Series("similarity", [], pl.Float64)
    left = embedder.embed(episode_text(episodes))
    right = embedder.embed(episodes.get_column("task_description"))
    cosine = np.clip(np.einsum("ij,ij->i", left, right), 0.0, 1.0)
    return pl.Series("similarity", cosine, pl.Float64)


def competence(episodes: pl.DataFrame, embedder: Embedder) -> pl.DataFrame:
    """Classify every episode (`COMPETENCE_SCHEMA`), in episode_id order."""
    n = pl.col("steps").list.len()
    early = (n.cast(pl.Float64) * (1.0 - rules.LATE_FAILURE_FRACTION)).ceil().cast(pl.Int64)
    peak = (
        pl.col("steps")
        .list.eval(pl.element().struct.field("reward"))
        .list.head(early)
        .list.max()
        .fill_null(0.0)
    )
    score = pl.coalesce("competence_score", "similarity").clip(0.0, 1.0).round(rules.SCORE_DECIMALS)
    hard = (
        pl.col("ended")
        & ~pl.col("success")
        & (pl.col("score") <= rules.HARD_NEGATIVE_AT_MOST)
        & (pl.col("peak_intermediate_reward") > rules.HIGH_INTERMEDIATE_FRACTION * rules.REWARD_MAX)
    )
    label = (
        pl.when(pl.col("score") > rules.EXPERT_ABOVE)
        .then(pl.lit("expert"))
        .when(pl.col("score") < rules.NOISE_BELOW)
        .then(pl.lit("noise"))
        .when(hard)
        .then(pl.lit("hard_negative"))
        .otherwise(pl.lit("ordinary"))
    )
    return (
        episodes.with_columns(similarity_scores(episodes, embedder))
        .with_columns(
            score.alias("score"),
            pl.when(pl.col("competence_score").is_not_null())
            .then(pl.lit("game"))
            .otherwise(pl.lit("embedder"))
            .alias("score_source"),
            peak.alias("peak_intermediate_reward"),
        )
        .with_columns(label.alias("competence"))
        .with_columns(pl.col("competence").replace_strict(rules.REASONS).alias("reason"))
        .select(pl.col(name).cast(dtype) for name, dtype in COMPETENCE_SCHEMA.items())
        .sort("episode_id")
    )


def score_episodes(steps: pl.DataFrame, ends: pl.DataFrame) -> pl.DataFrame:
    """Return the episodes of `steps` with the columns `competence` reads, as `build_episodes` has.

    `steps`: trajectory steps (event_id, player_key, event_time and `SCORE_STEP_FIELDS`, episode_id
    and step_index not null); `ends`: episode ends (event_id, event_time and `END_FIELDS`,
    episode_id not null). Each episode's steps and ends must all be given. An episode's steps keep
    only what the score reads: the action type, the instruction and the reward.
    """
    first_end = first_ends(ends.lazy()).with_columns(pl.lit(True).alias("ended"))
    instruction = pl.col("observation_natural_language_instruction")
    step = pl.struct(
        pl.struct(instruction.fill_null("").alias("natural_language_instruction")).alias(
            "observation"
        ),
        pl.struct(pl.col("action_action_type").fill_null("").alias("action_type")).alias("action"),
        pl.col("reward").fill_null(0.0),
    )
    episodes = (
        steps.sort("episode_id", "step_index", "event_time", "event_id")
        .group_by("episode_id", maintain_order=True)
        .agg(
            pl.col("player_key").first(),
            instruction.drop_nulls().first().alias("first_goal"),
            step.alias("steps"),
        )
    )
    return episodes.join(first_end, on="episode_id", how="left").with_columns(
        pl.col("ended").fill_null(False),
        pl.col("success").fill_null(False),
        pl.coalesce("task_description", "first_goal", pl.lit("")).alias("task_description"),
    )


def write_competence(events: pl.LazyFrame, embedder: Embedder, target: Path) -> int:
    """Write `competence(build_episodes(events), embedder)` to the local Parquet file `target`.

    The same rows in the same order (episode_id), without holding the day: the steps' score
    fields and the episode ends are lifted from silver `events` a batch at a time into scratch
    files with a bucket (a stable hash of the episode id; about `BUCKET_STEPS` steps a bucket),
    DuckDB splits them by bucket, each bucket is classified alone (an episode's score reads its
    own steps and end only), and DuckDB sorts the buckets' rows, spilling past its memory limit.
    Returns the rows written.
    """
    events = events.select("event_id", "event_type", "player_key", "event_time", "payload")
    is_step = pl.col("event_type") == "trajectory_step"
    steps = events.filter(is_step).select(pl.len()).collect().item()
    buckets = max(1, -(-steps // BUCKET_STEPS))
    folder = working_dir(f"{SOURCE}-competence")
    con = connect()
    try:
        # a partitioned write buffers up to this many rows per bucket (DuckDB's default: 524,288)
        con.execute(f"SET partitioned_write_flush_threshold = {ROW_GROUP_SIZE}")
        for name, event_type, fields, keep in (
            ("steps", "trajectory_step", SCORE_STEP_FIELDS, pl.col("step_index").is_not_null()),
            ("ends", "episode_end", END_FIELDS, pl.lit(True)),
        ):
            lifted = folder / f"{name}.parquet"
            write_frames(
                (
                    with_stable_bucket(
                        batch.filter(pl.col("episode_id").is_not_null() & keep),
                        "episode_id",
                        BUCKET_SALT,
                        buckets,
                    )
                    for batch in payload_field_batches(events, event_type, fields)
                ),
                lifted,
            )
            con.execute(
                f"COPY (SELECT * FROM read_parquet('{lifted}')) TO '{folder / name}'"
                f" (FORMAT parquet, PARTITION_BY (bucket), ROW_GROUP_SIZE {ROW_GROUP_SIZE})"
            )
        no_ends = pl.DataFrame(schema=pl.read_parquet_schema(folder / "ends.parquet"))
        classes = folder / "classes.parquet"
        write_frames(_bucket_classes(folder, buckets, embedder, no_ends.drop("bucket")), classes)
        ordered = con.sql(f"SELECT * FROM read_parquet('{classes}') ORDER BY episode_id")
        batches = ordered.fetch_record_batch(BUCKET_STEPS)
        return write_frames(
            itertools.chain(
                [pl.DataFrame(schema=COMPETENCE_SCHEMA)], (pl.from_arrow(b) for b in batches)
            ),
            target,
        )
    finally:
        con.close()
        shutil.rmtree(folder, ignore_errors=True)


def _bucket_classes(
    folder: Path, buckets: int, embedder: Embedder, no_ends: pl.DataFrame
) -> Iterator[pl.DataFrame]:
    """Yield `competence` of each bucket's episodes (the split of `write_competence`) in turn."""
    yield pl.DataFrame(schema=COMPETENCE_SCHEMA)
    for bucket in range(buckets):
        steps = folder / "steps" / f"bucket={bucket}"
        if not steps.is_dir():
            continue
        ends_dir = folder / "ends" / f"bucket={bucket}"
        ends = (
            pl.read_parquet(f"{ends_dir}/*.parquet", hive_partitioning=False)
            if ends_dir.is_dir()
            else no_ends
        )
        episodes = score_episodes(
            pl.read_parquet(f"{steps}/*.parquet", hive_partitioning=False), ends
        )
        yield competence(episodes, embedder)


def action_text(steps: pl.Expr) -> pl.Expr:
    """Render an episode's actions as text, one line per step: `<action_type> <details JSON>`."""
    action = pl.element().struct.field("action")
    return steps.list.eval(
        action.struct.field("action_type") + pl.lit(" ") + action.struct.field("action_details")
    ).list.join("\n")


def hard_negative_pairs(
    episodes: pl.DataFrame, classes: pl.DataFrame, excluded: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Return `dpo` feed rows: a successful episode (chosen) vs a hard negative of the same task.

    The successful partners are the MAX_PARTNERS published (not noise) successful episodes of the
    same task with the highest score, then the smallest episode_id; the prompt is the task
    description. Players in `excluded` (player_key: excluded from dpo when the pairs are built)
    take no part, so they do not displace a partner.
    """
    return pairs_of_candidates(pair_candidates(episodes, classes, excluded))


def pair_candidates(
    episodes: pl.DataFrame, classes: pl.DataFrame, excluded: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Return the episodes `hard_negative_pairs` may pair, with the columns a pair takes.

    Per episode (no other episode is read): its class and score, actions text and return; only
    successes not judged noise and hard negatives. The candidates of a set of episodes are the
    concatenation of those of its parts.
    """
    if excluded is not None:
        episodes = episodes.join(excluded, on="player_key", how="anti")
    return (
        episodes.join(
            classes.select("episode_id", "score", "competence"), on="episode_id", how="inner"
        )
        .filter(
            (pl.col("success") & (pl.col("competence") != "noise"))
            | (pl.col("competence") == "hard_negative")
        )
        .select(
            "episode_id",
            "player_key",
            "task_description",
            "success",
            "event_time",
            "score",
            "competence",
            action_text(pl.col("steps")).alias("actions"),
            pl.col("steps").list.eval(pl.element().struct.field("reward")).list.sum().alias("ret"),
        )
    )


def partners(judged: pl.DataFrame) -> pl.DataFrame:
    """Return the successful partners among `pair_candidates` rows: MAX_PARTNERS per task.

    The best by score, then the smallest episode_id, so the partners of a set of candidates are
    the partners of its parts' partners.
    """
    return (
        judged.filter(pl.col("success") & (pl.col("competence") != "noise"))
        .sort(["score", "episode_id"], descending=[True, False])
        .filter(pl.int_range(pl.len()).over("task_description") < rules.MAX_PARTNERS)
    )


def pairs_of_candidates(judged: pl.DataFrame) -> pl.DataFrame:
    """Pair `pair_candidates` rows of a whole partition (`hard_negative_pairs`)."""
    successes = partners(judged)
    negatives = judged.filter(pl.col("competence") == "hard_negative")
    pairs = negatives.join(successes, on="task_description", how="inner", suffix="_chosen")
    metadata = pl.struct(
        pl.lit("hard_negative").alias("pair_kind"),
        pl.lit("Success").alias("chosen_policy_outcome"),
        pl.lit("Failure").alias("rejected_policy_outcome"),
        (pl.col("ret_chosen") - pl.col("ret")).round(4).alias("reward_diff"),
        pl.col("player_key_chosen").alias("user_id_chosen"),
        pl.col("player_key").alias("user_id_rejected"),
        pl.lit(None, dtype=pl.String).alias("game_state_hash"),
        pl.lit(None, dtype=pl.Float64).alias("ambiguity_score"),
        pl.lit(None, dtype=pl.String).alias("karma_impact"),
        pl.col("episode_id_chosen").alias("chosen_episode_id"),
        pl.col("episode_id").alias("rejected_episode_id"),
        pl.col("score_chosen").alias("chosen_competence"),
        pl.col("score").alias("rejected_competence"),
    ).struct.json_encode()
    rows = pairs.select(
        pl.lit(SOURCE).alias("source"),
        ("episodes:" + pl.col("episode_id_chosen") + "+" + pl.col("episode_id")).alias(
            "source_ref"
        ),
        pl.col("score_chosen").alias("quality_score"),
        metadata.alias("metadata"),
        pl.col("task_description").alias("prompt"),
        pl.col("actions_chosen").alias("chosen"),
        pl.col("actions").alias("rejected"),
        pl.col("task_description").alias("split_group"),
        pl.max_horizontal("event_time", "event_time_chosen").alias("event_time"),
        pl.col("player_key_chosen").alias("player_key_chosen"),
        pl.col("player_key").alias("player_key_rejected"),
    )
    rows = with_stable_id(rows, ["source", "source_ref", "prompt", "chosen", "rejected"])
    return pair_subjects(rows, feed_schema("dpo")).sort("source_ref")


def pair_subjects(rows: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
    """Shape pair rows as feed rows with a pair subject `dpo:<chosen key>+<rejected key>`.

    `telemetry/pair_exclusions` lists a pair subject when either player is excluded from dpo.
    """
    return rows.select(
        *(pl.col(name).cast(dtype) for name, dtype in schema.items()),
        privacy.subject(
            "dpo", pl.col("player_key_chosen") + "+" + pl.col("player_key_rejected")
        ).alias(SUBJECT_COLUMN),
        "player_key_chosen",
        "player_key_rejected",
    )
