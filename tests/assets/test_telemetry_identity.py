"""Issue 28's symptoms through the real definitions: ids in text, consent, erasure.

One ingest day: a consenting player (`p_cons_4242aa77`) names, in a dialogue, their own id in
another case, a player who asks for deletion the same day and a player who never consented; the
unconsented player and the deleted one hold dialogues of their own; the deleted one also has a
quarantined line.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from distill_assets.defs.player_ids import DEVELOPMENT_KEY, KEY_ENV, player_key
from distill_assets.defs.telemetry import mention_index
from distill_assets.lib.settings import Settings
from tests.conftest import land, materialize

DAY = "2026-11-19"
T0 = 1795082400.0
CONSENTING, DELETED, UNCONSENTED = "p_cons_4242aa77", "p_del_90210abcde", "p_nocon_31337beef"
THREE_IDS = (
    "Tell the guild of P_CONS_4242AA77 that p_del_90210abcde and p_nocon_31337beef still owe "
    "me silver."
)
PERSONA = "You are Ur-Namma, a wealthy merchant. You are cautious but fair."
DAILY = ("events", "quarantine", "validation", "accepted_events", "triage", "dialogues")
GLOBAL = ("deletions", "deletion_log", "consent", "exclusions", "player_quality", "payouts")


def key(raw_id: str) -> str:
    return player_key(DEVELOPMENT_KEY.encode(), raw_id)


def envelope(n: int, player: str, event_type: str, at: float, payload: dict) -> str:
    return json.dumps(
        {
            "event_id": f"e{n:03d}",
            "event_type": event_type,
            "schema_version": "1.4",
            "player_id": player,
            "session_id": "s1",
            "server_ts": T0 + at,
            "payload": payload,
        }
    )


def conversation(start: int, player: str, at: float, first_line: str) -> list[str]:
    """Three exchanges (player first) of a quest (so triage passes it), the first line given."""
    lines = []
    for turn in range(6):
        speaker = "player" if turn % 2 == 0 else "npc"
        text = first_line if turn == 0 else f"{speaker} line {turn} about the silver"
        payload = {
            "conversation_id": f"conv-{start}",
            "turn_index": turn,
            "speaker": speaker,
            "text": text,
            "npc_persona": PERSONA if turn == 0 else None,
            "quest_id": "quest_silver",
        }
        lines.append(envelope(start + turn, player, "dialogue_turn", at + 10 * turn, payload))
    return lines


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture
def landed(distill_env: Settings) -> Settings:
    sft = {"granted": True, "scopes": ["sft"]}
    lines = [
        envelope(1, CONSENTING, "consent", 0, sft),
        envelope(2, DELETED, "consent", 0, sft),
        *conversation(10, CONSENTING, 100, THREE_IDS),
        *conversation(20, DELETED, 200, "I am leaving soon"),
        *conversation(30, UNCONSENTED, 300, "I never said yes"),
        envelope(40, DELETED, "deletion_request", 900, {"request_id": "r1", "scope": "all"}),
        # quarantined (no payload): its raw line keeps the deleted player's key
        json.dumps(
            {
                "event_id": "e041",
                "event_type": "outcome",
                "player_id": DELETED,
                "server_ts": T0 + 950,
            }
        ),
    ]
    land(distill_env, "telemetry", DAY, "game.jsonl", "\n".join(lines) + "\n")
    for table in (DAILY, GLOBAL):
        materialize(
            " or ".join(f'key:"telemetry/{t}"' for t in table), DAY if table is DAILY else None
        )
    return distill_env


def lake(settings: Settings, table: str) -> pl.DataFrame:
    return pl.read_parquet(Path(settings.lake_root) / "telemetry" / table / f"{DAY}.parquet")


def test_player_ids_in_dialogue_text_are_replaced_before_silver(landed: Settings) -> None:
    dialogues = lake(landed, "dialogues")
    assert dialogues.get_column("split_group").to_list() == [key(CONSENTING)]
    first_user = dialogues.get_column("messages").to_list()[0][1]
    assert first_user == {
        "role": "user",
        "content": "Tell the guild of [REDACTED_PLAYER_ID] that [REDACTED_PLAYER_ID] and "
        "[REDACTED_PLAYER_ID] still owe me silver.",
    }
    con = duckdb.connect()
    for path in sorted(Path(landed.lake_root).rglob("*.parquet")):
        if path.parent.name == "events":
            continue  # bronze: the replayable record (raw text, envelope ids already keyed)
        text = "\n".join(
            r[0]
            for r in con.execute(
                "SELECT t::VARCHAR FROM read_parquet($p) t", {"p": str(path)}
            ).fetchall()
        ).lower()
        for raw_id in (CONSENTING, DELETED, UNCONSENTED):
            assert raw_id not in text, (path, raw_id)


def test_consent_is_applied_before_silver(landed: Settings) -> None:
    silver = lake(landed, "accepted_events")
    assert key(UNCONSENTED) not in silver.get_column("player_key").to_list()
    assert key(UNCONSENTED) not in lake(landed, "triage").get_column("player_key").to_list()
    assert silver.filter(pl.col("player_key") == key(CONSENTING)).height == 7  # consent + turns


def test_erasure_reaches_bronze_quarantine_and_the_instance(landed: Settings) -> None:
    deleted = key(DELETED)
    bronze = lake(landed, "events").filter(pl.col("player_key") == deleted)
    assert bronze.get_column("event_type").to_list() == ["deletion_request"]
    quarantine = lake(landed, "quarantine")
    assert quarantine.height == 0
    log = pl.read_parquet(Path(landed.lake_root) / "telemetry" / "deletion_log.parquet")
    # the request applies on its own day: silver never held the player, bronze and quarantine did
    assert json.loads(log.item(0, "rows_removed")) == {
        "telemetry/events": 7,  # consent + 6 turns
        "telemetry/quarantine": 1,
    }
    assert set(json.loads(log.item(0, "rows_still_held")).values()) == {0}
    # bronze keeps other players' words as written, but no longer the deleted player's id
    said = lake(landed, "events").filter(pl.col("event_id") == "e010").get_column("payload")
    assert json.loads(said.item())["text"] == (
        "Tell the guild of P_CONS_4242AA77 that [REDACTED_PLAYER_ID] and p_nocon_31337beef "
        "still owe me silver."
    )
    instance = dg.DagsterInstance.get()
    for asset_key in instance.get_asset_keys():
        for record in instance.fetch_materializations(asset_key, limit=1000).records:
            assert deleted not in repr(record.asset_materialization.metadata), asset_key
    # silver's mention index of the day, re-stamped after the rewrite, without the deleted player
    index = mention_index.day_index(landed.lake_root, DAY)
    assert mention_index.current_keys(index) == sorted([key(CONSENTING), key(UNCONSENTED)])
