"""Silver generalisation (location, time) and the triage rules on tiny inline events."""

import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from distill_assets.defs.player_ids import hmac_pads, player_key
from distill_assets.defs.telemetry import events as telemetry_events
from distill_assets.defs.telemetry import privacy as privacy_module
from distill_assets.defs.telemetry import triage as triage_module
from distill_assets.defs.telemetry.privacy import (
    SilverIdentity,
    consent_events,
    consent_state,
    exclusions,
    write_accepted_events,
)
from distill_assets.defs.telemetry.triage import pass_rates, triage, write_triage
from distill_assets.lib.hashing import split_bucket
from distill_assets.lib.sql import connect
from distill_assets.rules import telemetry_privacy
from distill_assets.rules import telemetry_triage as rules

T0 = 1795082400.0
KEY = b"test-key"


def bronze(rows: list[tuple[str, str, str, float, dict]]) -> pl.LazyFrame:
    return pl.LazyFrame(
        {
            "event_id": [r[0] for r in rows],
            "event_type": [r[1] for r in rows],
            "player_key": [r[2] for r in rows],
            "session_id": ["s"] * len(rows),
            "client_ts": [r[3] - 0.2 for r in rows],
            "server_ts": [r[3] for r in rows],
            "payload": [json.dumps(r[4]) for r in rows],
            "source_file": ["telemetry/d/a.jsonl"] * len(rows),
            "line_no": list(range(1, len(rows) + 1)),
        }
    )


def granted_to_all(events: pl.LazyFrame) -> pl.LazyFrame:
    """Consent decisions granting every data type to every player of `events` before any event."""
    return (
        events.select("player_key")
        .unique()
        .join(pl.LazyFrame({"data_type": list(telemetry_privacy.DATA_TYPES)}), how="cross")
        .with_columns(granted=pl.lit(True), server_ts=pl.lit(0.0), event_id=pl.lit("grant-all"))
    )


def accepted_events(
    events: pl.LazyFrame,
    checks: pl.LazyFrame,
    deleted: pl.LazyFrame,
    folder: Path,
    *,
    consents: pl.LazyFrame | None = None,
    known: tuple[str, ...] = (),
) -> pl.DataFrame:
    """Write `events` as a bronze file, run silver on it and read what it wrote.

    `consents` defaults to every player granting every data type; `known` adds player keys
    known from other days to the partition's own.
    """
    bronze_file, target = folder / "events.parquet", folder / "accepted_events.parquet"
    events.collect().write_parquet(bronze_file)
    inner, outer = hmac_pads(KEY)
    identity = SilverIdentity(
        pads={"inner_pad": inner, "outer_pad": outer},
        known=pl.concat([events.select("player_key"), pl.LazyFrame({"player_key": list(known)})]),
        consent_events=granted_to_all(events) if consents is None else consents,
    )
    rows = write_accepted_events(bronze_file, checks, deleted, target, identity)
    silver = pl.read_parquet(target)
    assert rows == silver.height
    return silver


NO_CHECKS = pl.LazyFrame(schema={"event_id": pl.String, "check": pl.String, "decision": pl.String})
NO_ONE = pl.LazyFrame(schema={"player_key": pl.String})


def step(index: int, action_type: str = "wheel_manipulation", **state: float) -> dict:
    return {
        "episode_id": "ep",
        "step_index": index,
        "observation": {
            "game_state": state or {"moisture": 0.5},
            "skill_state": {"pottery": 3},
            "location": {"region": "ur", "x": 1234.5, "y": -17.0},
        },
        "action": {"action_type": action_type, "action_details": {"hand_pressure": 0.1 * index}},
        "reward": 0.5,
    }


def test_silver_generalises_location_and_time_and_drops_rejected_and_deleted(
    tmp_path: Path,
) -> None:
    events = bronze(
        [
            ("e1", "trajectory_step", "p", T0 + 59.9, step(0)),
            (
                "e2",
                "consent",
                "p",
                T0 + 61,
                {"granted": True, "scopes": ["sft"], "location": {"x": 50, "y": 250}},
            ),
            ("e3", "consent", "bot", T0, {"granted": True, "scopes": ["sft"]}),
            ("e4", "consent", "gone", T0, {"granted": True, "scopes": ["sft"]}),
        ]
    )
    checks = pl.LazyFrame(
        {
            "event_id": ["e3", "e1"],
            "check": ["bot_signature", "clock_skew"],
            "decision": ["reject", "flag"],
        }
    )
    deleted = pl.LazyFrame({"player_key": ["gone"]})
    silver = accepted_events(events, checks, deleted, tmp_path)
    assert silver.select(
        "event_id", "event_time", "event_seq", "location_cell", "flag_checks"
    ).rows() == [
        ("e1", T0, 1, "ur:12:-1", ["clock_skew"]),
        ("e2", T0 + 60, 2, ":0:2", []),
    ]
    payload = json.loads(silver.item(0, "payload"))
    assert "location" not in payload["observation"]
    assert "location" not in json.loads(silver.item(1, "payload"))


def test_a_day_larger_than_one_sort_is_written_range_by_range_in_the_same_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # out of time order in bronze, two events of one second (event_id breaks the tie), rejected
    # and deleted players: what each range holds depends on the keys' order, not the file's
    rows = [
        (f"e{i:02d}", "dialogue_turn", f"p{i % 4}", T0 + (37 * i) % 23, {"text": f"hi p{i % 4}"})
        for i in range(23)
    ]
    rows.append(("e99", "dialogue_turn", "p1", T0 + 5, {"text": "tie"}))
    events = bronze(rows)
    checks = pl.LazyFrame({"event_id": ["e03"], "check": ["bot_signature"], "decision": ["reject"]})
    deleted = pl.LazyFrame({"player_key": ["p2"]})
    (tmp_path / "whole").mkdir()
    (tmp_path / "ranges").mkdir()
    whole = accepted_events(events, checks, deleted, tmp_path / "whole")
    monkeypatch.setattr(privacy_module, "SORT_CHUNK_ROWS", 4)  # 17 rows: 5 ranges
    ranged = accepted_events(events, checks, deleted, tmp_path / "ranges")

    assert_frame_equal(ranged, whole, check_dtypes=True)
    assert ranged.height == 17
    assert ranged.get_column("event_seq").to_list() == list(range(1, 18))
    assert ranged.get_column("event_id").to_list()[:4] == ["e00", "e05", "e15", "e20"]  # e10: p2


def test_consent_latest_wins_and_exclusions_per_data_type() -> None:
    events = bronze(
        [
            ("c1", "consent", "a", T0, {"granted": True, "scopes": ["sft", "dpo", "emotes"]}),
            ("c2", "consent", "a", T0 + 5, {"granted": False, "scopes": ["dpo"]}),
            ("c3", "consent", "b", T0, {"granted": True, "scopes": ["cot"]}),
        ]
    )
    state = consent_state(events)
    assert state.select("player_key", "data_type", "granted", "event_id").rows() == [
        ("a", "dpo", False, "c2"),
        ("a", "sft", True, "c1"),
        ("b", "cot", True, "c3"),
    ]
    deletions = pl.LazyFrame({"player_key": ["b", "c"], "scope": ["rlds", "all"]})
    players = pl.LazyFrame({"player_key": ["a", "b", "c"]})
    rows = exclusions(players, state.lazy(), deletions)
    assert rows.select("subject", "reason").rows() == [
        ("cot:a", "no_consent"),
        ("cot:c", "deletion_request"),
        ("dpo:a", "no_consent"),
        ("dpo:b", "no_consent"),
        ("dpo:c", "deletion_request"),
        ("rlds:a", "no_consent"),
        ("rlds:b", "deletion_request"),
        ("rlds:b", "no_consent"),
        ("rlds:c", "deletion_request"),
        ("sft:b", "no_consent"),
        ("sft:c", "deletion_request"),
    ]


def test_consent_read_in_batches_of_one_event_is_the_same(monkeypatch) -> None:
    # the scopes are read a batch of events at a time, for the consent events' ids only: an id
    # a dialogue event shares with a consent decision is read as a join with every event reads it
    events = bronze(
        [
            ("c1", "consent", "a", T0, {"granted": True, "scopes": ["sft", "dpo"]}),
            ("x1", "dialogue_turn", "a", T0 + 1, {"text": "hi"}),
            ("c2", "consent", "a", T0 + 5, {"granted": False, "scopes": ["dpo"]}),
            ("c2", "dialogue_turn", "b", T0 + 6, {"scopes": ["cot"]}),
        ]
    )
    whole = consent_state(events)
    monkeypatch.setattr(telemetry_events, "PAYLOAD_BATCH_ROWS", 1)
    assert consent_state(events).rows() == whole.rows()
    assert whole.select("player_key", "data_type", "granted", "event_id").rows() == [
        ("a", "cot", False, "c2"),
        ("a", "dpo", False, "c2"),
        ("a", "sft", True, "c1"),
    ]


def decision(scenario: str, state_hash: str, ambiguity: float = 0.1) -> dict:
    return {
        "scenario_id": scenario,
        "game_state_hash": state_hash,
        "prompt": "p",
        "options": [{"option_id": "o1", "text": "a"}, {"option_id": "o2", "text": "b"}],
        "chosen_option": "o1",
        "ambiguity_score": ambiguity,
        "ai_policy_probs": {"o1": 0.5, "o2": 0.5},
    }


def dialogue(text: str) -> dict:
    return {"conversation_id": "c", "turn_index": 0, "speaker": "player", "text": text}


def test_player_ids_in_text_are_replaced_whatever_their_case_or_owner(tmp_path: Path) -> None:
    speaker = player_key(KEY, "p_cons_4242aa77")
    deleted_elsewhere = player_key(KEY, "p_del_90210abcde")
    numeric_player = player_key(KEY, "4417093265")
    events = bronze(
        [
            (
                "e1",
                "dialogue_turn",
                speaker,
                T0,
                dialogue(
                    "Tell the guild of P_CONS_4242AA77 that p_del_90210abcde and "
                    "p_nocon_31337beef still owe me silver."
                ),
            ),
            ("e2", "dialogue_turn", speaker, T0 + 1, dialogue(f"Ask 4417093265, not {speaker}.")),
            ("e3", "dialogue_turn", speaker, T0 + 2, dialogue("Pay 1234567890 to np_c or map_x.")),
        ]
    )
    silver = accepted_events(
        events, NO_CHECKS, NO_ONE, tmp_path, known=(deleted_elsewhere, numeric_player)
    )
    texts = [json.loads(p)["text"] for p in silver.get_column("payload")]
    assert texts == [
        "Tell the guild of [REDACTED_PLAYER_ID] that [REDACTED_PLAYER_ID] and "
        "[REDACTED_PLAYER_ID] still owe me silver.",
        "Ask [REDACTED_PLAYER_ID], not [REDACTED_PLAYER_ID].",
        # an unknown number and words merely containing `p_` are not player ids
        "Pay 1234567890 to np_c or map_x.",
    ]


def test_consent_is_applied_at_the_events_time_and_withdrawal_removes_earlier_rows(
    tmp_path: Path,
) -> None:
    decision = {"scenario_id": "s1", "prompt": "?", "options": [], "chosen_option": "o1"}
    step0 = {"episode_id": "ep", "step_index": 0, "observation": {}, "action": {}, "reward": 0.0}
    events = bronze(
        [
            ("a-early", "dialogue_turn", "a", T0, dialogue("before consent")),
            ("a-grant", "consent", "a", T0 + 10, {"granted": True, "scopes": ["sft"]}),
            ("a-at", "dialogue_turn", "a", T0 + 10, dialogue("at the consent")),
            ("a-late", "dialogue_turn", "a", T0 + 20, dialogue("after consent")),
            ("a-dpo", "decision", "a", T0 + 20, decision),
            ("a-outcome", "outcome", "a", T0 + 21, {"outcome": "won", "label": "good"}),
            ("b-grant", "consent", "b", T0, {"granted": True, "scopes": ["rlds", "cot"]}),
            ("b-step", "trajectory_step", "b", T0 + 5, step0),
            ("b-cot", "reasoning", "b", T0 + 5, {"context": "c", "thought_process": []}),
        ]
    )
    # b withdraws rlds on a later day: the day's step goes, like a deletion; cot stays
    later = bronze([("b-stop", "consent", "b", T0 + 86400, {"granted": False, "scopes": ["rlds"]})])
    consents = consent_events(pl.concat([events, later]))
    silver = accepted_events(events, NO_CHECKS, NO_ONE, tmp_path, consents=consents)
    assert silver.get_column("event_id").to_list() == [
        "b-grant",
        "b-cot",
        "a-at",
        "a-grant",
        "a-late",
        "a-outcome",
    ]


def test_triage_skip_and_sample_rules(tmp_path: Path) -> None:
    events = bronze(
        [
            ("d1", "decision", "p", T0, decision("famine", "h1")),
            ("d2", "decision", "p", T0 + 1, decision("famine", "h1")),
            ("d3", "decision", "p", T0 + 2, decision("innovation_canal", "h2")),
            ("s0", "trajectory_step", "p", T0 + 3, step(0, moisture=0.5)),
            ("s1", "trajectory_step", "p", T0 + 4, step(1, moisture=0.9)),
            ("s2", "trajectory_step", "p", T0 + 5, step(2, "walk", moisture=0.9)),
            ("d4", "decision", "p", T0 + 6, decision("drought", "h3", ambiguity=0.9)),
        ]
    )
    silver = accepted_events(events, NO_CHECKS, NO_ONE, tmp_path).lazy()
    verdicts = dict(
        triage(silver)
        .select("event_id", pl.concat_str("decision", "reason", separator=":"))
        .iter_rows()
    )
    sampled = split_bucket(rules.SAMPLE_SALT + "s1") < rules.SAMPLE_RATE * rules.HASH_BUCKETS
    audited = {e for e in verdicts if split_bucket(rules.AUDIT_SALT + e) < 500}
    expected = {
        "d1": "skip:no_trigger",
        "d2": "skip:seen_scenario",
        "d3": "process:innovation_quest",
        "s0": "skip:no_trigger",
        "s1": "sample:sampled_high_entropy" if sampled else "skip:high_entropy_not_sampled",
        "s2": "skip:routine_movement",
        "d4": "process:high_ambiguity",
    }
    expected = {
        e: ("audit:" + v.split(":")[1]) if e in audited and v.startswith("skip") else v
        for e, v in expected.items()
    }
    assert verdicts == expected


def test_triage_processes_quest_negotiation_and_ambiguous_dialogue_and_skips_small_talk(
    tmp_path: Path,
) -> None:
    def turn(conversation: str, index: int, **context: str) -> dict:
        return {
            "conversation_id": conversation,
            "turn_index": index,
            "speaker": "player" if index % 2 == 0 else "npc",
            "text": f"turn {index}",
            **context,
        }

    events = bronze(
        [
            ("q1", "dialogue_turn", "p", T0, turn("quest", 0, quest_id="quest_canal")),
            ("n1", "dialogue_turn", "p", T0 + 1, turn("deal", 0, social_context="Trade_Tappu")),
            ("n2", "dialogue_turn", "p", T0 + 2, turn("deal", 1, social_context="Escort_Contract")),
            ("a1", "dialogue_turn", "p", T0 + 3, turn("doubt", 0, ambiguity_level="Critical")),
            ("m1", "dialogue_turn", "p", T0 + 4, turn("chat", 0, ambiguity_level="Medium")),
            ("m2", "dialogue_turn", "p", T0 + 5, turn("chat", 1, social_context="Tavern_Gossip")),
            ("m3", "dialogue_turn", "p", T0 + 6, turn("chat", 2, quest_id=" ")),
        ]
    )
    silver = accepted_events(events, NO_CHECKS, NO_ONE, tmp_path).lazy()
    rows = triage(silver)
    verdicts = dict(rows.select("event_id", "reason").iter_rows())
    audited = {e for e in verdicts if split_bucket(rules.AUDIT_SALT + e) < 500}
    expected = {
        "q1": "quest_dialogue",
        "n1": "negotiation_dialogue",
        "n2": "negotiation_dialogue",
        "a1": "high_ambiguity",
        "m1": "no_trigger",
        "m2": "no_trigger",
        "m3": "no_trigger",
    }
    assert verdicts == {
        e: f"audit:{v}" if e in audited and v == "no_trigger" else v for e, v in expected.items()
    }
    assert set(rows.get_column("action_type")) == {"dialogue_turn"}


def test_triage_reads_payloads_in_batches_with_the_same_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Triage reduces each payload batch as it is read; any batch size gives the same rows."""
    same = {"action_type": "wheel_manipulation", "action_details": {"hand_pressure": 0.2}}
    events = bronze(
        [
            ("d1", "decision", "p", T0, decision("famine", "h1")),
            ("d2", "decision", "p", T0 + 1, {**decision("flood", "h2"), "reasoning": " \t"}),
            ("d3", "decision", "p", T0 + 2, {**decision("storm", "h3"), "reasoning": "why"}),
            ("s0", "trajectory_step", "p", T0 + 3, step(0, moisture=0.5)),
            ("s1", "trajectory_step", "p", T0 + 4, step(1, moisture=0.9)),
            ("s2", "trajectory_step", "p", T0 + 5, {**step(2, moisture=0.9), "action": same}),
            ("s3", "trajectory_step", "p", T0 + 6, {**step(3, moisture=0.9), "action": same}),
            ("s4", "trajectory_step", "p", T0 + 7, step(4, "walk", moisture=0.9)),
        ]
    )
    silver = accepted_events(events, NO_CHECKS, NO_ONE, tmp_path).lazy()
    whole = triage(silver)
    monkeypatch.setattr(telemetry_events, "PAYLOAD_BATCH_ROWS", 2)
    batched = triage(silver)
    assert_frame_equal(batched, whole)
    # written as judged, 3 candidates at a time: the same rows in the same order
    monkeypatch.setattr(triage_module, "JUDGE_BATCH_ROWS", 3)
    target = tmp_path / "triage.parquet"
    assert write_triage(silver, target) == 8
    assert_frame_equal(pl.read_parquet(target), whole)
    # its smaller memory limit was its own database's, not the one the process shares
    ((limit,),) = connect().execute("SELECT current_setting('memory_limit')").fetchall()
    assert limit == "1.8 GiB"
    rates = {"decision": 0.3333, "walk": 0.0, "wheel_manipulation": 0.0, "all": 0.125}
    assert pass_rates(pl.scan_parquet(target)) == pass_rates(whole) == rates
    reasons = dict(whole.select("event_id", "reason").iter_rows())
    assert {e: reasons[e].removeprefix("audit:") for e in ("d2", "d3", "s3", "s4")} == {
        "d2": "no_trigger",
        "d3": "player_reasoning",
        "s3": "repeated_action",
        "s4": "routine_movement",
    }


def test_triage_context_follows_silver_order_and_nulls_first(tmp_path: Path) -> None:
    """The cross-event context (repeated action, seen scenario, karma) as the rules define it.

    A step without step_index comes first in its episode (so the next step repeats its action),
    a scenario is seen by the decision later in silver order (not by event id), and a player's
    highest karma that day marks all of their candidates.
    """
    same = {"action_type": "wheel_manipulation", "action_details": {"hand_pressure": 0.2}}
    events = bronze(
        [
            (
                "s-first",
                "trajectory_step",
                "p",
                T0,
                {**step(0), "step_index": None, "action": same},
            ),
            ("s-next", "trajectory_step", "p", T0 + 1, {**step(0), "action": same}),
            ("d-b", "decision", "p", T0 + 2, decision("famine", "h1")),
            ("d-a", "decision", "p", T0 + 3, decision("famine", "h1")),
            ("k1", "dialogue_turn", "q", T0 + 4, {**dialogue("hello"), "karma_state": 150}),
            ("k2", "decision", "q", T0 + 5, decision("drought", "h2")),
        ]
    )
    silver = accepted_events(events, NO_CHECKS, NO_ONE, tmp_path).lazy()
    rows = triage(silver)
    reasons = {
        e: r.removeprefix("audit:") for e, r in rows.select("event_id", "reason").iter_rows()
    }
    assert reasons == {
        "s-first": "no_trigger",
        "s-next": "repeated_action",
        "d-b": "no_trigger",
        "d-a": "seen_scenario",
        "k1": "high_karma",
        "k2": "high_karma",
    }
    assert rows.get_column("event_id").to_list() == ["s-first", "s-next", "d-b", "d-a", "k1", "k2"]


def test_the_range_split_flushes_its_buffers_by_the_rows_size(tmp_path: Path) -> None:
    # 128 MiB over 4 buffers of 559-byte rows; never below the floor nor above DuckDB's default
    assert privacy_module.partition_flush_rows(4, 559) == 128 * 2**20 // (4 * 559)
    assert privacy_module.partition_flush_rows(10_000, 100_000) == privacy_module.MIN_FLUSH_ROWS
    assert privacy_module.partition_flush_rows(1, 1) == privacy_module.DEFAULT_FLUSH_ROWS
    path = tmp_path / "rows.parquet"
    pl.DataFrame({"text": [f"{i:0100d}" for i in range(1000)]}).write_parquet(path)
    assert 100 <= privacy_module.parquet_row_bytes(path) <= 110  # uncompressed, not on disk
