"""Competence filter (docs/sources/telemetry.md#competence; rules: `rules/telemetry_competence.py`).

`competence` classifies every episode `expert | hard_negative | ordinary | noise` with a reason;
`hard_negative_pairs` pairs each hard negative with the best `MAX_PARTNERS` successful episodes of
the same task (highest score, then smallest episode_id) as `dpo` feed rows: more than one, so a
partner later excluded (consent, deletion) at release does not lose the hard negative.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.telemetry import privacy
from distill_assets.defs.telemetry.episodes import episode_text
from distill_assets.lib.embed import Embedder
from distill_assets.lib.hashing import with_stable_id
from distill_assets.rules import telemetry_competence as rules

SOURCE = "telemetry"
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
