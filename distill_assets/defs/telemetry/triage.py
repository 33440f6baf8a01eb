"""Silver events → `telemetry/triage`: process | sample | skip | audit per candidate event.

The rules, their order and rates are `rules/telemetry_triage.py`
(docs/sources/telemetry.md#triage). Everything is judged within one partition and sampling uses
stable hashes of event ids, so a rerun, or any order of processing partitions, gives the same rows.

Triage gates the products built from the candidates: `gate` turns candidate verdicts into one
verdict per product (an episode from its steps, a conversation from its turns), `passed` keeps
the passing products, `without_skipped` drops skipped reasoning events, and
`audit_false_negatives` evaluates the audit sample against what full processing found valuable.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import polars as pl

from distill_assets.defs.telemetry.events import (
    payload_field_batches,
    payload_fields,
    silver_events,
)
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.hashing import with_stable_bucket
from distill_assets.lib.lake import write_frames
from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules import telemetry_triage as rules

# candidates the rules judge at a time
JUDGE_BATCH_ROWS = 65_536
# DuckDB's memory for the context query (it spills past it): 10 GB day, rows identical, the
# function's peak 2,475 → 1,535 MiB, CPU 113 → 119 s at 1 GB, not `lib.sql.MEMORY_LIMIT` (2 GB)
CONTEXT_MEMORY_LIMIT = "1GB"
SOURCE = "telemetry"
CANDIDATE_TYPES = ("decision", "trajectory_step", "reasoning", "dialogue_turn")
PASS_DECISIONS = ("process", "sample")
# a product's (episode's, reasoning trace's) verdict from its candidates' (see `gate`)
GATE_PASS, GATE_AUDIT, GATE_SKIP = "pass", "audit", "skip"
TRIAGE_SCHEMA = pl.Schema(
    {
        "event_id": pl.String(),
        "player_key": pl.String(),
        "event_type": pl.String(),
        "action_type": pl.String(),
        "decision": pl.String(),
        "reason": pl.String(),
    }
)
_FIELDS: dict[str, pl.DataType] = {
    "ambiguity_score": pl.Float64(),
    "reasoning": pl.String(),
    "scenario_id": pl.String(),
    "game_state_hash": pl.String(),
    "quest_id": pl.String(),
    "karma_state": pl.Int64(),
    "ambiguity_level": pl.String(),
    "social_context": pl.String(),
    "episode_id": pl.String(),
    "step_index": pl.Int64(),
    "action.action_type": pl.String(),
    "action": pl.String(),
    "observation.game_state": pl.String(),
    "observation.skill_state": pl.String(),
}
# the event columns triage reads (the rest of silver is left unread)
_EVENT_COLUMNS = ("event_id", "event_type", "player_key", "event_time", "event_seq")


def candidate_batches(events: pl.LazyFrame) -> Iterator[pl.DataFrame]:
    """Yield the candidates of `events` with their payload fields (`_FIELDS`), in order.

    A batch at a time (`payload_field_batches`); the reasoning text is reduced to whether there
    is one (`reasoning_given`): the columns `select_triage_context.sql` reads as `candidates`.
    """
    reasoning_given = pl.col("reasoning").str.strip_chars().str.len_chars() > 0
    for batch in payload_field_batches(events, CANDIDATE_TYPES, _FIELDS):
        yield batch.with_columns(reasoning_given.alias("reasoning_given")).drop("reasoning")


def peer_batches(events: pl.LazyFrame) -> Iterator[pl.DataFrame]:
    """Yield `player_key, scenario_id` of the peer predictions of `events`, in order (`peer`)."""
    for batch in payload_field_batches(events, "peer_prediction", {"scenario_id": pl.String()}):
        yield batch.select("player_key", "scenario_id")


def context_query(
    con: duckdb.DuckDBPyConnection,
    candidates: duckdb.DuckDBPyRelation,
    peer: duckdb.DuckDBPyRelation,
) -> duckdb.DuckDBPyRelation:
    """Return `select_triage_context.sql` over the relations `candidates` and `peer` of `con`.

    Creates the query's views (`candidates`, `peer`, the trajectory `steps` and their
    `step_state`) in `con`.
    """
    candidates.create_view("candidates")
    peer.create_view("peer")
    con.sql(
        "CREATE TEMP VIEW steps AS SELECT event_id, episode_id, step_index, "
        "observation_game_state AS game_state, observation_skill_state AS skill_state "
        "FROM candidates WHERE event_type = 'trajectory_step'"
    )
    con.sql(f"CREATE TEMP VIEW step_state AS {load_sql('telemetry/select_step_state')}")
    return con.sql(load_sql("telemetry/select_triage_context"))


def _contexts(events: pl.LazyFrame) -> Iterator[pl.DataFrame]:
    """Yield the candidates with the rules' context (`select_triage_context.sql`), in order.

    The candidates' payload fields are lifted a batch at a time and written to a scratch Parquet
    file (`candidate_batches`); DuckDB joins the step state and the peer predictions, computes
    the per-player, per-episode and per-scenario context and orders the rows, spilling past its
    memory limit, and the rows are read `JUDGE_BATCH_ROWS` at a time, so no step holds the day
    in memory.
    """
    folder = working_dir(f"{SOURCE}-triage")
    candidates, peer = folder / "candidates.parquet", folder / "peer.parquet"
    con = connect(private=True)  # a memory limit is global to a database: not the shared one's
    try:
        con.execute(f"SET memory_limit = '{CONTEXT_MEMORY_LIMIT}'")
        write_frames(candidate_batches(events), candidates)
        write_frames(peer_batches(events), peer)
        reader = context_query(
            con, con.read_parquet(str(candidates)), con.read_parquet(str(peer))
        ).fetch_record_batch(JUDGE_BATCH_ROWS)
        empty = True
        for batch in reader:
            empty = False
            yield pl.from_arrow(batch)
        if empty:
            yield pl.from_arrow(reader.schema.empty_table())
    finally:
        con.close()
        shutil.rmtree(folder, ignore_errors=True)


def _rule_reason() -> pl.Expr:
    """Return the first matching always-process or skip rule as `decision:reason` (or null)."""
    is_decision = pl.col("event_type") == "decision"
    is_step = pl.col("event_type") == "trajectory_step"
    is_turn = pl.col("event_type") == "dialogue_turn"
    innovation = pl.any_horizontal(
        pl.col(name).str.starts_with(rules.INNOVATION_PREFIX).fill_null(False)
        for name in ("scenario_id", "quest_id", "episode_id")
    )
    return (
        pl.when(
            (is_decision & (pl.col("ambiguity_score") > rules.AMBIGUITY_THRESHOLD))
            | (is_turn & pl.col("ambiguity_level").is_in(rules.AMBIGUOUS_DIALOGUE_LEVELS))
        )
        .then(pl.lit("process:high_ambiguity"))
        .when((pl.col("event_type") == "reasoning") | (is_decision & pl.col("reasoning_given")))
        .then(pl.lit("process:player_reasoning"))
        .when(innovation)
        .then(pl.lit("process:innovation_quest"))
        .when(is_decision & pl.col("peer_flagged"))
        .then(pl.lit("process:peer_flagged"))
        .when(pl.col("player_karma") >= rules.HIGH_KARMA)
        .then(pl.lit("process:high_karma"))
        .when(is_turn & (pl.col("quest_id").str.strip_chars().str.len_chars() > 0))
        .then(pl.lit("process:quest_dialogue"))
        .when(is_turn & pl.col("social_context").str.contains(rules.NEGOTIATION_CONTEXT))
        .then(pl.lit("process:negotiation_dialogue"))
        .when(is_step & pl.col("action_action_type").is_in(rules.ROUTINE_MOVEMENT_TYPES))
        .then(pl.lit("skip:routine_movement"))
        .when(is_step & pl.col("repeated_action"))
        .then(pl.lit("skip:repeated_action"))
        .when(
            is_step
            & pl.col("action_action_type").is_in(rules.ROUTINE_CRAFT_TYPES)
            & (pl.col("top_skill") <= rules.LOW_TIER_MAX_SKILL)
        )
        .then(pl.lit("skip:low_tier_routine_crafting"))
        .when(is_decision & pl.col("seen_scenario"))
        .then(pl.lit("skip:seen_scenario"))
    )


def triage_events(silver: pl.LazyFrame) -> pl.LazyFrame:
    """Return the columns of silver events triage reads (`payload` and the event columns)."""
    return silver_events(silver).select(*_EVENT_COLUMNS, "payload")


def triage(silver: pl.LazyFrame) -> pl.DataFrame:
    """Return a partition's `telemetry/triage` rows (see `rules/telemetry_triage.py`)."""
    return pl.concat(triage_batches(silver))


def triage_batches(silver: pl.LazyFrame) -> Iterator[pl.DataFrame]:
    """Yield a partition's `telemetry/triage` rows in order, `JUDGE_BATCH_ROWS` at a time.

    The rows' context is computed by DuckDB (`_contexts`); the rules judge it a batch at a time,
    so memory holds a batch of candidates and its triage rows.
    """
    for batch in _contexts(triage_events(silver)):
        yield judge(batch)


def write_triage(silver: pl.LazyFrame, target: Path) -> int:
    """Write `triage(silver)` to the local Parquet file `target` as it is judged; return the rows.

    The day's rows are never held: each judged batch is written and dropped (`write_frames`).
    """
    return write_frames(triage_batches(silver), target)


def judge(candidates: pl.DataFrame) -> pl.DataFrame:
    """Return the triage rows of `candidates` (rows of `select_triage_context.sql`, in order)."""
    candidates = with_stable_bucket(candidates, "event_id", rules.SAMPLE_SALT, rules.HASH_BUCKETS)
    candidates = with_stable_bucket(
        candidates, "event_id", rules.AUDIT_SALT, rules.HASH_BUCKETS, name="audit_bucket"
    )
    entropic = (pl.col("event_type") == "trajectory_step") & (
        pl.col("entropy") > rules.ENTROPY_THRESHOLD
    )
    sampled = pl.col("bucket") < int(rules.SAMPLE_RATE * rules.HASH_BUCKETS)
    judged = (
        candidates.with_columns(
            pl.coalesce(
                _rule_reason(),
                pl.when(entropic & sampled)
                .then(pl.lit("sample:sampled_high_entropy"))
                .when(entropic)
                .then(pl.lit("skip:high_entropy_not_sampled"))
                .otherwise(pl.lit("skip:no_trigger")),
            ).alias("verdict")
        )
        .with_columns(
            pl.col("verdict").str.split_exact(":", 1).struct.rename_fields(["decision", "reason"])
        )
        .unnest("verdict")
    )
    audited = (pl.col("decision") == "skip") & (
        pl.col("audit_bucket") < int(rules.AUDIT_RATE * rules.HASH_BUCKETS)
    )
    return (
        judged.with_columns(
            pl.when(audited).then(pl.lit("audit")).otherwise(pl.col("decision")).alias("decision"),
            pl.when(audited)
            .then("audit:" + pl.col("reason"))
            .otherwise(pl.col("reason"))
            .alias("reason"),
            pl.coalesce(pl.col("action_action_type"), pl.col("event_type")).alias("action_type"),
        )
        .select(TRIAGE_SCHEMA.names())
        .cast(dict(TRIAGE_SCHEMA))
    )


def pass_rates(rows: pl.DataFrame | pl.LazyFrame) -> dict[str, float]:
    """Return the pass rate (process + sample over candidates) per action type and overall.

    A LazyFrame (e.g. a scan of the written rows) is aggregated without being held.
    """
    passed = pl.col("decision").is_in(PASS_DECISIONS)
    rows = rows.lazy()
    per_type = (
        rows.group_by("action_type")
        .agg(passed.mean().alias("rate"))
        .sort("action_type")
        .collect()
        .iter_rows()
    )
    rates = {str(kind): round(float(rate), 4) for kind, rate in per_type}
    overall = rows.select(passed.mean()).collect().item()
    rates["all"] = round(float(overall), 4) if overall is not None else 0.0
    return rates


def turn_conversations(events: pl.LazyFrame) -> pl.LazyFrame:
    """Return `event_id, conversation_id` of every dialogue turn: the product a turn triages for."""
    turns = payload_fields(events, "dialogue_turn", {"conversation_id": pl.String()})
    return turns.select("event_id", "conversation_id")


def step_episodes(events: pl.LazyFrame) -> pl.LazyFrame:
    """Return `event_id, episode_id` of every trajectory step: the product a step triages for."""
    steps = payload_fields(events, "trajectory_step", {"episode_id": pl.String()})
    return steps.select("event_id", "episode_id")


def gate(keys: pl.LazyFrame, rows: pl.LazyFrame, key: str) -> pl.DataFrame:
    """Return one triage verdict per product (`key`, `triage`): pass | audit | skip.

    `keys` maps candidate event ids to their product (`key`, e.g. episode_id). A product passes
    when any of its candidates passed triage (process | sample), is `audit` when none passed but
    one was audited, and `skip` otherwise (docs/sources/telemetry.md#triage).
    """
    decision = pl.col("decision")
    return (
        keys.join(rows.select("event_id", "decision"), on="event_id", how="inner")
        .group_by(key)
        .agg(
            pl.when(decision.is_in(PASS_DECISIONS).any())
            .then(pl.lit(GATE_PASS))
            .when((decision == "audit").any())
            .then(pl.lit(GATE_AUDIT))
            .otherwise(pl.lit(GATE_SKIP))
            .alias("triage")
        )
        .sort(key)
        .collect()
    )


def passed(frame: pl.DataFrame, verdicts: pl.DataFrame, key: str) -> pl.DataFrame:
    """Keep the rows of `frame` whose product triage passed (products without a verdict drop)."""
    passing = verdicts.filter(pl.col("triage") == GATE_PASS).select(key)
    return frame.join(passing, on=key, how="semi")


def without_skipped(events: pl.LazyFrame, rows: pl.LazyFrame, event_type: str) -> pl.LazyFrame:
    """Drop the `event_type` events triage did not pass (skip or audit); keep every other event."""
    skipped = rows.filter(
        (pl.col("event_type") == event_type) & ~pl.col("decision").is_in(PASS_DECISIONS)
    ).select("event_id")
    return events.join(skipped, on="event_id", how="anti")


def audit_false_negatives(
    keys: pl.LazyFrame,
    rows: pl.LazyFrame,
    verdicts: pl.DataFrame,
    valuable: pl.DataFrame,
    key: str,
) -> dict[str, dict[str, float | int]]:
    """Evaluate the audit sample: per action type, audited candidates and false negatives.

    An audited candidate is a false negative when its product did not pass triage (so it would be
    lost) and full processing found the product valuable (`valuable` lists those product keys).
    Returns `{action_type: {"audited", "false_negatives", "rate"}}`, action types sorted.
    """
    lost = verdicts.filter(pl.col("triage") != GATE_PASS).select(key)
    found = (
        valuable.select(key)
        .join(lost, on=key, how="semi")
        .with_columns(pl.lit(True).alias("lost_value"))
    )
    audited = (
        rows.filter(pl.col("decision") == "audit")
        .select("event_id", "action_type")
        .join(keys, on="event_id", how="inner")
        .collect()
        .join(found, on=key, how="left")
        .group_by("action_type")
        .agg(
            pl.len().cast(pl.Int64).alias("audited"),
            pl.col("lost_value").fill_null(False).sum().cast(pl.Int64).alias("false_negatives"),
        )
        .sort("action_type")
    )
    return {
        str(kind): {
            "audited": int(n),
            "false_negatives": int(lost_n),
            "rate": round(lost_n / n, 4),
        }
        for kind, n, lost_n in audited.iter_rows()
    }
