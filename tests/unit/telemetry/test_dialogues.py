"""Bronze dialogue turns → SFT feed rows: merging, trimming, drop reasons, exact messages."""

import json

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.telemetry.dialogues import build_dialogues

PERSONA = "You are Lu-Utu, a gruff boatman on the Euphrates."
CONTEXT = {
    "game_genre": "RPG_Survival_Ancient",
    "player_skill_tier": "Journeyman",
    "ambiguity_level": "Low",
    "social_context": "Passage_Bargain_Quay",
    "karma_state": 127,
    "profession": "Damgar",
}


def bronze(turns: list[tuple], extra_events: list[dict] | None = None) -> pl.LazyFrame:
    """Bronze rows from (conversation_id, turn_index, speaker, text, player_key, payload extras)."""
    rows = []
    for n, (conversation, index, speaker, text, player, *more) in enumerate(turns):
        payload = {"conversation_id": conversation, "turn_index": index, "speaker": speaker}
        payload |= {"text": text, "npc_name": "Lu-Utu", "quest_id": "quest_lu_utu", **CONTEXT}
        if more:
            payload |= more[0]
        rows.append(
            {
                "event_id": f"e{n:03d}",
                "event_type": "dialogue_turn",
                "player_key": player,
                "session_id": "s1",
                "server_ts": 1000.0 + 10 * index + (0 if conversation == "c1" else 5000),
                "payload": json.dumps(payload),
            }
        )
    rows += extra_events or []
    return pl.LazyFrame(rows)


def conversation(cid: str, speakers: str, player: str = "k1", persona: bool = True) -> list[tuple]:
    """Turns from a speaker string: P = player, N = npc; the first turn carries the persona."""
    turns = []
    for index, code in enumerate(speakers):
        speaker = "player" if code == "P" else "npc"
        extra = {"npc_persona": PERSONA} if index == 0 and persona else {}
        turns.append((cid, index, speaker, f"{speaker} line {index}", player, extra))
    return turns


def test_exact_messages_merged_and_trimmed() -> None:
    # greeting (trimmed), a player line sent as two turns (merged), a trailing player line
    turns = conversation("c1", "NPPNPNPNP")
    rows, stats = build_dialogues(bronze(list(reversed(turns))))
    assert rows.height == 1
    assert rows.get_column("messages").to_list()[0] == [
        {"role": "system", "content": PERSONA},
        {"role": "user", "content": "player line 1\nplayer line 2"},
        {"role": "assistant", "content": "npc line 3"},
        {"role": "user", "content": "player line 4"},
        {"role": "assistant", "content": "npc line 5"},
        {"role": "user", "content": "player line 6"},
        {"role": "assistant", "content": "npc line 7"},
    ]
    assert (stats.turns, stats.conversations, stats.kept, stats.dropped) == (9, 1, 1, {})
    assert stats.merged_turns == 1
    assert stats.trimmed_leading_npc_turns == 1
    assert stats.trimmed_trailing_player_turns == 1


def test_feed_row_columns_and_values() -> None:
    rows, _ = build_dialogues(bronze(conversation("c1", "PNPNPN")))
    assert rows.schema == feed_schema("sft")
    row = rows.row(0, named=True)
    assert row["source"] == "telemetry"
    assert row["source_ref"] == "conversation:c1"
    assert row["split_group"] == "k1"
    assert row["event_time"] == 1000.0
    assert json.loads(row["metadata"]) == {
        **CONTEXT,
        "player_key": "k1",
        "npc_name": "Lu-Utu",
        "session_id": "s1",
        "quest_id": "quest_lu_utu",
        "timestamp": "1970-01-01T00:16:40Z",  # event_time 1000 s
        "exchanges": 3,
        "turns": 6,
    }
    # 3 exchanges, Low ambiguity, 13-character player lines
    assert row["quality_score"] == round(0.35 * 0.5 + 0.35 * 0.25 + 0.30 * 13 / 160, 4)
    assert len(row["id"]) == 16


def test_id_is_stable_and_follows_content() -> None:
    first, _ = build_dialogues(bronze(conversation("c1", "PNPNPN")))
    again, _ = build_dialogues(bronze(conversation("c1", "PNPNPN")))
    longer, _ = build_dialogues(bronze(conversation("c1", "PNPNPNPN")))
    assert first.item(0, "id") == again.item(0, "id")
    assert first.item(0, "id") != longer.item(0, "id")


def test_drop_reasons_are_counted() -> None:
    mixed = conversation("mixed", "PNPNPN")
    mixed[3] = (*mixed[3][:4], "k2", {})
    duplicated = conversation("dup", "PNPNPN")
    duplicated[5] = ("dup", 4, "npc", "npc again", "k1", {})
    turns = (
        conversation("c1", "PNPNPN")
        + mixed
        + duplicated
        + conversation("nopersona", "PNPNPN", persona=False)
        + conversation("short", "NPNPNP")
        + conversation("npc_only", "NNN")
    )
    rows, stats = build_dialogues(bronze(turns))
    assert rows.get_column("source_ref").to_list() == ["conversation:c1"]
    assert stats.conversations == 6
    assert stats.dropped == {
        "mixed_players": 1,
        "duplicate_turn_index": 1,
        "missing_persona": 1,
        "too_few_exchanges": 2,
    }


def test_persona_may_come_on_a_later_turn_and_blank_persona_is_missing() -> None:
    late = [(cid, i, sp, tx, pk, {}) for cid, i, sp, tx, pk, _ in conversation("late", "PNPNPN")]
    late[1] = (*late[1][:5], {"npc_persona": PERSONA})
    blank = conversation("blank", "PNPNPN", persona=False)
    blank[0] = (*blank[0][:5], {"npc_persona": "  "})
    rows, stats = build_dialogues(bronze(late + blank))
    assert rows.get_column("source_ref").to_list() == ["conversation:late"]
    assert rows.get_column("messages").to_list()[0][0] == {"role": "system", "content": PERSONA}
    assert stats.dropped == {"missing_persona": 1}


def test_other_event_types_are_ignored_and_empty_input_gives_the_feed_schema() -> None:
    decision = {
        "event_id": "d1",
        "event_type": "decision",
        "player_key": "k1",
        "session_id": "s1",
        "server_ts": 5.0,
        "payload": '{"scenario_id": "famine_triage"}',
    }
    rows, stats = build_dialogues(bronze([], [decision]))
    assert rows.height == 0
    assert rows.schema == feed_schema("sft")
    assert (stats.turns, stats.conversations) == (0, 0)


def test_rows_are_sorted_by_event_time() -> None:
    rows, _ = build_dialogues(bronze(conversation("c2", "PNPNPN") + conversation("c1", "PNPNPN")))
    assert rows.get_column("source_ref").to_list() == ["conversation:c1", "conversation:c2"]


def test_a_build_in_buckets_of_conversations_equals_one_build() -> None:
    # a day of 3 turns a bucket: 24 conversations over 50 buckets, turns in no particular order
    turns = []
    for n, shape in enumerate(["NPPNPNPNP", "PNPNPN", "NPNPNP", "PNPNPNPNNP"] * 6):
        turns += conversation(f"c{n:02d}", shape, player=f"k{n % 5}", persona=n % 7 != 3)
    turns[7] = (*turns[7][:4], "k9", {})  # c00 mixes players
    events = bronze(list(reversed(turns)))
    whole, whole_stats = build_dialogues(events)
    bucketed, bucketed_stats = build_dialogues(events, bucket_turns=3)
    assert bucketed.height == whole.height == 15
    assert bucketed.equals(whole)
    assert bucketed_stats == whole_stats
    assert whole_stats.dropped == {
        "mixed_players": 1,
        "missing_persona": 3,
        "too_few_exchanges": 5,
    }
