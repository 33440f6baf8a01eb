"""Telemetry assets (seed 004): raw envelopes → bronze events + quarantine → SFT dialogues."""

import dagster as dg
import polars as pl

from distill_assets.contracts import telemetry as contract
from distill_assets.defs.ingest import (
    QUARANTINE_TABLE,
    bronze_outs,
    ingest_metadata,
    ingest_partition,
)
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings
from distill_assets.defs.telemetry.dialogues import DROP_REASONS, build_dialogues
from distill_assets.defs.telemetry.resources import DEVELOPMENT_SOURCE, PlayerIdHasher
from distill_assets.lib.metadata import funnel, histogram, preview
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.lib.startup import DEVELOPMENT_KEY_WARNING
from distill_assets.rules import rules_metadata, rules_version

SOURCE = "telemetry"
EVENTS = "events"
DIALOGUES = "dialogues"


def parse_params(hasher: PlayerIdHasher) -> tuple[dict[str, object], str]:
    """Return the parse SQL's bind parameters and where the player-id key came from."""
    key = hasher.resolved()
    params: dict[str, object] = {
        **key.sql_params(),
        "event_types": list(contract.EVENT_TYPES),
        "speakers": list(contract.SPEAKERS),
        "envelope_patch": contract.envelope_removal_patch(),
        "ts_min": contract.TIMESTAMP_MIN,
        "ts_max": contract.TIMESTAMP_MAX,
    }
    return params, key.source


@dg.multi_asset(
    outs=bronze_outs(
        SOURCE,
        EVENTS,
        bronze_description=(
            "Bronze telemetry: one row per valid envelope (event_id, event_type, "
            "schema_version, player_key, session_id, client_ts, server_ts, payload JSON, "
            "extra JSON, source_file, line_no). player_key is the HMAC-SHA256 of the raw "
            "player_id, which is replaced everywhere and never stored. Consent and deletion "
            "requests are kept for the gates downstream."
        ),
        quarantine_description=(
            "Telemetry records that broke the raw contract, with reason code, detail, file, "
            "line and the raw line (player id replaced by its player_key)."
        ),
    ),
    partitions_def=daily_partitions,
    group_name=SOURCE,
)
def telemetry_bronze(
    context: dg.AssetExecutionContext, settings: DistillSettings, player_id_hasher: PlayerIdHasher
):
    """Parse a day of raw telemetry JSONL into bronze events and quarantine, pseudonymizing ids.

    Validated in DuckDB against `contracts.telemetry`: envelope fields, event type, timestamps,
    payload object, and the dialogue_turn fields the dialogues need. A repeated event_id keeps its
    first valid record (by file, line); later copies go to quarantine as `duplicate_event_id`.
    """
    cfg = settings.resolved()
    params, key_source = parse_params(player_id_hasher)
    if key_source == DEVELOPMENT_SOURCE:
        context.log.warning(DEVELOPMENT_KEY_WARNING)
    result = ingest_partition(
        SOURCE,
        EVENTS,
        list_raw_files(cfg.raw_root, SOURCE, context.partition_key),
        raw_root=cfg.raw_root,
        params=params,
        bronze_exclude=("line",),
    )
    context.add_output_metadata(
        {**ingest_metadata(result), "player_key_source": key_source}, output_name=EVENTS
    )
    context.add_output_metadata(
        {"quarantine_rows": result.quarantine_rows, "player_key_source": key_source},
        output_name=QUARANTINE_TABLE,
    )
    return result.bronze, result.quarantine


@dg.asset(
    key=[SOURCE, DIALOGUES],
    partitions_def=daily_partitions,
    group_name=SOURCE,
    kinds={"polars"},
    code_version=rules_version(SOURCE),
    ins={"events": dg.AssetIn(key=[SOURCE, EVENTS])},
)
def telemetry_dialogues(context: dg.AssetExecutionContext, events: pl.LazyFrame) -> pl.DataFrame:
    """SFT feed rows (`sft` config) from player-NPC conversations with 3+ exchanges (seed 004).

    One row per conversation: system (NPC persona) + alternating user (player) / assistant (NPC)
    messages in turn order, consecutive same-speaker turns merged; metadata holds the seed's
    Schema 1 fields and the player_key; split_group is the player_key, so a player never spans
    train and test. Dropped conversations are counted by reason.
    """
    rows, stats = build_dialogues(events)
    dropped = {reason: stats.dropped.get(reason, 0) for reason in DROP_REASONS}
    context.add_output_metadata(
        {
            **rules_metadata(SOURCE),
            "dialogue_turns": stats.turns,
            "conversations": stats.conversations,
            "conversations_kept": stats.kept,
            "conversations_dropped": sum(dropped.values()),
            "dropped_by_reason": funnel(dropped),
            **{f"dropped_{reason}": count for reason, count in dropped.items()},
            "merged_turns": stats.merged_turns,
            "trimmed_leading_npc_turns": stats.trimmed_leading_npc_turns,
            "trimmed_trailing_player_turns": stats.trimmed_trailing_player_turns,
            "quality_score": histogram(rows.get_column("quality_score")),
            "preview": preview(rows.select("id", "source_ref", "quality_score", "metadata")),
        }
    )
    return rows
