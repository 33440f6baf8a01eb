"""Per-player, per-day payouts: Payout = BaseRate * U * (1 + lambda * H) * C * W(class).

See docs/sources/telemetry.md#payouts.

Tasks, utility U, novelty H and confidence C are defined in `rules/telemetry_trust.py`, the value
class weight W in `rules/telemetry_taxonomy.py` (1.0 for every class by default). Inputs are
the silver events of every partition (with their ingest `partition`) and the trust walk; the
result is a function of all history only, so it does not depend on the order partitions were
processed in.
"""

from __future__ import annotations

import polars as pl

from distill_assets.defs.telemetry.events import events_with_ids, payload_fields, silver_events
from distill_assets.defs.telemetry.taxonomy import (
    VALUE_CLASS_KEY,
    decision_value_class,
    episode_value_class,
)
from distill_assets.defs.telemetry.trust import peer_verdicts, trust_at
from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules import telemetry_trust as rules
from distill_assets.rules.telemetry_taxonomy import PAYOUT_WEIGHTS

PAYOUT_SCHEMA = pl.Schema(
    {
        "player_key": pl.String(),
        "partition": pl.String(),
        "tasks": pl.Int64(),
        "base": pl.Float64(),
        "utility": pl.Float64(),
        "novelty": pl.Float64(),
        "trust": pl.Float64(),
        "payout": pl.Float64(),
        "zeroed_tasks": pl.Int64(),
        "zero_reasons": pl.List(pl.String()),
    }
)
TASK_COLUMNS = (
    "player_key",
    "partition",
    "server_ts",
    "event_seq",
    "event_id",
    "task_type",
    "utility",
    "novelty",
    "zero_reason",
    VALUE_CLASS_KEY,
)


# the silver columns a task is made of (the rest of an event is not read into memory)
_EVENT_COLUMNS = ("event_id", "event_type", "player_key", "server_ts", "event_seq", "partition")


def _novelty(decisions: pl.DataFrame) -> pl.DataFrame:
    con = connect()
    try:
        con.register(
            "decisions", decisions.select("event_id", "chosen_option", "policy").to_arrow()
        )
        table = con.sql(
            load_sql("telemetry/select_decision_novelty"),
            params={"floor": rules.NOVELTY_FLOOR_PROBABILITY},
        ).to_arrow_table()
    finally:
        con.close()
    return decisions.join(pl.from_arrow(table), on="event_id", how="left")


def decision_tasks(silver: pl.LazyFrame) -> pl.DataFrame:
    """Decisions with an outcome: U from the outcome label, H from the AI policy.

    `zero_reason` is `peer_mismatch` when the player's peer-prediction response on the decision's
    scenario fell outside the majority cluster (the seed's payoff matrix: a mismatch pays zero).
    """
    events = silver_events(silver).select(*_EVENT_COLUMNS, "payload")
    decision_fields = {
        "chosen_option": pl.String(),
        "scenario_id": pl.String(),
        "ambiguity_score": pl.Float64(),
    }
    mismatched = (
        peer_verdicts(events)
        .filter(pl.col("signal") == "peer_mismatch")
        .select(
            "player_key", "scenario_id", pl.lit(rules.PEER_MISMATCH_REASON).alias("zero_reason")
        )
        .unique()
    )
    fields = payload_fields(events, "decision", decision_fields)
    policies = events_with_ids(
        events,
        fields.select("event_id").collect(),
        (
            "event_id",
            "partition",
            pl.col("payload").str.json_path_match("$.ai_policy_probs").alias("policy"),
        ),
    )
    decisions = fields.join(policies, on="event_id")
    chosen = decisions.select(pl.col("event_id").alias("decision_event_id"), "chosen_option")
    outcome_fields = {
        "decision_event_id": pl.String(),
        "label": pl.String(),
        "option_id": pl.String(),
    }
    outcomes = (
        payload_fields(events, "outcome", outcome_fields)
        .filter(pl.col("decision_event_id").is_not_null())
        # a counterfactual outcome (another option's) is not the decision's result
        .join(chosen, on="decision_event_id", how="left")
        .filter(pl.col("option_id").is_null() | (pl.col("option_id") == pl.col("chosen_option")))
        .sort("server_ts", "event_id")
        .group_by("decision_event_id")
        .agg(pl.col("label").first())
    )
    label = pl.col("label")
    utility = (
        pl.when(label.is_in(rules.SUCCESS_LABELS))
        .then(1.0)
        .when(label.is_in(rules.NEAR_MISS_LABELS))
        .then(rules.HIGH_QUALITY_FAILURE_UTILITY)
        .otherwise(0.0)
    )
    joined = (
        decisions.join(outcomes, left_on="event_id", right_on="decision_event_id", how="inner")
        .join(mismatched, on=["player_key", "scenario_id"], how="left")
        .with_columns(utility.alias("utility"), pl.lit("decision").alias("task_type"))
        .with_columns(decision_value_class(pl.col("ambiguity_score")))
        .collect()
    )
    return _novelty(joined).select(TASK_COLUMNS)


def episode_tasks(silver: pl.LazyFrame) -> pl.DataFrame:
    """Episodes with an `episode_end`: U = 1 on success, high-quality or low-effort failure else."""
    events = silver_events(silver).select(*_EVENT_COLUMNS, "payload")
    steps = payload_fields(
        events.select("event_type", "payload"),
        "trajectory_step",
        {"episode_id": pl.String(), "step_index": pl.Int64(), "reward": pl.Float64()},
    )
    last_index = pl.col("step_index").max()
    per_episode = steps.group_by("episode_id").agg(
        last_index.alias("last_step"),
        pl.len().alias("steps"),
        pl.col("reward").filter(pl.col("step_index") < last_index).max().alias("peak_before_last"),
    )
    end_fields = payload_fields(
        events,
        "episode_end",
        {"episode_id": pl.String(), "success": pl.Boolean(), "total_steps": pl.Int64()},
    )
    ended = events_with_ids(
        events, end_fields.select("event_id").collect(), ("event_id", "partition")
    )
    ends = (
        end_fields.join(ended, on="event_id")
        .sort("server_ts", "event_id")
        .unique("episode_id", keep="first", maintain_order=True)
    )
    planned = pl.coalesce(pl.col("total_steps"), pl.col("steps"))
    near_miss = (
        pl.col("peak_before_last") > rules.NEAR_MISS_REWARD_FRACTION * rules.MAX_STEP_REWARD
    ) & (
        (pl.col("last_step") + 1).cast(pl.Float64)
        >= (1.0 - rules.NEAR_MISS_FINAL_FRACTION) * planned.cast(pl.Float64)
    )
    utility = (
        pl.when(pl.col("success"))
        .then(1.0)
        .when(near_miss.fill_null(False))
        .then(rules.HIGH_QUALITY_FAILURE_UTILITY)
        .otherwise(0.0)
    )
    return (
        ends.join(per_episode, on="episode_id", how="left")
        .with_columns(
            utility.alias("utility"),
            pl.lit(0.0).alias("novelty"),
            pl.lit("episode").alias("task_type"),
            pl.lit(None, dtype=pl.String).alias("zero_reason"),
        )
        .with_columns(episode_value_class(pl.col("episode_id"), pl.col("success")))
        .select(TASK_COLUMNS)
        .collect()
    )


def payouts(silver: pl.LazyFrame, walk: pl.DataFrame) -> pl.DataFrame:
    """Return `telemetry/payouts`: per player and partition, the summed task payouts.

    `base` is the sum of the tasks' base rates, `utility`, `novelty` and `trust` their means, and
    `payout` the sum of BaseRate * U * (1 + lambda * H) * C * W over the tasks (W: the weight of
    the task's value class, `PAYOUT_WEIGHTS`), where a task with a
    zero-pay reason (a peer mismatch) pays 0; `zeroed_tasks` counts those tasks and
    `zero_reasons` lists their distinct reasons, sorted.
    """
    tasks = pl.concat([decision_tasks(silver), episode_tasks(silver)], how="vertical_relaxed")
    tasks = trust_at(walk, tasks).with_columns(
        pl.col("task_type").replace_strict(rules.BASE_RATES, return_dtype=pl.Float64).alias("base")
    )
    formula = (
        pl.col("base")
        * pl.col("utility")
        * (1.0 + rules.NOVELTY_LAMBDA * pl.col("novelty"))
        * pl.col("trust")
        * pl.col(VALUE_CLASS_KEY).replace_strict(PAYOUT_WEIGHTS, return_dtype=pl.Float64)
    )
    per_task = pl.when(pl.col("zero_reason").is_null()).then(formula).otherwise(0.0)
    digits = rules.PAYOUT_DECIMALS
    return (
        tasks.with_columns(per_task.alias("payout"))
        .group_by("player_key", "partition")
        .agg(
            pl.len().cast(pl.Int64).alias("tasks"),
            pl.col("base").sum().round(digits),
            pl.col("utility").mean().round(digits),
            pl.col("novelty").mean().round(digits),
            pl.col("trust").mean().round(digits),
            pl.col("payout").sum().round(digits),
            pl.col("zero_reason").is_not_null().sum().cast(pl.Int64).alias("zeroed_tasks"),
            pl.col("zero_reason").drop_nulls().unique().sort().alias("zero_reasons"),
        )
        .sort("partition", "player_key")
        .cast(dict(PAYOUT_SCHEMA))
        .select(PAYOUT_SCHEMA.names())
    )
