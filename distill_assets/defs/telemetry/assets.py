"""Telemetry assets: raw envelopes → bronze → validation → silver → triage, dialogues.

See docs/sources/telemetry.md.

Daily: bronze events + quarantine, `validation`, silver `accepted_events`, `triage`, `dialogues`.
A day's steps read the player state (deletion requests, consent decisions, known players) of the
bronze partitions up to and including their own day (`UP_TO_THE_DAY`), never a later day's nor a
table a release wrote, so every run of a day gives the same rows
(docs/sources/telemetry.md#one-story-per-run). With the release, from all history (GLOBAL_TAG):
deletions, the deletion log (rewriting earlier partitions), consent, the exclusion list, player
quality, payouts.
"""

import inspect
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import dagster as dg
import polars as pl

from distill_assets.contracts import telemetry as contract
from distill_assets.contracts.published import SUBJECT_COLUMN
from distill_assets.defs.ingest import (
    QUARANTINE_TABLE,
    bronze_outs,
    ingest_metadata,
)
from distill_assets.defs.jobs import GLOBAL_TAG
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.player_ids import DEVELOPMENT_SOURCE, PlayerIdHasher
from distill_assets.defs.resources import DistillSettings, StagedParquet
from distill_assets.defs.shards import (
    ingest_day,
    merge_description,
    shard_assets,
    shard_count,
    shard_keys,
)
from distill_assets.defs.telemetry import (
    deletion,
    mention_index,
    privacy,
    silver_shards,
    triage_shards,
    validation_shards,
    witness,
)
from distill_assets.defs.telemetry.dialogues import DROP_REASONS, build_dialogues, gate_dialogues
from distill_assets.defs.telemetry.events import BRONZE_SCHEMA, SILVER_SCHEMA
from distill_assets.defs.telemetry.payouts import payouts
from distill_assets.defs.telemetry.taxonomy import class_counts, with_value_class
from distill_assets.defs.telemetry.triage import (
    PASS_DECISIONS,
    TRIAGE_SCHEMA,
    pass_rates,
    write_triage,
)
from distill_assets.defs.telemetry.trust import (
    event_flags,
    player_quality,
    trust_signals,
    trust_walk,
    trust_weighted,
)
from distill_assets.defs.telemetry.validation import VALIDATION_SCHEMA, validate_events
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import (
    global_path,
    local_file,
    partition_files,
    partition_path,
    scan_partition,
    scan_partitions,
)
from distill_assets.lib.metadata import column_counts, funnel, histogram, preview
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.lib.startup import DEVELOPMENT_KEY_WARNING, announce, announced
from distill_assets.rules import rules_metadata, rules_version

SOURCE = "telemetry"
EVENTS = "events"
DIALOGUES = "dialogues"
VALIDATION = "validation"
ACCEPTED = "accepted_events"
TRIAGE = "triage"
DELETIONS = "deletions"
DELETION_LOG = "deletion_log"
CONSENT = "consent"
EXCLUSIONS = "exclusions"
PLAYER_QUALITY = "player_quality"
PAYOUTS = "payouts"
# "every day up to and including this one": a window start further back than any partition
# (Dagster drops the days before the first partition)
EVERY_EARLIER_DAY = 100 * 366
UP_TO_THE_DAY = dg.TimeWindowPartitionMapping(
    start_offset=-EVERY_EARLIER_DAY, end_offset=0, allow_nonexistent_upstream_partitions=True
)
# the bronze a day's step reads its player state from: Dagster knows it, so a backfill runs a
# day's steps after the bronze of every earlier day in it, and an earlier day's re-ingest marks
# the later days' steps as changed upstream
BRONZE_UP_TO_THE_DAY = dg.AssetDep(dg.AssetKey([SOURCE, EVENTS]), partition_mapping=UP_TO_THE_DAY)
# "every day before this one": a feed table's novelty index reads its own earlier partitions
BEFORE_THE_DAY = dg.TimeWindowPartitionMapping(
    start_offset=-EVERY_EARLIER_DAY, end_offset=-1, allow_nonexistent_upstream_partitions=True
)


def earlier_days_of(table: str) -> dg.AssetDep:
    """Return the dependency of a feed table on its own earlier partitions (its novelty index).

    Declared so that Dagster runs a backfill's days of the table in date order and marks later
    days changed upstream when an earlier day is rewritten.
    """
    return dg.AssetDep(dg.AssetKey([SOURCE, table]), partition_mapping=BEFORE_THE_DAY)


def parse_params(hasher: PlayerIdHasher) -> tuple[dict[str, object], str]:
    """Return the parse SQL's bind parameters and where the player-id key came from."""
    key = hasher.resolved()
    params: dict[str, object] = key.sql_params()
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
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    deps=shard_keys(SOURCE),
)
def telemetry_bronze(
    context: dg.AssetExecutionContext, settings: DistillSettings, player_id_hasher: PlayerIdHasher
):
    """Parse a day of raw telemetry JSONL into bronze events and quarantine, pseudonymizing ids.

    Validated in DuckDB against `contracts.telemetry`: envelope fields, event type, timestamps,
    payload object, and the dialogue_turn fields the dialogues need. A repeated event_id keeps its
    first valid record (by file, line); later copies go to quarantine as `duplicate_event_id`.
    With `DISTILL_INGEST_SHARDS` above 1, merge the day's shard steps instead (`defs.shards`).
    """
    cfg = settings.resolved()
    params, key_source = parse_params(player_id_hasher)
    if key_source == DEVELOPMENT_SOURCE and not announced(DEVELOPMENT_KEY_WARNING):
        for line in announce([DEVELOPMENT_KEY_WARNING]):
            context.log.warning(line)
    result = ingest_day(
        context,
        contract.RAW,
        list_raw_files(cfg.raw_root, SOURCE, context.partition_key),
        cfg,
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


telemetry_shards = shard_assets(
    contract.RAW,
    lambda raw_root, day: list_raw_files(raw_root, SOURCE, day),
    bronze_exclude=("line",),
    params=lambda context: parse_params(context.resources.player_id_hasher)[0],
    resource_keys=frozenset({"player_id_hasher"}),
)


@dg.asset(
    key=[SOURCE, DIALOGUES],
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    kinds={"polars"},
    # telemetry_trust and telemetry_taxonomy are not folded into the code version: `distill
    # stale` reports this asset's version as rules/telemetry.py's own (test_stale_backfill.py)
    code_version=rules_version(SOURCE),
    ins={"events": dg.AssetIn(key=[SOURCE, ACCEPTED])},
    deps=[dg.AssetKey([SOURCE, TRIAGE])],
)
def telemetry_dialogues(
    context: dg.AssetExecutionContext, settings: DistillSettings, events: pl.LazyFrame
) -> pl.DataFrame:
    """SFT feed rows (`sft` config) from player-NPC conversations with 3+ exchanges.

    See docs/sources/telemetry.md#dialogues.

    One row per conversation: system (NPC persona) + alternating user (player) / assistant (NPC)
    messages in turn order, consecutive same-speaker turns merged; metadata holds the seed's
    Schema 1 fields and the player_key; split_group is the player_key, so a player never spans
    train and test. Built from silver `accepted_events` (validated, de-identified), so a
    rejected event never reaches it; `subject` (`sft:<player_key>`) lets the release drop a
    player's rows on deletion or without sft consent. Dropped conversations are counted by reason.
    Only conversations triage passed (a turn processed or sampled) are published; the audited
    skips are evaluated (false-negative rate per action type in the metadata). Trust weighs the
    rows: metadata gains the player's trust at the time and the validation flags
    of the turns, quality_score is down-weighted by distrust, and rows below the trust floor are
    dropped (`rules/telemetry_trust.py`). A row a Witness reviewed carries its validation record
    (`witness.py`).
    """
    lake_root = settings.resolved().lake_root
    rows, stats = build_dialogues(events.rename({"event_time": "server_ts"}))
    triage_rows = scan_partition(lake_root, SOURCE, TRIAGE, context.partition_key)
    rows, gated = gate_dialogues(rows, events, triage_rows.cast(dict(TRIAGE_SCHEMA)))
    rows, below_floor = trust_weighted(
        rows.with_columns(pl.col("split_group").alias("player_key")),
        trust_history(lake_root, context.partition_key),
        event_flags(
            events.select("event_id", "event_type", "payload", "flag_checks"),
            "dialogue_turn",
            "conversation_id",
            "conversation:",
        ),
    )
    rows = with_value_class(rows.drop("player_key"), DIALOGUES).with_columns(
        privacy.subject("sft", pl.col("split_group")).alias(SUBJECT_COLUMN)
    )
    rows = witness.with_validation_records(
        rows, witness.read_decisions(settings.resolved().data_dir)
    )
    dropped = {reason: stats.dropped.get(reason, 0) for reason in DROP_REASONS}
    context.add_output_metadata(
        {
            **rules_metadata(SOURCE),
            "rules/telemetry_trust": rules_version("telemetry_trust"),
            "rules/telemetry_taxonomy": rules_version("telemetry_taxonomy"),
            "rules/telemetry_triage": rules_version("telemetry_triage"),
            "by_value_class": class_counts(rows),
            "dialogue_turns": stats.turns,
            "conversations": stats.conversations,
            "conversations_kept": stats.kept,
            "triage_by_verdict": column_counts(gated.verdicts, "triage"),
            "dropped_by_triage": gated.dropped,
            **{f"audited/{kind}": found["audited"] for kind, found in gated.audit.items()},
            **{
                f"audit_false_negative_rate/{kind}": found["rate"]
                for kind, found in gated.audit.items()
            },
            "dropped_below_trust_floor": below_floor,
            "conversations_dropped": sum(dropped.values()),
            "dropped_by_reason": funnel(dropped),
            **{f"dropped_{reason}": count for reason, count in dropped.items()},
            "merged_turns": stats.merged_turns,
            "trimmed_leading_npc_turns": stats.trimmed_leading_npc_turns,
            "trimmed_trailing_player_turns": stats.trimmed_trailing_player_turns,
            "quality_score": histogram(rows.get_column("quality_score")),
            # no metadata or text: the player_key and a player's words stay out of the instance
            "preview": preview(rows.select("id", "source_ref", "quality_score")),
        }
    )
    return rows


def _deleted_players(lake_root: str) -> pl.LazyFrame:
    """Players the global deletions table removes from everything (for the global steps only)."""
    path = global_path(lake_root, SOURCE, DELETIONS)
    if not path.exists():
        return pl.LazyFrame(schema={"player_key": pl.String()})
    return privacy.deleted_players(pl.scan_parquet(str(path)))


def _accepted_history(lake_root: str) -> pl.LazyFrame:
    """Every partition of silver, read through deletions and withdrawals (for the global tables).

    `deletion_log` rewrites earlier partitions to drop deleted players and withdrawn data types;
    reading through the deletions and the withdrawals as well keeps the global tables right
    whatever order the two run in, so they depend on the requests themselves, not the rewrite.
    """
    silver = scan_partitions(lake_root, SOURCE, ACCEPTED, SILVER_SCHEMA)
    return privacy.without_withdrawn(
        silver.join(_deleted_players(lake_root), on="player_key", how="anti"),
        _bronze(lake_root, _ACCOUNT_COLUMNS).filter(pl.col("event_type") == "consent"),
    )


def trust_history(lake_root: str, day: str) -> pl.DataFrame:
    """Return the trust walk over `day`'s silver (for trust at a feed row's time).

    Only the row's own day: a day's feed rows must not depend on which other days happen to be on
    disk already (each day's walk starts from the prior). Silver already left out the players
    deleted and the data types withdrawn up to that day; later requests remove rows from it.
    """
    return trust_walk(trust_signals(scan_partition(lake_root, SOURCE, ACCEPTED, day)))


def _bronze_up_to(lake_root: str, day: str, columns: tuple[str, ...]) -> pl.LazyFrame:
    """Return bronze `columns` of the partitions up to and including `day` (later files unread)."""
    scans = [
        pl.scan_parquet(f).select(*columns)
        for f in partition_files(lake_root, SOURCE, EVENTS)
        if Path(f).stem <= day
    ]
    if not scans:
        return pl.LazyFrame(schema={c: BRONZE_SCHEMA[c] for c in columns})
    return pl.concat(scans, how="diagonal_relaxed")


def _account_events_up_to(lake_root: str, day: str) -> pl.LazyFrame:
    """Return the consent and deletion-request events ingested on `day` or before."""
    return _bronze_up_to(lake_root, day, _ACCOUNT_COLUMNS).filter(
        pl.col("event_type").is_in(["consent", "deletion_request"])
    )


def deleted_up_to(lake_root: str, day: str) -> pl.LazyFrame:
    """Return the players a deletion request (scope `all`) ingested on `day` or before removes."""
    requests = privacy.deletion_requests(_account_events_up_to(lake_root, day))
    return privacy.deleted_players(requests.lazy())


def exclusions_up_to(lake_root: str, day: str) -> pl.DataFrame:
    """Return the exclusion rows (`privacy.exclusions`) as the requests up to `day` make them.

    The state at the end of `day`: the deletion requests and the latest consent decisions
    ingested on it or before, over the players known by then.
    """
    account = _account_events_up_to(lake_root, day)
    return privacy.exclusions(
        _bronze_up_to(lake_root, day, ("player_key",)).unique(),
        privacy.consent_state(account).lazy(),
        privacy.deletion_requests(account).lazy(),
    )


def validation_shard_key(shard: int) -> dg.AssetKey:
    """Return the key of validation shard step `shard` (from 0)."""
    return dg.AssetKey([SOURCE, f"{VALIDATION}_shard_{shard}"])


def _validation_day(lake_root: str, day: str) -> validation_shards.ValidationDay:
    """Return a day's validation inputs (bronze, deleted players) and its shards' staging."""
    return validation_shards.ValidationDay(
        bronze=scan_partition(lake_root, SOURCE, EVENTS, day),
        deleted=deleted_up_to(lake_root, day),
        staging=validation_shards.validation_shard_dir(lake_root, day),
        fingerprint=validation_shards.validation_fingerprint(lake_root, day),
    )


def validation_shard_asset(shard: int, shards: int) -> dg.AssetsDefinition:
    """Return validation shard step `shard` of `shards` (`validation_shards.write_shard`)."""

    @dg.asset(
        key=validation_shard_key(shard),
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        kinds={"polars"},
        code_version=rules_version("telemetry_validation"),
        deps=[BRONZE_UP_TO_THE_DAY],
        description=f"Shard {shard + 1} of {shards} of the day's validation: the players whose "
        "stable bucket of the player_key is this shard's, their bronze rows checked from a local "
        "copy; their rows and the conversation and episode ids they judged are staged for "
        f"`{SOURCE}/{VALIDATION}`, which merges them (the same bytes) and removes them.",
    )
    def shard_step(
        context: dg.AssetExecutionContext, settings: DistillSettings
    ) -> dg.MaterializeResult:
        """Validate and stage the shard's players (counts in metadata)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        written = validation_shards.write_shard(
            _validation_day(lake_root, day), shard=shard, shards=shards
        )
        return dg.MaterializeResult(
            metadata={
                "shard": f"{shard + 1} of {shards}",
                "failed_checks": written.rows,
                "group_ids": written.ids,
            }
        )

    return shard_step


# what `telemetry/validation` holds: its description (a sharded day's merge adds how it is made)
VALIDATION_DESCRIPTION = """One row per event and validation check it failed (anti-gaming layer).

See docs/sources/telemetry.md#validation.

Columns: event_id, player_key, event_type, check, category (timestamp_sanity |
action_plausibility | bot_signature), decision (flag | reject), reason. Impossible actions and
insane timestamps are flagged for review; a bot signature rejects every event of the player
that day. Rules: `rules/telemetry_validation.py`. Players a deletion request ingested on the
day or before removed are left out (the day's bronze and the earlier days' requests are read
from the lake: `BRONZE_UP_TO_THE_DAY`).
"""


def validation_asset(shards: int) -> dg.AssetsDefinition:
    """Return `telemetry/validation`; with `shards` above 1, the shards' merge."""
    merge = merge_description(
        shards,
        "validation shard steps",
        "validates",
        "validation_shards",
        when="they are missing or stale or a conversation or episode id spans shards",
    )

    @dg.asset(
        key=[SOURCE, VALIDATION],
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        kinds={"polars"},
        code_version=rules_version("telemetry_validation"),
        deps=[
            BRONZE_UP_TO_THE_DAY,
            *(validation_shard_key(k) for k in range(shards) if shards > 1),
        ],
        description=inspect.cleandoc(VALIDATION_DESCRIPTION) + merge,
    )
    def telemetry_validation(
        context: dg.AssetExecutionContext, settings: DistillSettings
    ) -> pl.DataFrame:
        """Validate the day (the asset's description says what the rows hold)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        sharding: dict[str, object] = {}
        if shards == 1:
            events = scan_partition(lake_root, SOURCE, EVENTS, day)
            rows = validate_events(
                events.join(deleted_up_to(lake_root, day), on="player_key", how="anti")
            )
        else:
            merged = validation_shards.merge_or_compute(_validation_day(lake_root, day), shards)
            if merged.not_merged is not None:
                context.log.info(f"{merged.not_merged}: validated the day here")
                sharding["not_merged"] = merged.not_merged
            rows, sharding["shards"] = merged.rows, merged.merged
        context.add_output_metadata(
            {
                **rules_metadata("telemetry_validation"),
                "failed_checks": rows.height,
                "by_check": column_counts(rows, "check"),
                "rejected_events": rows.filter(pl.col("decision") == "reject")
                .get_column("event_id")
                .n_unique(),
                "flagged_events": rows.filter(pl.col("decision") == "flag")
                .get_column("event_id")
                .n_unique(),
                "preview": preview(rows.drop("player_key")),
                **sharding,
            }
        )
        return rows.select(VALIDATION_SCHEMA.names())

    return telemetry_validation


def validation_assets(shards: int) -> list[dg.AssetsDefinition]:
    """Return the daily steps of telemetry validation: `validation` (and, sharded, its shards).

    With `shards` above 1: the shard steps it merges (`validation_shards`).
    """
    if shards == 1:
        return [validation_asset(1)]
    return [*(validation_shard_asset(k, shards) for k in range(shards)), validation_asset(shards)]


telemetry_validation_steps = validation_assets(shard_count())


def silver_identity(lake_root: str, day: str, hasher: PlayerIdHasher) -> privacy.SilverIdentity:
    """Return the player state a day's silver reads: the bronze partitions up to `day`'s."""
    return privacy.SilverIdentity(
        pads=hasher.resolved().sql_params(),
        known=_bronze_up_to(lake_root, day, ("player_key",)),
        consent_events=privacy.consent_events(
            _account_events_up_to(lake_root, day).filter(pl.col("event_type") == "consent")
        ),
    )


def silver_tokens_key(piece: int) -> dg.AssetKey:
    """Return the key of the step staging piece `piece` of a day's known-player tokens."""
    return dg.AssetKey([SOURCE, f"{ACCEPTED}_tokens_{piece}"])


SILVER_KEYS = dg.AssetKey([SOURCE, f"{ACCEPTED}_keys"])


def silver_shard_key(shard: int) -> dg.AssetKey:
    """Return the key of silver shard step `shard` (from 0)."""
    return dg.AssetKey([SOURCE, f"{ACCEPTED}_shard_{shard}"])


def _silver_day(
    lake_root: str, day: str, hasher: PlayerIdHasher, events: Path
) -> silver_shards.SilverDay:
    """Return a day's silver inputs and staging for its shard steps and merge."""
    return silver_shards.SilverDay(
        events_file=events,
        validation=scan_partition(lake_root, SOURCE, VALIDATION, day),
        deleted=deleted_up_to(lake_root, day),
        identity=silver_identity(lake_root, day, hasher),
        staging=silver_shards.silver_shard_dir(lake_root, day),
        fingerprint=silver_shards.silver_fingerprint(lake_root, day),
        tokens_fingerprint=silver_shards.silver_fingerprint(lake_root, day, validation=False),
        mentions=mention_index.day_index(lake_root, day),
    )


def _silver_step(
    key: dg.AssetKey, deps: list[dg.AssetKey | dg.AssetDep], description: str
) -> Callable[[Callable[..., dg.MaterializeResult]], dg.AssetsDefinition]:
    """Return the decorator of a step of a sharded day's silver (tokens, keys, shards)."""
    return dg.asset(
        key=key,
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        kinds={"duckdb", "parquet"},
        code_version=rules_version("telemetry_privacy"),
        deps=[BRONZE_UP_TO_THE_DAY, *deps],
        description=description,
    )


def silver_tokens_asset(piece: int, pieces: int) -> dg.AssetsDefinition:
    """Return the step staging piece `piece` of `pieces` of a day's known-player tokens."""

    @_silver_step(
        silver_tokens_key(piece),
        [],
        f"Piece {piece + 1} of {pieces} of the day's bronze telemetry (a range of its row "
        "groups, about 1/N of the bytes): the tokens of its texts that name a known player, "
        "staged for the silver shards, which redact with the union of the pieces "
        f"(`silver_shards.stage_tokens`); removed by `{SOURCE}/{ACCEPTED}`. Nothing staged for "
        "a day of one sort range.",
    )
    def tokens(
        context: dg.AssetExecutionContext,
        settings: DistillSettings,
        player_id_hasher: PlayerIdHasher,
    ) -> dg.MaterializeResult:
        """Stage the piece's known-player tokens (their count in metadata, never the tokens)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        with local_file(partition_path(lake_root, SOURCE, EVENTS, day)) as events:
            found = silver_shards.stage_tokens(
                events,
                silver_identity(lake_root, day, player_id_hasher),
                silver_shards.silver_shard_dir(lake_root, day),
                silver_shards.silver_fingerprint(lake_root, day, validation=False),
                piece=piece,
                pieces=pieces,
            )
        return dg.MaterializeResult(
            metadata={"staged": found is not None, "known_tokens": found or 0}
        )

    return tokens


def silver_keys_asset() -> dg.AssetsDefinition:
    """Return the step staging a day's accepted keys for its silver shards."""

    @_silver_step(
        SILVER_KEYS,
        [dg.AssetKey([SOURCE, VALIDATION])],
        "The day's accepted telemetry events and their order (event_id, event_seq: "
        "`select_accepted_keys.sql`, day-wide), staged for the silver shards "
        f"(`silver_shards.stage_keys`); removed by `{SOURCE}/{ACCEPTED}`. Nothing staged for a day "
        "of one sort range.",
    )
    def telemetry_silver_keys(
        context: dg.AssetExecutionContext,
        settings: DistillSettings,
        player_id_hasher: PlayerIdHasher,
    ) -> dg.MaterializeResult:
        """Stage the day's accepted keys (their count in metadata)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        with local_file(partition_path(lake_root, SOURCE, EVENTS, day)) as events:
            rows = silver_shards.stage_keys(_silver_day(lake_root, day, player_id_hasher, events))
        return dg.MaterializeResult(
            metadata={"staged": rows is not None, "accepted_events": rows or 0}
        )

    return telemetry_silver_keys


def silver_shard_asset(shard: int, shards: int) -> dg.AssetsDefinition:
    """Return silver shard step `shard` of `shards` (`silver_shards.write_shard`)."""

    @_silver_step(
        silver_shard_key(shard),
        [
            dg.AssetKey([SOURCE, VALIDATION]),
            SILVER_KEYS,
            *(silver_tokens_key(piece) for piece in range(shards)),
        ],
        f"Shard {shard + 1} of {shards} of the day's silver telemetry: a contiguous run of its "
        "event_seq ranges (about 1/N of the rows), de-identified with the day's tokens and "
        f"sorted, one staged file per range; `{SOURCE}/{ACCEPTED}` copies them in order into "
        "the day's file (the same bytes) and removes them.",
    )
    def shard_step(
        context: dg.AssetExecutionContext,
        settings: DistillSettings,
        player_id_hasher: PlayerIdHasher,
    ) -> dg.MaterializeResult:
        """Write and stage the shard's sorted ranges (which ones in metadata)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        with local_file(partition_path(lake_root, SOURCE, EVENTS, day)) as events:
            written = silver_shards.write_shard(
                _silver_day(lake_root, day, player_id_hasher, events), shard=shard, shards=shards
            )
        if written.not_staged is not None:
            context.log.info(f"{written.not_staged}: staged nothing")
        cover = written.cover
        return dg.MaterializeResult(
            metadata={
                "shard": f"{shard + 1} of {shards}",
                "staged": cover is not None,
                "ranges": f"{cover.first}..{cover.end}" if cover is not None else "",
                "rows": sum(cover.rows) if cover is not None else 0,
            }
        )

    return shard_step


ACCEPTED_DESCRIPTION = """Silver telemetry: the events validation did not reject, de-identified.

See docs/sources/telemetry.md#silver.

Columns: event_id, event_type, player_key, session_id, event_time (server time floored to
the privacy bucket), event_seq (order within the partition), payload (precise location
removed), location_cell (generalised grid cell), flagged + flag_checks (validation flags
kept for review), source_ref (bronze file:line). No client clock, no unknown envelope
fields. Players a deletion request ingested on the day or before removed are left out,
and so are events of a data type (dialogue → sft, decision → dpo, trajectory step and
episode end → rlds, reasoning → cot) their player had not consented to at the event's
time or withdrew by the day's end (requests of later days remove rows with the release:
`deletion_log`). Player ids in payload text (any player known by the day's end, any
case, and any token of the game's id shape) are replaced by `[REDACTED_PLAYER_ID]`.
Rules: `rules/telemetry_privacy.py`. DuckDB reads bronze and writes silver
(`privacy.write_accepted_events`): the payloads never pass through Python. The keys of the
known players the day's texts name go to its mention index
(`<lake>/_index/telemetry/mentions/<day>.parquet`, keys only), which spares the deletion log
the partitions that name no newly deleted player (docs/privacy.md#the-mention-index).
"""


def accepted_events_asset(shards: int) -> dg.AssetsDefinition:
    """Return silver `telemetry/accepted_events`; with `shards` above 1, the shards' merge."""
    merge = merge_description(shards, "shard steps", "computes", "silver_shards")

    @dg.asset(
        key=[SOURCE, ACCEPTED],
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        kinds={"duckdb", "parquet"},
        code_version=rules_version("telemetry_privacy"),
        ins={"validation": dg.AssetIn(key=[SOURCE, VALIDATION])},
        deps=[
            BRONZE_UP_TO_THE_DAY,
            *(silver_shard_key(k) for k in range(shards) if shards > 1),
        ],
        description=inspect.cleandoc(ACCEPTED_DESCRIPTION) + merge,
    )
    def telemetry_accepted_events(
        context: dg.AssetExecutionContext,
        settings: DistillSettings,
        player_id_hasher: PlayerIdHasher,
        validation: pl.LazyFrame,
    ) -> StagedParquet:
        """Write the day's silver events (the asset's description says what they hold)."""
        cfg = settings.resolved()
        day = context.partition_key
        target = working_dir(SOURCE) / f"{ACCEPTED}.parquet"
        bronze = partition_path(cfg.lake_root, SOURCE, EVENTS, day)
        sharding: dict[str, int] = {}
        with local_file(bronze) as events:
            if shards == 1:
                rows = privacy.write_accepted_events(
                    events,
                    validation,
                    deleted_up_to(cfg.lake_root, day),
                    target,
                    silver_identity(cfg.lake_root, day, player_id_hasher),
                    mentions=mention_index.day_index(cfg.lake_root, day),
                )
            else:
                silver_day = replace(
                    _silver_day(cfg.lake_root, day, player_id_hasher, events), validation=validation
                )
                merged = silver_shards.merge_or_compute(silver_day, target, shards)
                if merged.not_merged is not None:
                    context.log.info(f"{merged.not_merged}: computed the day's silver here")
                rows, sharding = merged.rows, {"shards": merged.merged}
        summary = pl.read_parquet(target, columns=["event_type", "flagged"])
        context.add_output_metadata(
            {
                **rules_metadata("telemetry_privacy"),
                "accepted_events": rows,
                "flagged_events": int(summary.get_column("flagged").sum()),
                "by_event_type": column_counts(summary, "event_type"),
                **sharding,
            }
        )
        return StagedParquet(target)

    return telemetry_accepted_events


def day_split_steps(
    shards: int,
    merge: Callable[[int], dg.AssetsDefinition],
    piece: Callable[[int, int], dg.AssetsDefinition],
    day_wide: Callable[[], dg.AssetsDefinition],
    shard: Callable[[int, int], dg.AssetsDefinition],
) -> list[dg.AssetsDefinition]:
    """Return a step split within the day: N pieces, the day-wide step, N shards, the merge.

    One shard: the merge step alone, which computes the day itself.
    """
    if shards == 1:
        return [merge(1)]
    return [
        *(piece(k, shards) for k in range(shards)),
        day_wide(),
        *(shard(k, shards) for k in range(shards)),
        merge(shards),
    ]


def silver_assets(shards: int) -> list[dg.AssetsDefinition]:
    """Return the daily steps of silver telemetry: `accepted_events` (and, sharded, the rest).

    With `shards` above 1: the token pieces, the keys and the shard steps it merges
    (`silver_shards`).
    """
    return day_split_steps(
        shards, accepted_events_asset, silver_tokens_asset, silver_keys_asset, silver_shard_asset
    )


telemetry_silver = silver_assets(shard_count())


def triage_candidates_key(piece: int) -> dg.AssetKey:
    """Return the key of the step staging piece `piece` of a day's triage candidates."""
    return dg.AssetKey([SOURCE, f"{TRIAGE}_candidates_{piece}"])


TRIAGE_CONTEXT = dg.AssetKey([SOURCE, f"{TRIAGE}_context"])


def triage_shard_key(shard: int) -> dg.AssetKey:
    """Return the key of triage shard step `shard` (from 0)."""
    return dg.AssetKey([SOURCE, f"{TRIAGE}_shard_{shard}"])


def _triage_day(lake_root: str, day: str) -> triage_shards.TriageDay:
    """Return a day's triage staging for its pieces, context, shards and merge."""
    return triage_shards.TriageDay(
        staging=triage_shards.triage_shard_dir(lake_root, day),
        fingerprint=triage_shards.triage_fingerprint(
            partition_path(lake_root, SOURCE, ACCEPTED, day)
        ),
    )


def _triage_step(
    key: dg.AssetKey, deps: list[dg.AssetKey], description: str
) -> Callable[[Callable[..., dg.MaterializeResult]], dg.AssetsDefinition]:
    """Return the decorator of a step of a sharded day's triage (candidates, context, shards)."""
    return dg.asset(
        key=key,
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        kinds={"duckdb", "polars"},
        code_version=rules_version("telemetry_triage"),
        deps=[dg.AssetKey([SOURCE, ACCEPTED]), *deps],
        description=description,
    )


def triage_candidates_asset(piece: int, pieces: int) -> dg.AssetsDefinition:
    """Return the step staging piece `piece` of `pieces` of a day's triage candidates."""

    @_triage_step(
        triage_candidates_key(piece),
        [],
        f"Piece {piece + 1} of {pieces} of the day's silver telemetry (a range of its row "
        "groups, about 1/N of the bytes): its triage candidates with their payload fields and "
        "its peer predictions, staged for the day's context and triage shard "
        f"(`triage_shards.stage_candidates`); removed by `{SOURCE}/{TRIAGE}`.",
    )
    def candidates(
        context: dg.AssetExecutionContext, settings: DistillSettings
    ) -> dg.MaterializeResult:
        """Stage the piece's candidates (their count in metadata)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        with local_file(partition_path(lake_root, SOURCE, ACCEPTED, day)) as silver:
            rows = triage_shards.stage_candidates(
                _triage_day(lake_root, day), silver, piece=piece, pieces=pieces
            )
        return dg.MaterializeResult(metadata={"candidates": rows})

    return candidates


def triage_context_asset(pieces: int) -> dg.AssetsDefinition:
    """Return the step staging a day's triage context for its shards."""

    @_triage_step(
        TRIAGE_CONTEXT,
        [triage_candidates_key(piece) for piece in range(pieces)],
        "The day's triage context of every candidate (a player's karma, an episode's previous "
        "action and state, the first sighting of a game state, the peer predictions: "
        "`select_triage_context.sql`, day-wide), in silver order, staged for the triage shards "
        f"(`triage_shards.stage_context`); removed by `{SOURCE}/{TRIAGE}`.",
    )
    def telemetry_triage_context(
        context: dg.AssetExecutionContext, settings: DistillSettings
    ) -> dg.MaterializeResult:
        """Stage the day's context (its rows in metadata)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        rows = triage_shards.stage_context(_triage_day(lake_root, day), pieces)
        if rows is None:
            context.log.info("the day's candidate pieces are not staged: staged nothing")
        return dg.MaterializeResult(metadata={"staged": rows is not None, "candidates": rows or 0})

    return telemetry_triage_context


def triage_shard_asset(shard: int, shards: int) -> dg.AssetsDefinition:
    """Return triage shard step `shard` of `shards` (`triage_shards.write_shard`)."""

    @_triage_step(
        triage_shard_key(shard),
        [TRIAGE_CONTEXT, *(triage_candidates_key(piece) for piece in range(shards))],
        f"Shard {shard + 1} of {shards} of the day's triage: piece {shard + 1}'s candidates "
        f"judged with their rows of the day's context; `{SOURCE}/{TRIAGE}` writes the shards' "
        "rows in order into the day's file (the same bytes) and removes them.",
    )
    def shard_step(
        context: dg.AssetExecutionContext, settings: DistillSettings
    ) -> dg.MaterializeResult:
        """Judge and stage the shard's rows (their count in metadata)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        written = triage_shards.write_shard(_triage_day(lake_root, day), shard=shard, shards=shards)
        if written.not_staged is not None:
            context.log.info(f"{written.not_staged}: staged nothing")
        return dg.MaterializeResult(
            metadata={
                "shard": f"{shard + 1} of {shards}",
                "staged": written.rows is not None,
                "rows": written.rows or 0,
            }
        )

    return shard_step


# what `telemetry/triage` holds: its description (a sharded day's merge adds how it is made)
TRIAGE_DESCRIPTION = """Triage of candidate events before expensive processing \
(docs/sources/telemetry.md#triage).

One row per decision, trajectory step, reasoning and dialogue turn: event_id, player_key,
event_type, action_type, decision (process | sample | skip | audit), reason. Always-process
rules, a 15% stable-hash sample of high-entropy steps, skip rules and a 5% audit of skips:
`rules/telemetry_triage.py`. Pass rate per action type in metadata. The rows are written as
they are judged (`triage.write_triage`) and the metadata counted from the file, so memory
holds a batch, not the day.
"""


def triage_asset(shards: int) -> dg.AssetsDefinition:
    """Return `telemetry/triage`; with `shards` above 1, the shards' merge."""
    merge = merge_description(shards, "triage shard steps", "judges", "triage_shards")

    @dg.asset(
        key=[SOURCE, TRIAGE],
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        kinds={"polars"},
        code_version=rules_version("telemetry_triage"),
        ins={"events": dg.AssetIn(key=[SOURCE, ACCEPTED])},
        deps=[triage_shard_key(k) for k in range(shards) if shards > 1],
        description=inspect.cleandoc(TRIAGE_DESCRIPTION) + merge,
    )
    def telemetry_triage(
        context: dg.AssetExecutionContext, settings: DistillSettings, events: pl.LazyFrame
    ) -> StagedParquet:
        """Write the day's triage rows (the asset's description says what they hold)."""
        target = working_dir(f"{SOURCE}-{TRIAGE}") / f"{TRIAGE}.parquet"
        sharding: dict[str, int] = {}
        if shards == 1:
            candidates = write_triage(events, target)
        else:
            lake_root, day = settings.resolved().lake_root, context.partition_key
            merged = triage_shards.merge_or_compute(
                _triage_day(lake_root, day), events, target, shards
            )
            if merged.not_merged is not None:
                context.log.info(f"{merged.not_merged}: judged the day's triage here")
            candidates, sharding = merged.rows, {"shards": merged.merged}
        rows = pl.scan_parquet(target).select("action_type", "decision", "reason")
        rates = pass_rates(rows)
        context.add_output_metadata(
            {
                **rules_metadata("telemetry_triage"),
                "candidates": candidates,
                "passed": rows.select(pl.col("decision").is_in(PASS_DECISIONS).sum())
                .collect()
                .item(),
                "pass_rate": rates["all"],
                **{f"pass_rate/{kind}": rate for kind, rate in rates.items() if kind != "all"},
                "by_decision": column_counts(rows, "decision"),
                "by_reason": column_counts(rows, "reason"),
                **sharding,
            }
        )
        return StagedParquet(target)

    return telemetry_triage


def triage_assets(shards: int) -> list[dg.AssetsDefinition]:
    """Return the daily steps of telemetry triage: `triage` (and, sharded, the rest).

    With `shards` above 1: the candidate pieces, the context and the shard steps it merges
    (`triage_shards`).
    """
    return day_split_steps(
        shards,
        triage_asset,
        triage_candidates_asset,
        lambda: triage_context_asset(shards),
        triage_shard_asset,
    )


telemetry_triage_steps = triage_assets(shard_count())


def _bronze(lake_root: str, columns: tuple[str, ...]) -> pl.LazyFrame:
    return scan_partitions(lake_root, SOURCE, EVENTS, BRONZE_SCHEMA).select(*columns)


_ACCOUNT_COLUMNS = ("event_id", "event_type", "player_key", "server_ts", "client_ts", "payload")


@dg.asset(
    key=[SOURCE, DELETIONS],
    group_name=SOURCE,
    kinds={"polars"},
    tags=GLOBAL_TAG,
    code_version=rules_version("telemetry_privacy"),
    deps=[dg.AssetKey([SOURCE, EVENTS])],
)
def telemetry_deletions(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> pl.DataFrame:
    """Every deletion request of all history (global): request_id, player_key, scope, requested_at.

    Scope `all` removes the player from every table past bronze and from the release; a data type
    scope removes that type from the release. Daily tables past bronze read through this table.
    """
    lake_root = settings.resolved().lake_root
    rows = privacy.deletion_requests(_bronze(lake_root, _ACCOUNT_COLUMNS))
    context.add_output_metadata(
        {
            **rules_metadata("telemetry_privacy"),
            "requests": rows.height,
            # no player_key in metadata: the Dagster instance is not erased by a deletion
            "preview": preview(rows.drop("player_key")),
        }
    )
    return rows


@dg.asset(
    key=[SOURCE, DELETION_LOG],
    group_name=SOURCE,
    kinds={"polars"},
    tags=GLOBAL_TAG,
    ins={
        "deletions": dg.AssetIn(key=[SOURCE, DELETIONS]),
        "consent": dg.AssetIn(key=[SOURCE, CONSENT]),
    },
    deps=[dg.AssetKey([SOURCE, table]) for table in deletion.ERASED_TABLES],
)
def telemetry_deletion_log(
    context: dg.AssetExecutionContext,
    settings: DistillSettings,
    player_id_hasher: PlayerIdHasher,
    deletions: pl.DataFrame,
    consent: pl.DataFrame,
) -> pl.DataFrame:
    """Apply deletions to every written partition, bronze and quarantine included, and log it.

    Rewrites each partition of bronze events (all but the request itself), quarantine (raw lines
    holding the player's key), validation, accepted_events, triage, dialogues and the training
    tables that still holds a deleted player's rows (atomically), then logs per request:
    request_id, player_key, scope, requested_at, rows_removed (JSON: table -> rows),
    rows_removed_total, release_before (latest version when logged), first_excluded_in (the
    first release published after it) and rows_still_held (JSON: store -> rows found after the
    removal, the Dagster materialization metadata included; all zero proves the erasure). Every
    materialization, check evaluation and tag in the Dagster instance that names a deleted
    player's key, of every run, is rewritten with the key replaced (`instance_rows_erased`): for
    a request logged for the first time, and for any player a materialization still names.
    A consent withdrawal (latest decision for a data type) removes that type's rows from silver
    and the training tables the same way (counted in `withdrawn_rows_removed`). For a request
    logged for the first time, the player's raw id written by others in bronze payloads and
    quarantined lines is replaced too (`mentions_redacted`); a bronze partition whose mention
    index (written by silver) says it names none of them is not scanned (`mention_index`), and
    the indexes are re-stamped after the rewrites.
    """
    cfg = settings.resolved()
    players = privacy.deleted_players(deletions.lazy()).collect().get_column("player_key").to_list()
    previous_path = global_path(cfg.lake_root, SOURCE, DELETION_LOG)
    previous = pl.read_parquet(str(previous_path)) if previous_path.exists() else None
    logged = set() if previous is None else set(previous.get_column("player_key").to_list())
    new = [p for p in players if p not in logged]
    # planned before bronze is rewritten: a rewrite changes the mention indexes' fingerprints
    plan = mention_index.plan_redaction(cfg.lake_root, new)
    removed = deletion.remove_players(cfg.lake_root, players)
    mentions = deletion.redact_mentions(
        cfg.lake_root, new, player_id_hasher.resolved().sql_params(), skipped=plan.skipped
    )
    mention_index.restamp(cfg.lake_root, plan, new)
    withdrawn = deletion.remove_withdrawn(
        cfg.lake_root, consent.filter(~pl.col("granted")).select("player_key", "data_type")
    )
    asset_keys = sorted(context.instance.get_asset_keys(), key=str)
    named = deletion.materializations_naming(context.instance, asset_keys, players)
    # the instance is rewritten for a request logged for the first time, and again for any player
    # a materialization still names (one scan finds them; a second proves the rewrite)
    found = named.filter(pl.col("rows") > 0).get_column("player_key").to_list()
    erased = deletion.erase_from_instance(
        context.instance, [p for p in players if p not in logged or p in found]
    )
    if found:
        named = deletion.materializations_naming(context.instance, asset_keys, players)
    remaining = pl.concat([deletion.remaining_rows(cfg.lake_root, players), named])
    log = deletion.deletion_log(
        deletions, previous, removed, Path(cfg.hub_root) / cfg.dataset_name, remaining
    )
    context.add_output_metadata(
        {
            "requests": log.height,
            "rows_still_held": int(remaining.get_column("rows").sum()),
            "rows_removed_now": int(removed.get_column("rows").sum()),
            "withdrawn_rows_removed": int(withdrawn.get_column("rows").sum()),
            "mentions_redacted": mentions,
            # bronze partitions whose mention index spared them the scan
            "mention_scans_skipped": len(plan.skipped),
            "instance_rows_erased": erased,
            "removed_by_table": funnel(
                {
                    t: int(n)
                    for t, n in removed.group_by("table").agg(pl.col("rows").sum()).iter_rows()
                },
                "table",
            ),
        }
    )
    return log


@dg.asset(
    key=[SOURCE, CONSENT],
    group_name=SOURCE,
    kinds={"polars"},
    tags=GLOBAL_TAG,
    code_version=rules_version("telemetry_privacy"),
    deps=[dg.AssetKey([SOURCE, EVENTS]), dg.AssetKey([SOURCE, DELETIONS])],
)
def telemetry_consent(context: dg.AssetExecutionContext, settings: DistillSettings) -> pl.DataFrame:
    """Each player's consent per data type (sft, dpo, rlds, cot), the latest consent event winning.

    Columns: player_key, data_type, granted, decided_at (bucketed), event_id. A player with no row
    for a type has the default (no consent, `rules/telemetry_privacy.py`). Deleted players are
    left out (their removal is listed by `exclusions`).
    """
    lake_root = settings.resolved().lake_root
    events = _bronze(lake_root, _ACCOUNT_COLUMNS).join(
        _deleted_players(lake_root), on="player_key", how="anti"
    )
    rows = privacy.consent_state(events)
    context.add_output_metadata(
        {
            **rules_metadata("telemetry_privacy"),
            "players": rows.get_column("player_key").n_unique(),
            "granted": int(rows.get_column("granted").sum()),
            "withdrawn": int((~rows.get_column("granted")).sum()),
        }
    )
    return rows


@dg.asset(
    key=[SOURCE, EXCLUSIONS],
    group_name=SOURCE,
    kinds={"polars"},
    tags=GLOBAL_TAG,
    code_version=rules_version("telemetry_privacy"),
    ins={
        "deletions": dg.AssetIn(key=[SOURCE, DELETIONS]),
        "consent": dg.AssetIn(key=[SOURCE, CONSENT]),
    },
)
def telemetry_exclusions(
    context: dg.AssetExecutionContext,
    settings: DistillSettings,
    deletions: pl.DataFrame,
    consent: pl.DataFrame,
) -> pl.DataFrame:
    """Telemetry subjects the release must drop (removal by subject, `EXCLUSION_SCHEMA`).

    Subjects are `<data type>:<player_key>`: every type of a deleted player (reason
    `deletion_request`), and every type a known player has not consented to (`no_consent`).
    """
    players = _bronze(settings.resolved().lake_root, ("player_key",)).unique()
    rows = privacy.exclusions(players, consent.lazy(), deletions.lazy())
    context.add_output_metadata(
        {"excluded_subjects": rows.height, "by_reason": column_counts(rows, "reason")}
    )
    return rows


@dg.asset(
    key=[SOURCE, PLAYER_QUALITY],
    group_name=SOURCE,
    kinds={"polars"},
    tags=GLOBAL_TAG,
    code_version=rules_version("telemetry_trust"),
    deps=[
        dg.AssetKey([SOURCE, DELETIONS]),
        dg.AssetKey([SOURCE, ACCEPTED]),
        dg.AssetKey([SOURCE, TRIAGE]),
        dg.AssetKey([SOURCE, VALIDATION]),
    ],
)
def telemetry_player_quality(
    context: dg.AssetExecutionContext, settings: DistillSettings
) -> pl.DataFrame:
    """Player trust and quality from all history in event order (global).

    See docs/sources/telemetry.md#trust.

    Columns: player_key, trust_score, gold_standard_accuracy, peer_prediction_score,
    total_contributions (triage candidates), high_value_contributions (processed ones), flagged,
    flag_reasons (gold_accuracy_below_70, bot_signature). Rules: `rules/telemetry_trust.py`.
    """
    lake_root = settings.resolved().lake_root
    silver = _accepted_history(lake_root)
    walk = trust_walk(trust_signals(silver))
    contributions = privacy.without_withdrawn(
        scan_partitions(lake_root, SOURCE, TRIAGE, TRIAGE_SCHEMA),
        _bronze(lake_root, _ACCOUNT_COLUMNS).filter(pl.col("event_type") == "consent"),
    ).select("player_key", (pl.col("decision") == "process").alias("high_value"))
    bots = (
        scan_partitions(lake_root, SOURCE, VALIDATION, VALIDATION_SCHEMA)
        .filter(pl.col("check") == "bot_signature")
        .select("player_key")
    )
    deleted = _deleted_players(lake_root)
    rows = player_quality(
        walk,
        contributions.join(deleted, on="player_key", how="anti"),
        bots.join(deleted, on="player_key", how="anti"),
    )
    context.add_output_metadata(
        {
            **rules_metadata("telemetry_trust"),
            "players": rows.height,
            "flagged": int(rows.get_column("flagged").sum()),
            "trust_score": histogram(rows.get_column("trust_score")),
        }
    )
    return rows


@dg.asset(
    key=[SOURCE, PAYOUTS],
    group_name=SOURCE,
    kinds={"polars", "duckdb"},
    tags=GLOBAL_TAG,
    code_version=rules_version("telemetry_trust"),
    deps=[dg.AssetKey([SOURCE, DELETIONS]), dg.AssetKey([SOURCE, ACCEPTED])],
)
def telemetry_payouts(context: dg.AssetExecutionContext, settings: DistillSettings) -> pl.DataFrame:
    """Payouts per player per ingest day: BaseRate * U * (1 + lambda * H) * C (global).

    See docs/sources/telemetry.md#payouts.

    Columns: player_key, partition, tasks, base, utility, novelty, trust, payout, zeroed_tasks,
    zero_reasons (why tasks paid 0: peer_mismatch). Recomputed from all history, with C the trust
    at each task's time, so it does not depend on the order days were processed in. Rules:
    `rules/telemetry_trust.py`.
    """
    silver = _accepted_history(settings.resolved().lake_root)
    rows = payouts(silver, trust_walk(trust_signals(silver)))
    context.add_output_metadata(
        {
            **rules_metadata("telemetry_trust"),
            "player_days": rows.height,
            "tasks": int(rows.get_column("tasks").sum()),
            "payout_total": float(rows.get_column("payout").sum()),
            "zeroed_tasks": int(rows.get_column("zeroed_tasks").sum()),
        }
    )
    return rows
