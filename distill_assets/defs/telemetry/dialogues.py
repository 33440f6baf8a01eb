"""Silver `dialogue_turn` events → one SFT row per conversation (Polars, bucket by bucket).

See docs/sources/telemetry.md#dialogues.

Conversations are assembled within one ingest-date partition by `conversation_id`, turns in
`turn_index` order. Then, per conversation:

1. consecutive turns of the same speaker are merged into one message (texts joined with
   `rules.telemetry.TURN_JOINER`) - nothing the player or NPC said is lost, and roles alternate;
2. NPC turns before the player's first turn and player turns after the NPC's last turn are trimmed,
   so the messages are `system, user, assistant, …, user, assistant` (the shape chat templates and
   TRL expect);
3. the conversation is dropped, with a reason, if its turns come from several players
   (`mixed_players`), two turns share a `turn_index` (`duplicate_turn_index`), no turn carries an
   NPC persona for the system message (`missing_persona`), or it has fewer than
   `rules.telemetry.MIN_EXCHANGES` exchanges (`too_few_exchanges`); the first matching reason wins.

The system message is the NPC persona of the earliest turn that carries one; metadata fields
(seed Schema 1: game_genre, player_skill_tier, ambiguity_level, social_context, karma_state,
profession; and the game's session_id and quest_id) are the earliest non-null value, i.e. the
state when the conversation began. `timestamp` is the first turn's event time as ISO 8601 UTC,
floored to the minute as silver floors it (docs/privacy.md#de-identification).
A conversation whose turns land in two ingest dates is judged per date (each part on its own).

Triage gates the built rows (`gate_dialogues`, docs/sources/telemetry.md#triage): a conversation
is published only when one of its turns passed triage; the audited turns of the others are
evaluated against the rows they would have made (`rules/telemetry_triage.py`).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.telemetry.events import payload_field_batches
from distill_assets.defs.telemetry.triage import (
    audit_false_negatives,
    gate,
    passed,
    turn_conversations,
)
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.hashing import with_stable_bucket, with_stable_id
from distill_assets.lib.lake import write_frames
from distill_assets.lib.metadata import reason_counts
from distill_assets.rules import telemetry as rules
from distill_assets.rules.telemetry_triage import AUDIT_VALUABLE_DIALOGUE_SCORE

SOURCE = "telemetry"
DIALOGUE_TURN = "dialogue_turn"
PAYLOAD_STRINGS = (
    "conversation_id",
    "speaker",
    "text",
    "npc_id",
    "npc_name",
    "npc_persona",
    "quest_id",
    "game_genre",
    "player_skill_tier",
    "ambiguity_level",
    "social_context",
    "profession",
)
PAYLOAD_INTEGERS = ("turn_index", "karma_state")
CONTEXT_FIELDS = (
    "game_genre",
    "player_skill_tier",
    "ambiguity_level",
    "social_context",
    "karma_state",
    "profession",
)
DROP_REASONS = ("mixed_players", "duplicate_turn_index", "missing_persona", "too_few_exchanges")
ROLES = {"player": "user", "npc": "assistant"}
SOURCE_REF_PREFIX = "conversation:"
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# dialogue turns a build holds at a time (about: whole conversations, by a hash of their id)
BUCKET_TURNS = 200_000
_BUCKET_SALT = "dialogues:"
# Separators of the content key hashed into the row id (never occur in chat text).
_ROLE_SEPARATOR = "\x1e"
_MESSAGE_SEPARATOR = "\x1d"


@dataclass
class DialogueStats:
    """What the dialogue builder saw, kept and dropped (for materialization metadata)."""

    turns: int = 0
    conversations: int = 0
    kept: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    merged_turns: int = 0
    trimmed_leading_npc_turns: int = 0
    trimmed_trailing_player_turns: int = 0


def _turn_columns(events: pl.LazyFrame) -> pl.LazyFrame:
    return events.select(
        "event_id", "event_type", "player_key", "session_id", "server_ts", "payload"
    )


_TURN_FIELDS: tuple[str, dict[str, pl.DataType]] = (
    DIALOGUE_TURN,
    {
        **{name: pl.String() for name in PAYLOAD_STRINGS},
        **{name: pl.Int64() for name in PAYLOAD_INTEGERS},
    },
)


def _first_present(name: str) -> pl.Expr:
    return pl.col(name).drop_nulls().first().alias(name)


def _conversations(turns: pl.LazyFrame) -> pl.LazyFrame:
    """One row per conversation: the checks' inputs and the row's context."""
    persona = pl.col("npc_persona").str.strip_chars().replace("", None)
    return turns.group_by("conversation_id").agg(
        pl.len().alias("turns"),
        pl.col("player_key").n_unique().alias("players"),
        pl.col("turn_index").is_duplicated().any().alias("duplicate_turn_index"),
        persona.drop_nulls().first().alias("persona"),
        pl.col("player_key").first(),
        pl.col("server_ts").first().alias("event_time"),
        _first_present("session_id"),
        _first_present("quest_id"),
        _first_present("npc_name"),
        *(_first_present(name) for name in CONTEXT_FIELDS),
    )


def _runs(turns: pl.LazyFrame) -> pl.LazyFrame:
    """Merge consecutive same-speaker turns into runs and mark the runs trimmed at the ends."""
    speaker = pl.col("speaker")
    run = (
        speaker.ne_missing(speaker.shift(1)).cast(pl.UInt32).cum_sum().over("conversation_id")
    ).alias("run")
    runs = (
        turns.with_columns(run)
        .group_by("conversation_id", "run", maintain_order=True)
        .agg(
            speaker.first(),
            pl.col("text").str.join(rules.TURN_JOINER).alias("content"),
            pl.len().alias("turns"),
        )
    )
    first_player = pl.col("run").filter(speaker == "player").min().over("conversation_id")
    last_npc = pl.col("run").filter(speaker == "npc").max().over("conversation_id")
    return runs.with_columns(
        (first_player.is_null() | (pl.col("run") < first_player)).alias("leading"),
        (last_npc.is_null() | (pl.col("run") > last_npc)).alias("trailing"),
    )


def _messages(runs: pl.LazyFrame) -> pl.LazyFrame:
    """Per conversation: the alternating user/assistant messages and what the score needs."""
    kept = runs.filter(~pl.col("leading") & ~pl.col("trailing"))
    is_player = pl.col("speaker") == "player"
    return kept.group_by("conversation_id", maintain_order=True).agg(
        pl.struct(
            pl.col("speaker").replace_strict(ROLES, return_dtype=pl.String).alias("role"),
            pl.col("content"),
        ).alias("turn_messages"),
        (pl.col("speaker") == "npc").sum().alias("exchanges"),
        pl.col("content").filter(is_player).str.len_chars().mean().alias("mean_player_chars"),
    )


def _drop_reason() -> pl.Expr:
    return (
        pl.when(pl.col("players") > 1)
        .then(pl.lit("mixed_players"))
        .when(pl.col("duplicate_turn_index"))
        .then(pl.lit("duplicate_turn_index"))
        .when(pl.col("persona").is_null())
        .then(pl.lit("missing_persona"))
        .when(pl.col("exchanges").fill_null(0) < rules.MIN_EXCHANGES)
        .then(pl.lit("too_few_exchanges"))
        .otherwise(pl.lit(None, dtype=pl.String))
        .alias("drop_reason")
    )


def build_dialogues(
    events: pl.LazyFrame, bucket_turns: int = BUCKET_TURNS
) -> tuple[pl.DataFrame, DialogueStats]:
    """Turn a partition's bronze events into `sft` feed rows (see the module docstring).

    The day's turns are lifted a batch at a time into a scratch Parquet file, then built
    `bucket_turns` turns at a time (about): a bucket is the conversations whose id hashes to it,
    so a conversation is never split. The rows are each bucket's, in the order of a whole build.
    """
    stats = DialogueStats()
    parts = []
    folder = working_dir(f"{SOURCE}-dialogues")
    try:
        path = folder / "turns.parquet"
        lifted = (
            with_stable_bucket(batch.drop("event_type"), "conversation_id", _BUCKET_SALT, 2**62)
            for batch in payload_field_batches(_turn_columns(events), *_TURN_FIELDS)
        )
        buckets = max(1, -(-write_frames(lifted, path) // bucket_turns))
        for index in range(buckets):
            turns = pl.scan_parquet(path).filter(pl.col("bucket") % buckets == index)
            kept, found = _build_bucket(turns.drop("bucket"))
            parts.append(_feed_rows(kept))
            _add_stats(stats, found)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return pl.concat(parts).sort("event_time", "source_ref"), stats


def _add_stats(total: DialogueStats, part: DialogueStats) -> None:
    """Add a bucket's counts to the day's."""
    for name in (
        "turns",
        "conversations",
        "kept",
        "merged_turns",
        "trimmed_leading_npc_turns",
        "trimmed_trailing_player_turns",
    ):
        setattr(total, name, getattr(total, name) + getattr(part, name))
    for reason, count in part.dropped.items():
        total.dropped[reason] = total.dropped.get(reason, 0) + count


def _build_bucket(turns: pl.LazyFrame) -> tuple[pl.DataFrame, DialogueStats]:
    """Judge the conversations of `turns` (lifted dialogue turns); return the kept ones."""
    turns = turns.sort("conversation_id", "turn_index", "event_id").collect().lazy()
    runs = _runs(turns).collect()
    judged = (
        _conversations(turns)
        .join(_messages(runs.lazy()), on="conversation_id", how="left")
        .with_columns(_drop_reason())
        .collect()
    )
    kept = judged.filter(pl.col("drop_reason").is_null())
    kept_runs = runs.join(kept.select("conversation_id"), on="conversation_id", how="semi")
    in_messages = kept_runs.filter(~pl.col("leading") & ~pl.col("trailing"))
    stats = DialogueStats(
        turns=turns.select(pl.len()).collect().item(),
        conversations=judged.height,
        kept=kept.height,
        dropped=reason_counts(judged.filter(pl.col("drop_reason").is_not_null()), "drop_reason"),
        merged_turns=int((in_messages.get_column("turns") - 1).sum()),
        trimmed_leading_npc_turns=int(
            kept_runs.filter(pl.col("leading")).get_column("turns").sum()
        ),
        trimmed_trailing_player_turns=int(
            kept_runs.filter(pl.col("trailing") & ~pl.col("leading")).get_column("turns").sum()
        ),
    )
    return kept, stats


def _feed_rows(kept: pl.DataFrame) -> pl.DataFrame:
    """Shape kept conversations as `feed_schema("sft")` rows, sorted by event time."""
    system = pl.struct(pl.lit("system").alias("role"), pl.col("persona").alias("content"))
    messages = pl.concat_list(pl.concat_list(system), pl.col("turn_messages")).alias("messages")
    # the seed's Schema 1 timestamp, from the silver event time (already floored to the minute)
    timestamp = (
        pl.from_epoch(pl.col("event_time").cast(pl.Int64), time_unit="s")
        .dt.strftime(TIMESTAMP_FORMAT)
        .alias("timestamp")
    )
    metadata = pl.struct(
        *CONTEXT_FIELDS,
        "player_key",
        "npc_name",
        "session_id",
        "quest_id",
        timestamp,
        "exchanges",
        "turns",
    ).struct.json_encode()
    content_key = (
        pl.col("messages")
        .list.eval(
            pl.element().struct.field("role")
            + _ROLE_SEPARATOR
            + pl.element().struct.field("content")
        )
        .list.join(_MESSAGE_SEPARATOR)
    )
    rows = kept.with_columns(messages).select(
        pl.lit(SOURCE).alias("source"),
        (SOURCE_REF_PREFIX + pl.col("conversation_id")).alias("source_ref"),
        rules.dialogue_quality_score(
            pl.col("exchanges"), pl.col("ambiguity_level"), pl.col("mean_player_chars")
        ).alias("quality_score"),
        metadata.alias("metadata"),
        "messages",
        pl.col("player_key").alias("split_group"),
        "event_time",
        content_key.alias("content_key"),
    )
    rows = with_stable_id(rows, ["source", "source_ref", "content_key"])
    schema = feed_schema("sft")
    return rows.sort("event_time", "source_ref").select(
        pl.col(name).cast(dtype) for name, dtype in schema.items()
    )


@dataclass(frozen=True)
class DialogueGate:
    """Triage's verdict per conversation, the audit's evaluation, and the rows it kept out."""

    verdicts: pl.DataFrame
    audit: dict[str, dict[str, float | int]]
    dropped: int


def gate_dialogues(
    rows: pl.DataFrame, events: pl.LazyFrame, triage: pl.LazyFrame
) -> tuple[pl.DataFrame, DialogueGate]:
    """Keep the built rows whose conversation triage passed (a turn processed or sampled).

    `rows` are `build_dialogues` rows (content quality_score, before trust), `events` silver and
    `triage` the partition's triage rows. An audited turn is a false negative when its
    conversation did not pass and its row scores at least `AUDIT_VALUABLE_DIALOGUE_SCORE`.
    """
    keys = turn_conversations(events.select("event_id", "event_type", "payload")).collect().lazy()
    verdicts = gate(keys, triage, "conversation_id")
    built = rows.with_columns(
        pl.col("source_ref").str.strip_prefix(SOURCE_REF_PREFIX).alias("conversation_id")
    )
    valuable = built.filter(pl.col("quality_score") >= AUDIT_VALUABLE_DIALOGUE_SCORE)
    audit = audit_false_negatives(keys, triage, verdicts, valuable, "conversation_id")
    kept = passed(built, verdicts, "conversation_id").drop("conversation_id")
    return kept, DialogueGate(verdicts, audit, rows.height - kept.height)
