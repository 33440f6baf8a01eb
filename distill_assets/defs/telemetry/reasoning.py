"""Silver `reasoning` events → `cot` feed rows (docs/sources/telemetry.md#reasoning). Pure Polars.

Rules: `rules/telemetry_reasoning.py`. Columns (the `cot` config, README.md#what-you-get):
instruction = the linked decision's prompt, else the reasoning context;
input = the context when linked to a decision, else empty; output and conclusion = the conclusion;
thought_process = the player's steps; outcome = the reasoning's own outcome, else the linked
decision's outcome, else empty. metadata: player_key, reasoning_id, scenario_id, decision_event_id,
decision_label, decision_reward, steps.
"""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.telemetry import privacy
from distill_assets.defs.telemetry.events import payload_fields
from distill_assets.lib.hashing import with_stable_id
from distill_assets.rules import telemetry_reasoning as rules

SOURCE = "telemetry"
_FIELDS: dict[str, pl.DataType] = {
    "reasoning_id": pl.String(),
    "scenario_id": pl.String(),
    "context": pl.String(),
    "thought_process": pl.String(),
    "conclusion": pl.String(),
    "outcome": pl.String(),
}


def reasoning_rows(events: pl.LazyFrame, decisions: pl.DataFrame) -> pl.DataFrame:
    """Return the `cot` feed rows (plus `subject`, `player_key`) of a partition's reasoning events.

    `decisions`: the partition's `telemetry/decisions` rows (for the scenario link).
    """
    traces = (
        payload_fields(events, "reasoning", _FIELDS)
        .with_columns(pl.col("thought_process").str.json_decode(pl.List(pl.String)))
        .filter((pl.col("thought_process").list.len() > 0) & pl.col("conclusion").is_not_null())
        .collect()
    )
    linked = (
        decisions.filter(pl.col("scenario_id").is_not_null())
        .sort("event_time", "event_id")
        .unique(["player_key", "scenario_id"], keep="first", maintain_order=True)
        .select(
            "player_key",
            "scenario_id",
            pl.col("event_id").alias("decision_event_id"),
            pl.col("prompt").alias("decision_prompt"),
            pl.col("outcome").alias("decision_outcome"),
            pl.col("label").alias("decision_label"),
            pl.col("reward").alias("decision_reward"),
        )
    )
    joined = traces.join(linked, on=["player_key", "scenario_id"], how="left")
    is_linked = pl.col("decision_event_id").is_not_null()
    outcome = pl.coalesce("outcome", "decision_outcome", pl.lit(""))
    steps = pl.col("thought_process").list.len()
    quality = (
        rules.STEPS_WEIGHT * (steps / rules.STEPS_SATURATION).clip(0.0, 1.0)
        + rules.OUTCOME_WEIGHT * (outcome != "").cast(pl.Float64)
        + rules.LINK_WEIGHT * is_linked.cast(pl.Float64)
    ).round(rules.SCORE_DECIMALS)
    metadata = pl.struct(
        "player_key",
        "reasoning_id",
        "scenario_id",
        "decision_event_id",
        "decision_label",
        "decision_reward",
        steps.alias("steps"),
    ).struct.json_encode()
    rows = joined.select(
        pl.lit(SOURCE).alias("source"),
        pl.col("source_ref"),
        quality.alias("quality_score"),
        metadata.alias("metadata"),
        pl.when(is_linked).then("decision_prompt").otherwise("context").alias("instruction"),
        pl.when(is_linked).then("context").otherwise(pl.lit("")).alias("input"),
        pl.col("conclusion").alias("output"),
        "thought_process",
        "conclusion",
        outcome.alias("outcome"),
        pl.coalesce("scenario_id", "player_key").alias("split_group"),
        "event_time",
        "player_key",
    )
    rows = with_stable_id(rows, ["source", "source_ref", "instruction", "output"])
    return rows.select(
        *(pl.col(name).cast(dtype) for name, dtype in feed_schema("cot").items()),
        privacy.subject("cot", pl.col("player_key")).alias(SUBJECT_COLUMN),
        "player_key",
    ).sort("event_time", "source_ref")
