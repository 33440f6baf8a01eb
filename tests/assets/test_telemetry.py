"""Telemetry assets materialized in-process from the committed samples (real definitions)."""

import json
import re
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from distill_assets.contracts import telemetry as contract
from distill_assets.contracts.published import feed_schema
from distill_assets.defs.player_ids import DEVELOPMENT_KEY, KEY_ENV, player_key
from distill_assets.lib.settings import Settings
from tests.conftest import SAMPLE_DATES, SAMPLES, isolate, materialize

SELECTION = 'key:"telemetry/*"'
DAY = "2026-11-19"
# raw_files: the per-file integrity table the raw_reconciles check writes (issue 28)
TABLES = (
    "events",
    "quarantine",
    "raw_files",
    "validation",
    "accepted_events",
    "triage",
    "dialogues",
)
# issue 12's daily training-data tables
TRAINING_TABLES = (
    "decisions",
    "decision_pairs",
    "competence",
    "episodes",
    "episode_pairs",
    "reasoning",
)
GLOBAL_TABLES = (
    "deletions",
    "deletion_log",
    "consent",
    "exclusions",
    "player_quality",
    "payouts",
    "pair_exclusions",
    "witness_queue",
    "witness_exclusions",
)
# a 2026-11-19 sample conversation: an NPC greeting (trimmed), a player line sent as two turns
# (merged), and a quarantined copy of one turn with empty text
KNOWN_CONVERSATION = "conv_269f1eea8a26"
NINKASI_AMA = (
    "You are Ninkasi-ama, keeper of a beer house by the harbor of Ur. You hear every rumor the "
    "sailors bring, but you share them only with those who pay or earn your trust."
)


def lake_file(settings: Settings, table: str, day: str = DAY) -> Path:
    return Path(settings.lake_root) / "telemetry" / table / f"{day}.parquet"


def metadata_of(result: dg.ExecuteInProcessResult, key: str) -> dict:
    for event in result.get_asset_materialization_events():
        if event.asset_key == dg.AssetKey(key.split("/")):
            materialization = event.step_materialization_data.materialization
            return {k: getattr(v, "value", v) for k, v in materialization.metadata.items()}
    raise KeyError(key)


def raw_records(settings: Settings, day: str) -> list[str]:
    folder = Path(settings.raw_root) / "telemetry" / day
    return [line for f in sorted(folder.iterdir()) for line in f.read_text().splitlines() if line]


def raw_player_ids(settings: Settings) -> set[str]:
    """Every player id written in the raw samples (strings, bare numbers, torn strings)."""
    found: set[str] = set()
    for day in SAMPLE_DATES:
        for line in raw_records(settings, day):
            found |= set(re.findall(r'"player_id": "?([^",}]+)', line))
    return found


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture(scope="module")
def day_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Settings, dg.ExecuteInProcessResult]]:
    """The samples' first day materialized once for the tests that only read it (`sample_env`)."""
    with pytest.MonkeyPatch.context() as patch:
        settings = isolate(tmp_path_factory.mktemp("telemetry"), patch, KEY_ENV)
        shutil.copytree(SAMPLES, settings.raw_root)
        yield settings, materialize(SELECTION, DAY)


def test_sample_partition_bronze_quarantine_and_checks(day_run) -> None:
    sample_env, result = day_run
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {
        "raw_reconciles": True,
        "matches_sft_feed_schema": True,
        # the samples are dense in capture triggers (every conversation has a quest, most turns
        # are High/Critical ambiguity), so 86.7% of the day's candidates pass and the check warns
        # as the seed asks ("If pass rate > 40%, tighten filters")
        "pass_rate_within_budget": False,
    }
    quarantine = pl.read_parquet(lake_file(sample_env, "quarantine"))
    reasons = dict(quarantine.get_column("reason").value_counts().iter_rows())
    assert reasons == {
        "invalid_json": 1,
        "not_an_object": 1,
        "missing_event_id": 1,
        "invalid_event_id": 1,
        "duplicate_event_id": 1,
        "unknown_event_type": 1,
        "missing_player_id": 1,
        "invalid_player_id": 1,
        "missing_server_ts": 1,
        "invalid_payload": 1,
        "missing_conversation_id": 1,
        "missing_speaker": 1,
        "missing_text": 1,
        "missing_turn_index": 1,
        "invalid_turn_index": 1,
        "unredactable_player_id": 1,
    }
    # the day's deletion request (the churner's) erased the player's 65 other bronze events and 5
    # quarantined lines (invalid_speaker, invalid_timestamp, missing_event_type, missing_payload,
    # torn_last_line) once the global deletion log ran; bronze keeps the request itself
    log = pl.read_parquet(Path(sample_env.lake_root) / "telemetry" / "deletion_log.parquet")
    assert json.loads(log.item(0, "rows_removed")) == {
        "telemetry/events": 65,
        "telemetry/quarantine": 5,
    }
    events = pl.read_parquet(lake_file(sample_env, "events"))
    assert events.height == 415 - 65
    assert len(raw_records(sample_env, DAY)) == events.height + quarantine.height + 70 == 436
    assert dict(events.get_column("event_type").value_counts().iter_rows()) == {
        "dialogue_turn": 138,
        "trajectory_step": 88,
        "gold_standard_result": 33,
        "outcome": 30,
        "decision": 19,
        "episode_end": 13,
        "reasoning": 12,
        "consent": 11,
        "peer_prediction": 5,
        "deletion_request": 1,
    }
    meta = metadata_of(result, "telemetry/events")
    assert (meta["raw_records"], meta["bronze_rows"], meta["quarantine_rows"]) == (436, 415, 21)
    assert meta["player_key_source"] == "development-default"


def test_bronze_agrees_with_the_pydantic_contract(sample_env: Settings) -> None:
    # bronze as ingested: the deletion log (global) would erase the deleted player's lines
    materialize('key:"telemetry/events" or key:"telemetry/quarantine"', DAY)
    events = pl.read_parquet(lake_file(sample_env, "events"))
    kept = set(zip(events["source_file"], events["line_no"], strict=True))
    folder = Path(sample_env.raw_root) / "telemetry" / DAY
    quarantine = pl.read_parquet(lake_file(sample_env, "quarantine"))
    accepted_by_sql_only = set(
        quarantine.filter(pl.col("reason").is_in(["duplicate_event_id", "unredactable_player_id"]))
        .select("source_file", "line_no")
        .iter_rows()
    )
    for path in sorted(folder.iterdir()):
        for line_no, line in enumerate(path.read_text().splitlines(), start=1):
            ref = (f"telemetry/{DAY}/{path.name}", line_no)
            try:
                contract.validate_event(json.loads(line))
                valid = True
            except (ValueError, TypeError, AttributeError):
                valid = False
            assert valid == (ref in kept or ref in accepted_by_sql_only), ref


def test_raw_player_ids_reach_no_lake_file(sample_env: Settings) -> None:
    for day in SAMPLE_DATES:
        materialize(SELECTION, day)
    ids = raw_player_ids(sample_env)
    assert len(ids) >= 7  # six players, a numeric id, a legacy digits id, a torn id
    files = sorted((Path(sample_env.lake_root) / "telemetry").rglob("*.parquet"))
    assert sorted(f.relative_to(sample_env.lake_root).as_posix() for f in files) == sorted(
        [
            f"telemetry/{table}/{day}.parquet"
            for table in TABLES + TRAINING_TABLES
            for day in SAMPLE_DATES
        ]
        + [f"telemetry/{table}.parquet" for table in GLOBAL_TABLES]
    )
    con = duckdb.connect()
    for path in files:
        data = path.read_bytes()
        rows = [
            r[0]
            for r in con.execute(
                "SELECT t::VARCHAR FROM read_parquet($p) t", {"p": str(path)}
            ).fetchall()
        ]
        text = "\n".join(rows)
        # the samples plant no validation failure (the planted-case test does), and hold too few
        # decisions and episodes per day for pairs (tests/assets/test_telemetry_training.py); no
        # Witness has rejected a row
        table = path.relative_to(Path(sample_env.lake_root) / "telemetry").parts[0]
        empty_ok = (
            "validation",
            "pair_exclusions.parquet",
            "witness_exclusions.parquet",
            *TRAINING_TABLES,
        )
        assert text or table in empty_ok, path
        for raw_id in ids:
            assert raw_id.encode() not in data, (path, raw_id)
            assert raw_id not in text, (path, raw_id)
    events = pl.read_parquet(lake_file(sample_env, "events"))
    assert "player_id" not in events.columns
    assert "line" not in events.columns


def test_player_key_from_the_environment(
    sample_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "a-production-secret")
    result = materialize(SELECTION, DAY)
    assert metadata_of(result, "telemetry/events")["player_key_source"] == "env"
    first_line = json.loads(raw_records(sample_env, DAY)[0])
    events = pl.read_parquet(lake_file(sample_env, "events"))
    row = events.filter(pl.col("event_id") == first_line["event_id"])
    expected = player_key(b"a-production-secret", first_line["player_id"])
    assert row.get_column("player_key").to_list() == [expected]
    assert expected != player_key(DEVELOPMENT_KEY.encode(), first_line["player_id"])


def test_known_conversation_exact_messages(day_run) -> None:
    sample_env, result = day_run
    dialogues = pl.read_parquet(lake_file(sample_env, "dialogues"))
    assert dialogues.schema == pl.Schema({**feed_schema("sft"), "subject": pl.String()})
    assert dialogues.height == 11
    row = dialogues.filter(pl.col("source_ref") == f"conversation:{KNOWN_CONVERSATION}")
    assert row.get_column("messages").to_list()[0] == [
        {"role": "system", "content": NINKASI_AMA},
        {
            "role": "user",
            "content": "I'm looking for news of the copper caravans from the north.\nHave any "
            "sailors spoken of them? I carry a tablet from my father that vouches for my word.",
        },
        {
            "role": "assistant",
            "content": "Sailors speak of many things when their cups are full. News costs a jug "
            "of my best, friend.",
        },
        {
            "role": "user",
            "content": "Then pour me a jug, and one for yourself. What do they say? I will swear "
            "it before Utu if you need me to.",
        },
        {
            "role": "assistant",
            "content": "They say the caravan master Lu-Ninurta was delayed at Nippur. Bandits in "
            "the reed marshes, or so he claims.",
        },
        {
            "role": "user",
            "content": "You sound unconvinced. Do you think he lies? Remember me, I helped your "
            "servant carry the jars last harvest.",
        },
        {
            "role": "assistant",
            "content": "He owes silver to half the merchants of Ur. A delay is convenient when "
            "your creditors are waiting on the quay.",
        },
        {
            "role": "user",
            "content": "If the caravan is not truly delayed, where would he be selling the "
            "copper? A merchant from Dilmun told me something different yesterday.",
        },
        {
            "role": "assistant",
            "content": "Lagash pays well and asks few questions. If I were a man in debt, that "
            "is where my donkeys would walk.",
        },
    ]
    greeting = next(
        json.loads(line)
        for line in raw_records(sample_env, DAY)
        if KNOWN_CONVERSATION in line and '"turn_index": 0' in line
    )
    key = player_key(DEVELOPMENT_KEY.encode(), greeting["player_id"])
    # past bronze the event time is bucketed to the minute (rules/telemetry_privacy.py)
    assert row.select("split_group", "event_time", "quality_score").row(0) == (
        key,
        greeting["server_ts"] // 60 * 60,
        0.6422,
    )
    assert json.loads(row.item(0, "metadata")) == {
        "game_genre": "RPG_Survival_Ancient",
        "player_skill_tier": "Journeyman",
        "ambiguity_level": "Medium",
        "social_context": "Information_Gathering_Tavern",
        "karma_state": 113,
        "profession": "Damgar",
        "player_key": key,
        "npc_name": "Ninkasi-ama",
        "session_id": "s_fb8eb637",
        "quest_id": greeting["payload"]["quest_id"],
        "timestamp": datetime.fromtimestamp(greeting["server_ts"] // 60 * 60, UTC).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        ),
        "exchanges": 4,
        "turns": 9,
        "trust": 0.5,
        "validation_flags": [],
        "value_class": "social_manipulation_deception",
    }
    meta = metadata_of(result, "telemetry/dialogues")
    # players without sft consent at the conversation's time never reach silver; the drop
    # reasons are covered by tests/unit/telemetry/test_dialogues.py
    assert (meta["conversations"], meta["conversations_kept"]) == (13, 11)
    assert (meta["dropped_too_few_exchanges"], meta["dropped_missing_persona"]) == (1, 1)


def test_rematerializing_is_byte_identical(sample_env: Settings) -> None:
    materialize(SELECTION, DAY)
    first = {t: lake_file(sample_env, t).read_bytes() for t in TABLES}
    materialize(SELECTION, DAY)
    assert {t: lake_file(sample_env, t).read_bytes() for t in TABLES} == first
