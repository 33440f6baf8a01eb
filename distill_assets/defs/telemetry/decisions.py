"""Silver decisions + outcomes → `telemetry/decisions` and `dpo` pairs.

See docs/sources/telemetry.md#decisions-and-pairs.

Pure Polars. Pairing rules: `rules/telemetry_pairs.py`. Only decisions triage passed are used, and
silver already holds no rejected (bot) or deleted player; consent is applied at release through
the pair subjects (`telemetry/pair_exclusions`).
"""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.telemetry.competence import pair_subjects
from distill_assets.defs.telemetry.events import payload_fields
from distill_assets.lib.hashing import with_stable_id
from distill_assets.rules import telemetry_pairs as rules

SOURCE = "telemetry"
OPTION_DTYPE = pl.List(pl.Struct({"option_id": pl.String(), "text": pl.String()}))
COUNTERFACTUAL_DTYPE = pl.List(
    pl.Struct(
        {
            "option_id": pl.String(),
            "text": pl.String(),
            "outcome": pl.String(),
            "label": pl.String(),
            "reward": pl.Float64(),
            "karma_delta": pl.Int64(),
        }
    )
)
DECISIONS_SCHEMA = pl.Schema(
    {
        "event_id": pl.String(),
        "player_key": pl.String(),
        "session_id": pl.String(),
        "event_time": pl.Float64(),
        "source_ref": pl.String(),
        "scenario_id": pl.String(),
        "game_state_hash": pl.String(),
        "prompt": pl.String(),
        "chosen_option": pl.String(),
        "chosen_text": pl.String(),
        "reasoning": pl.String(),
        "ambiguity_score": pl.Float64(),
        "outcome": pl.String(),
        "label": pl.String(),
        "reward": pl.Float64(),
        "karma_delta": pl.Int64(),
        "trust_score": pl.Float64(),
        "counterfactuals": COUNTERFACTUAL_DTYPE,
    }
)
_DECISION_FIELDS: dict[str, pl.DataType] = {
    "scenario_id": pl.String(),
    "game_state_hash": pl.String(),
    "prompt": pl.String(),
    "options": pl.String(),
    "chosen_option": pl.String(),
    "reasoning": pl.String(),
    "ambiguity_score": pl.Float64(),
}
_OUTCOME_FIELDS: dict[str, pl.DataType] = {
    "decision_event_id": pl.String(),
    "option_id": pl.String(),
    "outcome": pl.String(),
    "label": pl.String(),
    "reward": pl.Float64(),
    "karma_delta": pl.Int64(),
}
_RESULT = ("outcome", "label", "reward", "karma_delta")


def decisions(events: pl.LazyFrame, triage: pl.LazyFrame, trust: pl.LazyFrame) -> pl.DataFrame:
    """Return the triaged decisions of silver `events` with their outcomes (`DECISIONS_SCHEMA`).

    The factual outcome is the earliest outcome of the decision with no option_id or the chosen
    one; outcomes naming another option are the decision's counterfactuals (earliest per option).
    `trust`: player_key, trust_score (players without one get null).
    """
    passed = triage.filter(pl.col("decision").is_in(rules.PASS_DECISIONS)).select("event_id")
    made = (
        payload_fields(events, "decision", _DECISION_FIELDS)
        .join(passed, on="event_id", how="semi")
        .collect()
    )
    options = (
        made.select("event_id", pl.col("options").str.json_decode(OPTION_DTYPE))
        .explode("options")
        .unnest("options")
        .drop_nulls("option_id")
        .unique(["event_id", "option_id"], keep="first", maintain_order=True)
    )
    outcomes = (
        payload_fields(events, "outcome", _OUTCOME_FIELDS)
        .filter(pl.col("decision_event_id").is_not_null())
        .sort("event_time", "event_seq", "event_id")
        .collect()
        .join(
            made.select(pl.col("event_id").alias("decision_event_id"), "chosen_option"),
            on="decision_event_id",
            how="inner",
        )
    )
    factual = outcomes.filter(
        pl.col("option_id").is_null() | (pl.col("option_id") == pl.col("chosen_option"))
    ).unique("decision_event_id", keep="first", maintain_order=True)
    counterfactual = (
        outcomes.filter(pl.col("option_id") != pl.col("chosen_option"))
        .unique(["decision_event_id", "option_id"], keep="first", maintain_order=True)
        .join(
            options,
            left_on=["decision_event_id", "option_id"],
            right_on=["event_id", "option_id"],
            how="inner",
        )
        .sort("decision_event_id", "option_id")
        .group_by("decision_event_id", maintain_order=True)
        .agg(pl.struct("option_id", "text", *_RESULT).alias("counterfactuals"))
    )
    chosen_text = options.rename({"option_id": "chosen_option", "text": "chosen_text"})
    return (
        made.join(chosen_text, on=["event_id", "chosen_option"], how="left")
        .join(
            factual.select(pl.col("decision_event_id").alias("event_id"), *_RESULT),
            on="event_id",
            how="left",
        )
        .join(counterfactual.rename({"decision_event_id": "event_id"}), on="event_id", how="left")
        .join(trust.collect(), on="player_key", how="left")
        .with_columns(
            pl.col("counterfactuals").fill_null(pl.lit([], dtype=COUNTERFACTUAL_DTYPE)),
            pl.coalesce("chosen_text", "chosen_option").alias("chosen_text"),
        )
        .select(pl.col(name).cast(dtype) for name, dtype in DECISIONS_SCHEMA.items())
        .sort("event_time", "event_id")
    )


def _side(prefix: str, text: str, reasoning: pl.Expr, result: dict[str, pl.Expr]) -> list[pl.Expr]:
    return [
        pl.col(text).alias(f"{prefix}_text"),
        reasoning.alias(f"{prefix}_reasoning"),
        *(expr.alias(f"{prefix}_{name}") for name, expr in result.items()),
    ]


def ghost_pairs(made: pl.DataFrame) -> pl.DataFrame:
    """Return ghost-replay pairs: decisions of different players on one scenario (see rules)."""
    ranked = made.filter(pl.col("reward").is_not_null()).sort(
        ["scenario_id", "reward", "trust_score", "event_id"],
        descending=[False, True, True, False],
        nulls_last=True,
    )
    columns = [c for c in ranked.columns if c != "counterfactuals"]
    frames = []
    for k in range(1, rules.MAX_PARTNERS + 1):
        partner = ranked.select(
            pl.col(c).shift(-k).over("scenario_id").alias(f"r_{c}") for c in columns
        )
        frames.append(
            pl.concat([ranked.select(columns), partner], how="horizontal").filter(
                pl.col("r_event_id").is_not_null()
                & (pl.col("r_player_key") != pl.col("player_key"))
                & (pl.col("r_chosen_option") != pl.col("chosen_option"))
                & (
                    (pl.col("r_reward") != pl.col("reward"))
                    | (pl.col("r_label") != pl.col("label"))
                )
            )
        )
    pairs = pl.concat(frames, how="vertical")
    return pairs.select(
        pl.lit("ghost_replay").alias("pair_kind"),
        ("decisions:" + pl.col("event_id") + "+" + pl.col("r_event_id")).alias("source_ref"),
        "prompt",
        "scenario_id",
        "game_state_hash",
        "ambiguity_score",
        pl.max_horizontal("event_time", "r_event_time").alias("event_time"),
        pl.col("player_key").alias("player_key_chosen"),
        pl.col("r_player_key").alias("player_key_rejected"),
        *_side("chosen", "chosen_text", pl.col("reasoning"), {n: pl.col(n) for n in _RESULT}),
        *_side(
            "rejected",
            "r_chosen_text",
            pl.col("r_reasoning"),
            {n: pl.col(f"r_{n}") for n in _RESULT},
        ),
    )


def counterfactual_pairs(made: pl.DataFrame) -> pl.DataFrame:
    """Return chosen-option vs known-counterfactual pairs within one decision (see rules)."""
    alternatives = (
        made.filter(pl.col("reward").is_not_null())
        .explode("counterfactuals")
        .drop_nulls("counterfactuals")
        .with_columns(pl.col("counterfactuals").struct.unnest().name.prefix("cf_"))
        .filter(pl.col("cf_reward").is_not_null() & (pl.col("cf_reward") != pl.col("reward")))
        .with_columns(pl.int_range(pl.len()).over("event_id").alias("cf_rank"))
        .filter(pl.col("cf_rank") < rules.MAX_PARTNERS)
    )
    factual_better = pl.col("reward") > pl.col("cf_reward")
    actual = {n: pl.col(n) for n in _RESULT}
    alternative = {n: pl.col(f"cf_{n}") for n in _RESULT}
    no_reasoning = pl.lit(None, dtype=pl.String)

    def pick(first: pl.Expr, second: pl.Expr) -> pl.Expr:
        return pl.when(factual_better).then(first).otherwise(second)

    return alternatives.select(
        pl.lit("counterfactual").alias("pair_kind"),
        ("decision:" + pl.col("event_id") + ":" + pl.col("cf_option_id")).alias("source_ref"),
        "prompt",
        "scenario_id",
        "game_state_hash",
        "ambiguity_score",
        "event_time",
        pl.col("player_key").alias("player_key_chosen"),
        pl.col("player_key").alias("player_key_rejected"),
        pick(pl.col("chosen_text"), pl.col("cf_text")).alias("chosen_text"),
        pick(pl.col("reasoning"), no_reasoning).alias("chosen_reasoning"),
        *(pick(actual[n], alternative[n]).alias(f"chosen_{n}") for n in _RESULT),
        pick(pl.col("cf_text"), pl.col("chosen_text")).alias("rejected_text"),
        pick(no_reasoning, pl.col("reasoning")).alias("rejected_reasoning"),
        *(pick(alternative[n], actual[n]).alias(f"rejected_{n}") for n in _RESULT),
    )


def _seed_side(prefix: str) -> pl.Expr:
    """Return the seed's chosen/rejected object: content, reasoning, outcome."""
    return pl.struct(
        pl.col(f"{prefix}_text").alias("content"),
        pl.col(f"{prefix}_reasoning").alias("reasoning"),
        pl.col(f"{prefix}_outcome").alias("outcome"),
    )


def decision_pairs(made: pl.DataFrame, excluded: pl.DataFrame | None = None) -> pl.DataFrame:
    """Return the `dpo` feed rows of a partition's decisions (ghost replays + counterfactuals).

    Players in `excluded` (player_key: excluded from dpo when the pairs are built) take no part,
    so they do not displace a partner; later exclusions are applied at release by subject.
    """
    if excluded is not None:
        made = made.join(excluded, on="player_key", how="anti")
    pairs = pl.concat([ghost_pairs(made), counterfactual_pairs(made)], how="vertical_relaxed")
    reward_diff = (pl.col("chosen_reward") - pl.col("rejected_reward")).round(4)
    metadata = pl.struct(
        "pair_kind",
        pl.col("chosen_label").alias("chosen_policy_outcome"),
        pl.col("rejected_label").alias("rejected_policy_outcome"),
        reward_diff.alias("reward_diff"),
        pl.col("player_key_chosen").alias("user_id_chosen"),
        pl.col("player_key_rejected").alias("user_id_rejected"),
        "game_state_hash",
        "ambiguity_score",
        pl.struct(
            pl.col("chosen_karma_delta").alias("chosen"),
            pl.col("rejected_karma_delta").alias("rejected"),
        ).alias("karma_impact"),
        "scenario_id",
        _seed_side("chosen").alias("chosen"),
        _seed_side("rejected").alias("rejected"),
    ).struct.json_encode()
    quality = (
        rules.AMBIGUITY_WEIGHT * pl.col("ambiguity_score").fill_null(0.0)
        + rules.REWARD_WEIGHT * (reward_diff.abs() / rules.REWARD_SCALE).clip(0.0, 1.0)
    ).round(rules.SCORE_DECIMALS)
    rows = pairs.select(
        pl.lit(SOURCE).alias("source"),
        "source_ref",
        quality.alias("quality_score"),
        metadata.alias("metadata"),
        "prompt",
        pl.col("chosen_text").alias("chosen"),
        pl.col("rejected_text").alias("rejected"),
        pl.col("scenario_id").alias("split_group"),
        "event_time",
        "player_key_chosen",
        "player_key_rejected",
    )
    rows = with_stable_id(rows, ["source", "source_ref", "prompt", "chosen", "rejected"])
    return pair_subjects(rows, feed_schema("dpo")).sort("source_ref")
