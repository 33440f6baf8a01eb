"""Player trust from gold standards and peer predictions, and player quality.

See docs/sources/telemetry.md#trust.

The rules and numbers are `rules/telemetry_trust.py`. Signals are extracted vectorized; the trust
walk itself is sequential per player (each update is clamped, so it is not a plain cumulative sum)
and runs over NumPy arrays of the signals only - gold standards and peer predictions are a small
share of events ("every ~50th task").
"""

from __future__ import annotations

import numpy as np
import polars as pl

from distill_assets.defs.telemetry.events import payload_fields, silver_events
from distill_assets.rules import telemetry_trust as rules

SIGNAL_SCHEMA = pl.Schema(
    {
        "player_key": pl.String(),
        "server_ts": pl.Float64(),
        "event_seq": pl.Int64(),
        "event_id": pl.String(),
        "signal": pl.String(),
    }
)
QUALITY_SCHEMA = pl.Schema(
    {
        "player_key": pl.String(),
        "trust_score": pl.Float64(),
        "gold_standard_accuracy": pl.Float64(),
        "peer_prediction_score": pl.Float64(),
        "total_contributions": pl.Int64(),
        "high_value_contributions": pl.Int64(),
        "flagged": pl.Boolean(),
        "flag_reasons": pl.List(pl.String()),
    }
)
# a feed row is ordered after every signal at its own time (see `trust_of_rows`)
_AFTER_EVERY_SIGNAL = 2**62
GOLD_FLAG = "gold_accuracy_below_70"
BOT_FLAG = "bot_signature"


def gold_signals(events: pl.LazyFrame) -> pl.LazyFrame:
    """Return one `gold_pass` / `gold_fail` signal per gold_standard_result event."""
    gold = payload_fields(events, "gold_standard_result", {"passed": pl.Boolean()})
    return gold.select(
        "player_key",
        "server_ts",
        "event_seq",
        "event_id",
        pl.when(pl.col("passed"))
        .then(pl.lit("gold_pass"))
        .otherwise(pl.lit("gold_fail"))
        .alias("signal"),
    )


def peer_verdicts(events: pl.LazyFrame) -> pl.LazyFrame:
    """Return one `peer_match` / `peer_mismatch` per clustered peer response (ties: none).

    Each row keeps the response's `scenario_id`, so a payout can tell which decision the verdict
    is about (docs/sources/telemetry.md#payouts: a mismatch pays zero).
    """
    peers = payload_fields(
        events,
        "peer_prediction",
        {
            "pairing_id": pl.String(),
            "scenario_id": pl.String(),
            "choice": pl.String(),
            "peer_choice": pl.String(),
        },
    )
    latest = (
        peers.sort("server_ts", "event_seq", "event_id")
        .group_by("pairing_id", "player_key")
        .agg(pl.all().last())
    )
    responses = latest.with_columns(pl.len().over("pairing_id").alias("responders"))
    # a lone response that names the peer's choice counts the peer as a second response
    peer_votes = responses.filter(
        (pl.col("responders") == 1) & pl.col("peer_choice").is_not_null()
    ).select("pairing_id", pl.col("peer_choice").alias("choice"))
    votes = pl.concat([responses.select("pairing_id", "choice"), peer_votes])
    clusters = votes.group_by("pairing_id", "choice").agg(pl.len().alias("size"))
    largest = clusters.group_by("pairing_id").agg(
        pl.col("size").max().alias("largest"),
        (pl.col("size") == pl.col("size").max()).sum().alias("largest_clusters"),
    )
    judged = (
        responses.join(clusters, on=["pairing_id", "choice"])
        .join(largest, on="pairing_id")
        .filter(pl.col("largest_clusters") == 1)
    )
    return judged.select(
        "player_key",
        "server_ts",
        "event_seq",
        "event_id",
        "scenario_id",
        pl.when(pl.col("size") == pl.col("largest"))
        .then(pl.lit("peer_match"))
        .otherwise(pl.lit("peer_mismatch"))
        .alias("signal"),
    )


def peer_signals(events: pl.LazyFrame) -> pl.LazyFrame:
    """Return the peer verdicts as trust signals (without their scenario)."""
    return peer_verdicts(events).drop("scenario_id")


def trust_signals(silver: pl.LazyFrame) -> pl.DataFrame:
    """Return every trust signal of silver events in event order (player, time, sequence, id)."""
    events = silver_events(silver).select(*SIGNAL_SCHEMA.names()[:-1], "event_type", "payload")
    signals = pl.concat([gold_signals(events), peer_signals(events)])
    return (
        signals.sort("player_key", "server_ts", "event_seq", "event_id")
        .collect()
        .cast(dict(SIGNAL_SCHEMA))
        .select(SIGNAL_SCHEMA.names())
    )


def trust_walk(signals: pl.DataFrame) -> pl.DataFrame:
    """Add `trust_after`: the player's trust after each signal (clamped after every update)."""
    deltas = signals.get_column("signal").replace_strict(rules.TRUST_DELTAS).to_numpy()
    players = signals.get_column("player_key").to_numpy()
    after = np.empty(len(deltas), dtype=np.float64)
    trust, previous = rules.INITIAL_TRUST, None
    for i, (player, delta) in enumerate(zip(players, deltas, strict=True)):
        if player != previous:
            trust, previous = rules.INITIAL_TRUST, player
        trust = min(max(trust + delta, rules.TRUST_MIN), rules.TRUST_MAX)
        after[i] = trust
    return signals.with_columns(
        pl.Series("trust_after", after, dtype=pl.Float64).round(rules.TRUST_DECIMALS)
    )


def player_quality(
    walk: pl.DataFrame,
    contributions: pl.LazyFrame,
    bots: pl.LazyFrame,
) -> pl.DataFrame:
    """Return `telemetry/player_quality`: one row per player seen in contributions or signals.

    `contributions` holds (player_key, high_value) per contribution (triage candidates: high value
    = processed); `bots` the player keys validation rejected as bots on some day.
    """
    signals = walk.lazy()
    per_player = signals.group_by("player_key").agg(
        pl.col("trust_after").last().alias("trust_score"),
        (pl.col("signal") == "gold_pass").sum().alias("gold_pass"),
        pl.col("signal").str.starts_with("gold_").sum().alias("gold_total"),
        (pl.col("signal") == "peer_match").sum().alias("peer_match"),
        pl.col("signal").str.starts_with("peer_").sum().alias("peer_total"),
    )
    counted = contributions.group_by("player_key").agg(
        pl.len().cast(pl.Int64).alias("total_contributions"),
        pl.col("high_value").sum().cast(pl.Int64).alias("high_value_contributions"),
    )
    bot_keys = bots.select("player_key").unique().with_columns(pl.lit(True).alias("bot"))
    players = pl.concat(
        [
            per_player.select("player_key"),
            counted.select("player_key"),
            bot_keys.select("player_key"),
        ]
    ).unique()
    gold_accuracy = pl.when(pl.col("gold_total") > 0).then(
        pl.col("gold_pass") / pl.col("gold_total")
    )
    quality = (
        players.join(per_player, on="player_key", how="left")
        .join(counted, on="player_key", how="left")
        .join(bot_keys, on="player_key", how="left")
        .with_columns(gold_accuracy.alias("gold_standard_accuracy"))
        .with_columns(
            pl.concat_list(
                pl.when(pl.col("gold_standard_accuracy") < rules.GOLD_ACCURACY_FLAG).then(
                    pl.lit(GOLD_FLAG)
                ),
                pl.when(pl.col("bot").fill_null(False)).then(pl.lit(BOT_FLAG)),
            )
            .list.drop_nulls()
            .alias("flag_reasons")
        )
        .select(
            "player_key",
            pl.col("trust_score").fill_null(rules.INITIAL_TRUST),
            pl.col("gold_standard_accuracy").round(rules.TRUST_DECIMALS),
            pl.when(pl.col("peer_total") > 0)
            .then(pl.col("peer_match") / pl.col("peer_total"))
            .round(rules.TRUST_DECIMALS)
            .alias("peer_prediction_score"),
            pl.col("total_contributions").fill_null(0),
            pl.col("high_value_contributions").fill_null(0),
            (pl.col("flag_reasons").list.len() > 0).alias("flagged"),
            "flag_reasons",
        )
        .sort("player_key")
    )
    return quality.collect().cast(dict(QUALITY_SCHEMA)).select(QUALITY_SCHEMA.names())


def trust_at(walk: pl.DataFrame, tasks: pl.DataFrame) -> pl.DataFrame:
    """Add `trust`: each task's player trust after every signal up to and including its time."""
    order = pl.struct("server_ts", "event_seq", "event_id")
    history = walk.select("player_key", "server_ts", "event_seq", "event_id", "trust_after")
    combined = pl.concat(
        [
            history.with_columns(pl.lit(0).alias("is_task")),
            tasks.select("player_key", "server_ts", "event_seq", "event_id").with_columns(
                pl.lit(None, dtype=pl.Float64).alias("trust_after"), pl.lit(1).alias("is_task")
            ),
        ],
        how="vertical_relaxed",
    )
    # each task takes the trust after the last signal at or before it in event order
    trust = (
        combined.sort("player_key", "server_ts", "event_seq", "event_id", "is_task")
        .with_columns(
            pl.col("trust_after")
            .forward_fill()
            .over("player_key", order_by=order)
            .fill_null(rules.INITIAL_TRUST)
            .alias("trust")
        )
        .filter(pl.col("is_task") == 1)
        .select("event_id", "trust")
    )
    return tasks.join(trust, on="event_id", how="left")


def trust_of_rows(walk: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Add `trust`: each feed row's player trust after every signal up to its `event_time`.

    `rows` need `id`, `player_key` and `event_time`; a signal at the row's own time counts.
    """
    tasks = rows.select(
        "player_key",
        pl.col("event_time").alias("server_ts"),
        pl.lit(_AFTER_EVERY_SIGNAL, dtype=pl.Int64).alias("event_seq"),
        pl.col("id").alias("event_id"),
    )
    trust = trust_at(walk, tasks).select(pl.col("event_id").alias("id"), "trust")
    return rows.join(trust, on="id", how="left")


def event_flags(events: pl.LazyFrame, event_type: str, key: str, prefix: str) -> pl.DataFrame:
    """Return `source_ref, validation_flags` per product of `event_type` silver events.

    A product is the events sharing the payload field `key` (episode_id, conversation_id), its
    feed rows' source_ref `prefix + key`; with `key` = "source_ref" each event is its own product.
    The flags are the sorted distinct validation checks flagged on its events.
    """
    if key == "source_ref":
        selected = events.filter(pl.col("event_type") == event_type)
    else:
        selected = payload_fields(events, event_type, {key: pl.String()})
    return product_flags(selected, key, prefix)


def product_flags(selected: pl.LazyFrame, key: str, prefix: str) -> pl.DataFrame:
    """Return `event_flags` of events already selected and lifted (`key`, `flag_checks`)."""
    return (
        selected.select((pl.lit(prefix) + pl.col(key)).alias("source_ref"), "flag_checks")
        .group_by("source_ref")
        .agg(
            pl.col("flag_checks")
            .list.explode(keep_nulls=False, empty_as_null=False)
            .unique()
            .sort()
            .alias("validation_flags")
        )
        .collect()
    )


def trust_weighted(
    rows: pl.DataFrame, walk: pl.DataFrame, flags: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """Weigh feed rows (with `player_key`) by their trust at the time (`weigh_by_trust`)."""
    joined = trust_of_rows(walk, rows).join(flags, on="source_ref", how="left")
    return weigh_by_trust(joined)


def weigh_by_trust(
    rows: pl.DataFrame, noted: tuple[str, ...] = ("trust", "validation_flags")
) -> tuple[pl.DataFrame, int]:
    """Fold trust into feed rows; return the rows kept and how many fell below the trust floor.

    `rows` carry `trust` and the `noted` columns. Rows whose trust is below TRUST_FLOOR are
    dropped; the others get `quality_score` times min(trust / INITIAL_TRUST, 1) and the `noted`
    columns added to their `metadata` JSON (docs/sources/telemetry.md#trust).
    """
    trust = pl.col("trust").fill_null(rules.INITIAL_TRUST)
    weight = (trust / rules.INITIAL_TRUST).clip(upper_bound=1.0)
    below = trust < rules.TRUST_FLOOR
    notes = {
        "trust": trust,
        "validation_flags": pl.col("validation_flags").fill_null(
            pl.lit([], dtype=pl.List(pl.String))
        ),
    }
    extra = pl.struct(notes.get(name, pl.col(name)).alias(name) for name in noted)
    kept = rows.filter(~below).with_columns(
        (pl.col("quality_score") * weight).round(rules.QUALITY_DECIMALS).alias("quality_score"),
        (
            pl.col("metadata").str.strip_suffix("}")
            + pl.lit(",")
            + extra.struct.json_encode().str.strip_prefix("{")
        ).alias("metadata"),
    )
    return kept.drop("trust", *noted, strict=False), rows.height - kept.height


def trust_weighted_pairs(rows: pl.DataFrame, walk: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """Weigh pair feed rows by the lower trust of their two players at the pair's time.

    Metadata gains `trust_chosen` and `trust_rejected`; the lower one weighs the score and
    decides the floor (a pair is only as trustworthy as its less trusted side).
    """
    sides = {}
    for side in ("chosen", "rejected"):
        players = rows.select("id", "event_time", pl.col(f"player_key_{side}").alias("player_key"))
        sides[side] = trust_of_rows(walk, players).select(
            "id", pl.col("trust").fill_null(rules.INITIAL_TRUST).alias(f"trust_{side}")
        )
    joined = (
        rows.join(sides["chosen"], on="id", how="left")
        .join(sides["rejected"], on="id", how="left")
        .with_columns(pl.min_horizontal("trust_chosen", "trust_rejected").alias("trust"))
    )
    return weigh_by_trust(joined, ("trust_chosen", "trust_rejected"))
