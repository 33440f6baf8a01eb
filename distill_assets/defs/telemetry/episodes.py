"""Silver trajectory events → episodes in RLDS step layout. Pure Polars.

See docs/sources/telemetry.md#episodes.

Steps (`trajectory_step`) are grouped by `episode_id` within one ingest partition, ordered by
`step_index` (then event time and id), tokenized (`tokenize.py`) and nested as typed Arrow structs
(`contracts.published.RLDS_STEPS_DTYPE`); free-form maps (`game_state`, `skill_state`,
`action_details`) stay JSON object strings, and the numbers of `rules.action_tokens`'
GAME_STATE_KEYS / SKILL_STATE_KEYS are also typed fields (`game_state_values`,
`skill_state_values`; null when absent or not a number). An episode ended when an `episode_end`
for it is in the same partition; without one it was truncated (success false, task description =
the first step's instruction). Episodes are built from every accepted step: triage decides which
single events get expensive per-event processing, and dropping steps would break an episode's
step order.

`build_episodes` keeps one step per recorded action (what competence and the hard-negative pairs
score: its last step is marked `is_last`, and `is_terminal` with discount 0 when the episode
ended). The published `rlds` rows (`rlds_rows`) follow RLDS step semantics instead
(`rlds_steps`): the recorded actions plus a final observation-only step, as the
`rules.action_tokens` docstring describes.
"""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.published import RLDS_STEPS_DTYPE
from distill_assets.defs.telemetry.events import payload_fields
from distill_assets.defs.telemetry.tokenize import tokenize_steps
from distill_assets.lib.hashing import with_stable_id
from distill_assets.rules import action_tokens as rules

STEP_FIELDS: dict[str, pl.DataType] = {
    "episode_id": pl.String(),
    "step_index": pl.Int64(),
    "observation.game_state": pl.String(),
    "observation.inventory": pl.String(),
    "observation.skill_state": pl.String(),
    "observation.natural_language_instruction": pl.String(),
    "action.action_type": pl.String(),
    "action.action_details": pl.String(),
    "reward": pl.Float64(),
}
END_FIELDS: dict[str, pl.DataType] = {
    "episode_id": pl.String(),
    "success": pl.Boolean(),
    "task_description": pl.String(),
    "competence_score": pl.Float64(),
}
EPISODE_SCHEMA = pl.Schema(
    {
        "episode_id": pl.String(),
        "player_key": pl.String(),
        "session_id": pl.String(),
        "event_time": pl.Float64(),
        "ended": pl.Boolean(),
        "success": pl.Boolean(),
        "task_description": pl.String(),
        "competence_score": pl.Float64(),
        "total_steps": pl.Int64(),
        "flagged_steps": pl.Int64(),
        "steps": RLDS_STEPS_DTYPE,
    }
)


def episode_steps(events: pl.LazyFrame) -> pl.DataFrame:
    """Return the tokenized trajectory steps of silver `events`, in episode and step order."""
    return ordered_steps(payload_fields(events, "trajectory_step", STEP_FIELDS))


def ordered_steps(lifted: pl.LazyFrame) -> pl.DataFrame:
    """Tokenize lifted trajectory steps (`STEP_FIELDS` columns), in episode and step order."""
    steps = (
        lifted.filter(pl.col("episode_id").is_not_null() & pl.col("step_index").is_not_null())
        .sort("episode_id", "step_index", "event_time", "event_id")
        .collect()
    )
    return tokenize_steps(
        steps.rename(
            {"action_action_type": "action_type", "action_action_details": "action_details"}
        )
    )


def episode_ends(events: pl.LazyFrame) -> pl.DataFrame:
    """Return the first `episode_end` per episode_id (by event time, then id)."""
    return first_ends(payload_fields(events, "episode_end", END_FIELDS))


def first_ends(lifted: pl.LazyFrame) -> pl.DataFrame:
    """Return the first of lifted `episode_end` events (`END_FIELDS`) per episode_id."""
    return (
        lifted.filter(pl.col("episode_id").is_not_null())
        .sort("event_time", "event_id")
        .unique("episode_id", keep="first", maintain_order=True)
        .select("episode_id", "success", "task_description", "competence_score")
        .collect()
    )


def _numbers(column: str, keys: tuple[str, ...]) -> pl.Expr:
    """Return a struct of the JSON object `column`'s values at `keys` as floats (null if none)."""
    return pl.struct(
        pl.col(column).str.json_path_match(f"$.{key}").cast(pl.Float64, strict=False).alias(key)
        for key in keys
    )


def _step_struct() -> pl.Expr:
    observation = pl.struct(
        pl.col("observation_game_state").fill_null("{}").alias("game_state"),
        _numbers("observation_game_state", rules.GAME_STATE_KEYS).alias("game_state_values"),
        pl.col("observation_inventory")
        .str.json_decode(pl.List(pl.String))
        .fill_null(pl.lit([], dtype=pl.List(pl.String)))
        .alias("inventory"),
        pl.col("observation_skill_state").fill_null("{}").alias("skill_state"),
        _numbers("observation_skill_state", rules.SKILL_STATE_KEYS).alias("skill_state_values"),
        pl.col("observation_natural_language_instruction")
        .fill_null("")
        .alias("natural_language_instruction"),
    ).alias("observation")
    action = pl.struct(
        pl.col("action_type").fill_null(""),
        pl.col("action_details").fill_null("{}"),
        "action_tokens",
    ).alias("action")
    return pl.struct(
        "step_index",
        "is_first",
        "is_last",
        "is_terminal",
        observation,
        action,
        pl.col("reward").fill_null(0.0),
        "discount",
    )


def build_episodes(events: pl.LazyFrame) -> pl.DataFrame:
    """Return one row per episode of silver `events` (`EPISODE_SCHEMA`), sorted by episode_id.

    Only the event columns an episode keeps are read (silver's flags, order and refs are not).
    """
    events = events.select(
        "event_id", "event_type", "player_key", "session_id", "event_time", "payload"
    )
    return episodes_of(episode_steps(events), episode_ends(events))


def episodes_of(steps: pl.DataFrame, ends: pl.DataFrame) -> pl.DataFrame:
    """Return one row per episode (`EPISODE_SCHEMA`) of `ordered_steps` and `first_ends` rows.

    Every step and end of an episode must be among them (`build_episodes` passes the day's).
    """
    ends = ends.with_columns(pl.lit(True).alias("ended"))
    position = pl.int_range(pl.len()).over("episode_id")
    marked = steps.join(
        ends.select("episode_id", "ended"), on="episode_id", how="left"
    ).with_columns(
        (position == 0).alias("is_first"),
        (position == pl.len().over("episode_id") - 1).alias("is_last"),
    )
    marked = marked.with_columns(
        (pl.col("is_last") & pl.col("ended").fill_null(False)).alias("is_terminal")
    ).with_columns(
        pl.when("is_terminal").then(0.0).otherwise(rules.DISCOUNT).alias("discount"),
    )
    episodes = marked.group_by("episode_id", maintain_order=True).agg(
        pl.col("player_key").first(),
        pl.col("session_id").first(),
        pl.col("event_time").min(),
        pl.col("observation_natural_language_instruction").drop_nulls().first().alias("first_goal"),
        pl.len().cast(pl.Int64).alias("total_steps"),
        pl.col("action_flag").is_not_null().sum().cast(pl.Int64).alias("flagged_steps"),
        _step_struct().alias("steps"),
    )
    return (
        episodes.join(ends, on="episode_id", how="left")
        .with_columns(
            pl.col("ended").fill_null(False),
            pl.col("success").fill_null(False),
            pl.coalesce("task_description", "first_goal", pl.lit("")).alias("task_description"),
        )
        .select(pl.col(name).cast(dtype) for name, dtype in EPISODE_SCHEMA.items())
        .sort("episode_id")
    )


def episode_text(episodes: pl.DataFrame) -> pl.Series:
    """Return each episode's text for embedding: action types and instructions in step order."""
    step_text = (
        pl.element().struct.field("action").struct.field("action_type")
        + pl.lit(" ")
        + pl.element().struct.field("observation").struct.field("natural_language_instruction")
    )
    return episodes.select(
        pl.col("steps").list.eval(step_text).list.unique(maintain_order=True).list.join("\n")
    ).to_series()


def rlds_steps(episodes: pl.DataFrame) -> pl.Series:
    """Return each episode's `steps` in RLDS step semantics (`rules.action_tokens` docstring).

    `episodes`: episode_id (unique), ended, steps (one per recorded action, `build_episodes`).
    The recorded steps lose is_last/is_terminal; the last one's discount is 0 when the episode
    ended. A final step follows: the last observation again, step_index + 1, no action (empty
    type, "{}" details, PAD_TOKEN tokens), reward 0, discount 0, is_last, and is_terminal when
    the episode ended.
    """
    recorded = (
        episodes.select("episode_id", "ended", "steps")
        .with_row_index("episode_nr")
        .explode("steps")
        .unnest("steps")
        .with_columns(pl.int_range(pl.len()).over("episode_nr").alias("position"))
    )
    last_recorded = pl.col("position") == pl.col("position").max().over("episode_nr")
    actions = recorded.with_columns(
        pl.lit(False).alias("is_last"),
        pl.lit(False).alias("is_terminal"),
        pl.when(last_recorded & pl.col("ended"))
        .then(0.0)
        .otherwise(rules.DISCOUNT)
        .alias("discount"),
    )
    no_action = pl.struct(
        pl.lit("").alias("action_type"),
        pl.lit("{}").alias("action_details"),
        pl.concat_list([pl.lit(rules.PAD_TOKEN, dtype=pl.Int64)] * rules.TOKENS_PER_STEP).alias(
            "action_tokens"
        ),
    )
    final = recorded.filter(last_recorded).with_columns(
        (pl.col("step_index") + 1).alias("step_index"),
        (pl.col("position") + 1).alias("position"),
        pl.lit(False).alias("is_first"),
        pl.lit(True).alias("is_last"),
        pl.col("ended").alias("is_terminal"),
        no_action.alias("action"),
        pl.lit(0.0).alias("reward"),
        pl.lit(0.0).alias("discount"),
    )
    fields = list(RLDS_STEPS_DTYPE.inner.to_schema())
    steps = (
        pl.concat([actions, final.select(actions.columns)])
        .sort("episode_nr", "position")
        .group_by("episode_nr", maintain_order=True)
        .agg(pl.struct(fields).alias("steps"))
    )
    return steps.get_column("steps").cast(RLDS_STEPS_DTYPE)


def rlds_rows(episodes: pl.DataFrame, classes: pl.DataFrame) -> pl.DataFrame:
    """Return `rlds` feed rows: every episode the competence filter did not discard as noise.

    quality_score is the competence score; metadata holds player_key, total_steps (recorded
    actions), truncated, competence (class, reason, score, score_source) and flagged_steps;
    split_group is the player. `steps` follow RLDS step semantics (`rlds_steps`).
    """
    kept = episodes.join(
        classes.select("episode_id", "score", "score_source", "competence", "reason"),
        on="episode_id",
        how="inner",
    ).filter(pl.col("competence") != "noise")
    kept = kept.with_columns(rlds_steps(kept).alias("steps"))
    metadata = pl.struct(
        "player_key",
        "session_id",
        "total_steps",
        (~pl.col("ended")).alias("truncated"),
        "competence",
        pl.col("reason").alias("competence_reason"),
        pl.col("score").alias("competence_score"),
        "score_source",
        "flagged_steps",
    ).struct.json_encode()
    rows = kept.select(
        pl.lit("telemetry").alias("source"),
        ("episode:" + pl.col("episode_id")).alias("source_ref"),
        pl.col("score").alias("quality_score"),
        metadata.alias("metadata"),
        "episode_id",
        "task_description",
        "success",
        "steps",
        pl.col("player_key").alias("split_group"),
        "event_time",
        "player_key",
    )
    return with_stable_id(rows, ["source", "source_ref", "episode_id"]).sort("episode_id")
