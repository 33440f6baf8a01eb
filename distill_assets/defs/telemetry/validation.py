"""Bronze events → `telemetry/validation`: one row per event and failed check (pure Polars).

The checks, their decisions and thresholds are `rules/telemetry_validation.py`
(docs/sources/telemetry.md#validation, the anti-gaming layer included). Everything is judged
within one ingest-date partition, so re-running a day gives the same rows whatever else was
processed. Every group a check compares events within is one player's (a player's sessions) or
one client-chosen id's (a conversation's turns, an episode's steps and end), which
`check_events` returns beside the rows, so a day split by player can tell whether its parts
judged the same groups (`validation_shards`).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from distill_assets.defs.telemetry.events import event_time, payload_fields
from distill_assets.rules import telemetry_validation as rules

VALIDATION_SCHEMA = pl.Schema(
    {
        "event_id": pl.String(),
        "player_key": pl.String(),
        "event_type": pl.String(),
        "check": pl.String(),
        "category": pl.String(),
        "decision": pl.String(),
        "reason": pl.String(),
    }
)
# the bronze columns the checks read
EVENT_COLUMNS = (
    "event_id",
    "event_type",
    "player_key",
    "session_id",
    "client_ts",
    "server_ts",
    "payload",
)
# the client-chosen ids whose events a check compares, whoever sent them (`group`: turn order by
# conversation_id; step order, backwards steps and actions after the end by episode_id)
GROUP_IDS_SCHEMA = pl.Schema({"group": pl.String(), "id": pl.String()})
# events whose sessions `bot_sessions` sorts at once (more are judged in buckets of players)
BOT_BUCKET_ROWS = 1_000_000
_ROW = ("event_id", "player_key", "event_type", "check", "reason")


def _fmt(value: pl.Expr) -> pl.Expr:
    return value.round(3).cast(pl.String)


def _timestamp_checks(events: pl.LazyFrame) -> list[pl.LazyFrame]:
    lead = pl.col("client_ts") - pl.col("server_ts")
    future = events.filter(lead > rules.FUTURE_TOLERANCE_SECONDS).select(
        "event_id",
        "player_key",
        "event_type",
        pl.lit("client_ts_in_future").alias("check"),
        ("client_ts " + _fmt(lead) + " s after server_ts").alias("reason"),
    )
    skew = events.filter(-lead > rules.MAX_CLOCK_SKEW_SECONDS).select(
        "event_id",
        "player_key",
        "event_type",
        pl.lit("clock_skew").alias("check"),
        ("client_ts " + _fmt(-lead) + " s before server_ts").alias("reason"),
    )
    return [future, skew]


def _sequence_check(
    rows: pl.LazyFrame, group: str, index: str, check: str, label: str
) -> pl.LazyFrame:
    """Rows whose time is earlier than the previous row's in `index` order within `group`."""
    ordered = rows.sort(group, index, "event_id").with_columns(
        event_time().alias("t"),
        event_time().shift(1).over(group).alias("previous_t"),
        pl.col(index).shift(1).over(group).alias("previous_index"),
    )
    return ordered.filter(pl.col("t") < pl.col("previous_t")).select(
        "event_id",
        "player_key",
        "event_type",
        pl.lit(check).alias("check"),
        (
            pl.lit(f"{label} ")
            + pl.col(index).cast(pl.String)
            + " is "
            + _fmt(pl.col("previous_t") - pl.col("t"))
            + f" s earlier than {label} "
            + pl.col("previous_index").cast(pl.String)
        ).alias("reason"),
    )


def _steps(events: pl.LazyFrame) -> pl.LazyFrame:
    fields: dict[str, pl.DataType] = {
        "episode_id": pl.String(),
        "step_index": pl.Int64(),
        "action.action_type": pl.String(),
    }
    for ranges in rules.ACTION_RANGES.values():
        for name in ranges:
            fields[f"action.action_details.{name}"] = pl.Float64()
    return payload_fields(events, "trajectory_step", fields)


def _range_checks(steps: pl.LazyFrame) -> list[pl.LazyFrame]:
    checks = []
    for action_type, ranges in rules.ACTION_RANGES.items():
        for name, (lo, hi) in ranges.items():
            value = pl.col(f"action_action_details_{name}")
            checks.append(
                steps.filter(
                    (pl.col("action_action_type") == action_type) & ((value < lo) | (value > hi))
                ).select(
                    "event_id",
                    "player_key",
                    "event_type",
                    pl.lit("action_out_of_range").alias("check"),
                    (
                        pl.lit(f"{action_type}.{name}=")
                        + value.cast(pl.String)
                        + f" outside [{lo:g}, {hi:g}]"
                    ).alias("reason"),
                )
            )
    return checks


def _transition_checks(
    events: pl.LazyFrame, steps: pl.LazyFrame, ends: pl.LazyFrame
) -> list[pl.LazyFrame]:
    arrival = steps.sort("episode_id", "server_ts", "step_index", "event_id").with_columns(
        pl.col("step_index").cum_max().shift(1).over("episode_id").alias("highest_before")
    )
    backwards = arrival.filter(pl.col("step_index") < pl.col("highest_before")).select(
        "event_id",
        "player_key",
        "event_type",
        pl.lit("step_index_backwards").alias("check"),
        (
            "step "
            + pl.col("step_index").cast(pl.String)
            + " arrived after step "
            + pl.col("highest_before").cast(pl.String)
        ).alias("reason"),
    )
    ended = ends.group_by("episode_id").agg(pl.col("server_ts").min().alias("ended_at"))
    after_end = (
        steps.join(ended, on="episode_id", how="inner")
        .filter(pl.col("server_ts") > pl.col("ended_at"))
        .select(
            "event_id",
            "player_key",
            "event_type",
            pl.lit("action_after_episode_end").alias("check"),
            (
                "step "
                + pl.col("step_index").cast(pl.String)
                + " received "
                + _fmt(pl.col("server_ts") - pl.col("ended_at"))
                + " s after episode_end"
            ).alias("reason"),
        )
    )
    decisions = payload_fields(
        events, "decision", {"chosen_option": pl.String(), "options": pl.String()}
    )
    offered = pl.col("options").str.json_decode(pl.List(pl.Struct({"option_id": pl.String()})))
    not_offered = (
        decisions.with_columns(
            offered.list.eval(pl.element().struct.field("option_id")).alias("ids")
        )
        .filter(~pl.col("ids").list.contains(pl.col("chosen_option")))
        .select(
            "event_id",
            "player_key",
            "event_type",
            pl.lit("chosen_option_not_offered").alias("check"),
            ("chosen_option " + pl.col("chosen_option") + " is not an option").alias("reason"),
        )
    )
    return [backwards, after_end, not_offered]


def bot_sessions(events: pl.LazyFrame) -> pl.LazyFrame:
    """Per player and session: the bot signatures found (`signatures`, empty list if none).

    A day of more than `BOT_BUCKET_ROWS` events is judged in buckets of players (a stable hash
    of the player_key), one at a time: a session is one player's, so each bucket's sessions are
    the whole day's sessions of its players, and only one bucket's events are sorted at once.
    """
    total = events.select(pl.len()).collect().item()
    buckets = max(1, -(-total // BOT_BUCKET_ROWS))
    if buckets == 1:
        return _bot_sessions(events)
    bucket = pl.col("player_key").hash(seed=0).fill_null(0) % buckets
    return pl.concat(
        [_bot_sessions(events.filter(bucket == k)).collect() for k in range(buckets)]
    ).lazy()


def _bot_sessions(events: pl.LazyFrame) -> pl.LazyFrame:
    actions = events.filter(~pl.col("event_type").is_in(rules.ACCOUNT_EVENT_TYPES))
    gaps = (
        actions.sort("player_key", "session_id", "server_ts", "event_id")
        .with_columns(pl.col("server_ts").diff().over("player_key", "session_id").alias("gap"))
        .group_by("player_key", "session_id")
        .agg(
            pl.len().alias("events"),
            (pl.col("server_ts").max() - pl.col("server_ts").min()).alias("span"),
            pl.col("gap").drop_nulls().mean().alias("gap_mean"),
            pl.col("gap").drop_nulls().std(ddof=0).alias("gap_std"),
        )
    )
    enough = pl.col("events") >= rules.BOT_MIN_EVENTS
    per_minute = (pl.col("events") - 1) / pl.col("span") * 60.0
    cv = pl.col("gap_std") / pl.col("gap_mean")
    fast = enough & ((pl.col("span") <= 0) | (per_minute > rules.MAX_ACTIONS_PER_MINUTE))
    regular = enough & (pl.col("gap_mean") > 0) & (cv < rules.MIN_INTERVAL_CV)
    return gaps.with_columns(
        pl.concat_list(
            pl.when(fast).then(pl.lit("inhuman_action_rate")),
            pl.when(regular).then(pl.lit("regular_intervals")),
        )
        .list.drop_nulls()
        .alias("signatures"),
        per_minute.alias("per_minute"),
        cv.alias("interval_cv"),
    )


def _bot_checks(events: pl.LazyFrame) -> pl.LazyFrame:
    found = bot_sessions(events).filter(pl.col("signatures").list.len() > 0)
    per_player = (
        found.sort("session_id")
        .group_by("player_key")
        .agg(
            (
                pl.col("signatures").list.join("+")
                + " in session "
                + pl.col("session_id").fill_null("?")
                + " ("
                + pl.col("events").cast(pl.String)
                + " events, "
                + _fmt(pl.col("per_minute"))
                + "/min, interval cv "
                + _fmt(pl.col("interval_cv").fill_nan(0.0).fill_null(0.0))
                + ")"
            )
            .str.join("; ")
            .alias("reason")
        )
    )
    return events.join(per_player, on="player_key", how="inner").select(
        "event_id", "player_key", "event_type", pl.lit("bot_signature").alias("check"), "reason"
    )


@dataclass(frozen=True)
class CheckedEvents:
    """What `check_events` found: the validation rows and the groups of events it compared.

    `groups` (`GROUP_IDS_SCHEMA`, lazy: computed only when read) holds each conversation id of
    the turns (`group` conversation_id) and each episode id of the steps and episode ends
    (episode_id) once; a step without an episode id is compared with the others without one
    (null), an end without one with no step (left out).
    """

    rows: pl.DataFrame
    groups: pl.LazyFrame


def check_events(events: pl.LazyFrame) -> CheckedEvents:
    """Run every check on `events` (bronze rows); return the rows and the groups compared."""
    events = events.select(EVENT_COLUMNS)
    steps = _steps(events)
    turns = payload_fields(
        events, "dialogue_turn", {"conversation_id": pl.String(), "turn_index": pl.Int64()}
    )
    ends = payload_fields(events, "episode_end", {"episode_id": pl.String()})
    parts = [
        *_timestamp_checks(events),
        _sequence_check(turns, "conversation_id", "turn_index", "turn_out_of_order", "turn"),
        _sequence_check(steps, "episode_id", "step_index", "step_out_of_order", "step"),
        *_range_checks(steps),
        *_transition_checks(events, steps, ends),
        _bot_checks(events),
    ]
    # one check at a time: collected together, every check's sort would be in memory at once
    rows = pl.concat([p.select(_ROW).collect() for p in parts], how="vertical_relaxed").lazy()
    labelled = rows.with_columns(
        pl.col("check").replace_strict(rules.CATEGORIES).alias("category"),
        pl.col("check").replace_strict(rules.DECISIONS).alias("decision"),
    )
    groups = pl.concat(
        [
            _group_ids(turns, "conversation_id"),
            _group_ids(steps, "episode_id"),
            _group_ids(ends, "episode_id").drop_nulls(),
        ]
    )
    return CheckedEvents(validation_rows(labelled), groups.unique(maintain_order=True))


def _group_ids(rows: pl.LazyFrame, group: str) -> pl.LazyFrame:
    return rows.select(
        pl.lit(group).alias("group"), pl.col(group).cast(pl.String).alias("id")
    ).cast(dict(GROUP_IDS_SCHEMA))


def validation_rows(rows: pl.LazyFrame) -> pl.DataFrame:
    """Return a partition's validation table from failed-check rows in check order.

    The first row of each (event_id, check) is kept (a step out of several ranges: the first
    range's), sorted by event id and check: rows of disjoint sets of events, each in check order,
    give the table of all their events whatever order the sets come in.
    """
    return (
        rows.select(VALIDATION_SCHEMA.names())
        .unique(["event_id", "check"], keep="first", maintain_order=True)
        .sort("event_id", "check")
        .collect()
        .cast(dict(VALIDATION_SCHEMA))
    )


def validate_events(events: pl.LazyFrame) -> pl.DataFrame:
    """Return a partition's `telemetry/validation` rows (see the module docstring)."""
    return check_events(events).rows


def rejected_events(validation: pl.LazyFrame) -> pl.LazyFrame:
    """Return the distinct event ids a validation table rejects."""
    return validation.filter(pl.col("decision") == rules.REJECT).select("event_id").unique()
