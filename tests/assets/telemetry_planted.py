"""Telemetry with planted cases (validation, privacy, trust): each case's count is known.

`planted_days()` returns two ingest days of envelopes built to plant, with exact counts
(`PLANTED`): a malformed decision, clock-skewed and future events, a conversation turn and an
episode step out of order, an out-of-range action, a step index going backwards, a step after its
episode ended, a chosen option that was not offered, two bots (regular intervals; inhuman rate),
gold-standard failures, a peer-prediction mismatch and a tie, consent granted and withdrawn,
missing consent (bob, and the bots), and a deletion request on day 2 for a player with rows on
both days.
`write_planted(raw_root)` lands them as `<raw_root>/telemetry/<day>/planted.jsonl`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SOURCE = "telemetry"
DAYS = ("2026-11-19", "2026-11-20")
PERSONA = "You are Ur-Namma, a wealthy merchant. You are cautious but fair."
# raw ids (pseudonymised at ingest)
ALICE, BOB, CAROL, DAVE, ERIN, FRANK, GRACE, HENRY = (
    "p_alice_7731",
    "p_bob_1120",
    "p_carol_5521",
    "p_dave_9001",
    "p_erin_3318",
    "p_frank_4402",
    "p_grace_6610",
    "p_henry_8843",
)
PLAYERS = (ALICE, BOB, CAROL, DAVE, ERIN, FRANK, GRACE, HENRY)
# validation check -> events planted to fail it (day 1)
PLANTED_CHECKS: dict[str, int] = {
    "clock_skew": 1,
    "client_ts_in_future": 1,
    "turn_out_of_order": 1,
    "step_out_of_order": 1,
    "action_out_of_range": 1,
    "step_index_backwards": 1,
    "action_after_episode_end": 1,
    "chosen_option_not_offered": 1,
    "bot_signature": 47,  # every day-1 event of the two bots: 25 (dave) + 22 (erin)
}
BOT_EVENTS = {DAVE: 25, ERIN: 22}
MALFORMED = {"missing_game_state_hash": 1}
# gold results of FRANK in time order, and his expected trust after each
FRANK_GOLD = (True, False, False, False)
FRANK_TRUST = (0.55, 0.45, 0.35, 0.25)


class _Log:
    def __init__(self, day: str) -> None:
        self.day = day
        self.t0 = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() + 10 * 3600
        self.events: list[dict[str, Any]] = []
        self.lines: list[str] = []
        self.count = 0

    def emit(
        self,
        player: str,
        event_type: str,
        at: float,
        payload: dict[str, Any],
        *,
        session: str = "s",
        client_lag: float = 0.2,
        event_id: str | None = None,
    ) -> dict[str, Any]:
        self.count += 1
        event = {
            "event_id": event_id or f"{self.day}-e{self.count:04d}",
            "event_type": event_type,
            "schema_version": "1.4",
            "player_id": player,
            "session_id": f"{session}-{player[-4:]}",
            "client_ts": round(self.t0 + at - client_lag, 3),
            "server_ts": round(self.t0 + at, 3),
            "payload": payload,
        }
        self.events.append(event)
        return event


def _conversation(
    log: _Log, player: str, at: float, exchanges: int, karma: int, *, swap_turn: int | None = None
) -> None:
    for turn in range(2 * exchanges):
        speaker = "player" if turn % 2 == 0 else "npc"
        lag = 0.2 if turn != swap_turn else 30.0  # the client says this turn came before the last
        log.emit(
            player,
            "dialogue_turn",
            at + 20 * turn,
            {
                "conversation_id": f"conv-{player[-4:]}-{log.day}",
                "turn_index": turn,
                "speaker": speaker,
                "text": f"{speaker} line {turn} about the Dilmun voyage and its silver",
                "npc_persona": PERSONA if turn == 0 else None,
                "karma_state": karma,
                "player_skill_tier": "Journeyman",
                "ambiguity_level": "High",
            },
            session="talk",
            client_lag=lag,
        )


def _decision(
    log: _Log,
    player: str,
    at: float,
    *,
    scenario: str,
    state_hash: str,
    ambiguity: float,
    reasoning: str | None,
    chosen: str = "o1",
    label: str | None = "Success",
    policy: dict[str, float] | None = None,
) -> dict[str, Any]:
    decision = log.emit(
        player,
        "decision",
        at,
        {
            "scenario_id": scenario,
            "game_state_hash": state_hash,
            "prompt": "The grain stores are nearly empty. Who do you feed?",
            "options": [
                {"option_id": "o1", "text": "Feed the temple workers"},
                {"option_id": "o2", "text": "Feed the children"},
            ],
            "chosen_option": chosen,
            "reasoning": reasoning,
            "ambiguity_score": ambiguity,
            "ai_policy_probs": policy or {"o1": 0.5, "o2": 0.5},
        },
        session="decide",
    )
    if label is not None:
        log.emit(
            player,
            "outcome",
            at + 600,
            {
                "decision_event_id": decision["event_id"],
                "outcome": f"{label}: the canal",
                "label": label,
                "reward": 1.0,
            },
            session="decide",
        )
    return decision


def _step(
    log: _Log,
    player: str,
    at: float,
    episode: str,
    index: int,
    *,
    pressure: float = 0.5,
    moisture: float = 0.7,
    reward: float = 0.5,
    client_lag: float = 0.2,
    action_type: str = "wheel_manipulation",
    session: str = "craft",
) -> None:
    log.emit(
        player,
        "trajectory_step",
        at,
        {
            "episode_id": episode,
            "step_index": index,
            "observation": {
                "game_state": {"clay_moisture": moisture, "wheel_speed": 0.5},
                "skill_state": {"pottery": 3},
            },
            "action": {
                "action_type": action_type,
                "action_details": {"hand_pressure": pressure, "lift_rate": 0.3},
            },
            "reward": reward,
        },
        session=session,
        client_lag=client_lag,
    )


def _episode_end(
    log: _Log, player: str, at: float, episode: str, *, success: bool, steps: int
) -> None:
    log.emit(
        player,
        "episode_end",
        at,
        {
            "episode_id": episode,
            "success": success,
            "task_description": "Create a large storage jar using the fast wheel",
            "total_steps": steps,
        },
        session="craft",
    )


def _day_one() -> _Log:
    log = _Log(DAYS[0])
    log.emit(ALICE, "consent", 0, {"granted": True, "scopes": ["sft", "dpo"]}, session="acct")
    log.emit(CAROL, "consent", 1, {"granted": True, "scopes": ["sft", "dpo", "rlds", "cot"]})
    _conversation(log, ALICE, 100, exchanges=4, karma=50)
    _conversation(log, BOB, 300, exchanges=3, karma=20, swap_turn=3)
    _conversation(log, CAROL, 500, exchanges=3, karma=140)
    # timestamp sanity: a skewed client clock (bob) and a client clock in the future (alice)
    log.emit(
        BOB,
        "reasoning",
        900,
        {"context": "c", "thought_process": ["t"], "conclusion": "k"},
        session="think",
        client_lag=600.0,
    )
    log.emit(
        ALICE,
        "reasoning",
        950,
        {"context": "c", "thought_process": ["t"], "conclusion": "k"},
        session="think",
        client_lag=-120.0,
    )
    # decisions: triage reasons and payouts
    _decision(
        log,
        ALICE,
        1000,
        scenario="famine",
        state_hash="h-famine",
        ambiguity=0.9,
        reasoning=None,
        policy={"o1": 0.2, "o2": 0.8},
    )
    _decision(
        log,
        CAROL,
        1100,
        scenario="drought",
        state_hash="h-drought",
        ambiguity=0.4,
        reasoning="Long-term survival needs the canal",
        label="Partial",
    )
    _decision(
        log,
        FRANK,
        1200,
        scenario="innovation_kiln",
        state_hash="h-kiln",
        ambiguity=0.3,
        reasoning=None,
        chosen="o9",
        label="Failure",
    )
    _decision(
        log,
        HENRY,
        1300,
        scenario="famine",
        state_hash="h-famine",
        ambiguity=0.2,
        reasoning=None,
        label=None,
    )
    # episodes: one out-of-range action, a step after the end; one step arriving backwards;
    # one step the client clock puts before its predecessor
    for index in range(4):
        _step(
            log,
            FRANK,
            2000 + 5 * index,
            "ep-range",
            index,
            pressure=1.7 if index == 2 else 0.5,
            moisture=0.7 - 0.1 * index,
            reward=0.8,
        )
    _episode_end(log, FRANK, 2030, "ep-range", success=False, steps=4)
    _step(log, FRANK, 2040, "ep-range", 4)
    for index, at in ((0, 3000), (2, 3005), (1, 3010), (3, 3015)):
        _step(
            log,
            GRACE,
            at,
            "ep-backwards",
            index,
            client_lag=0.2 + (at - 3000) - 5 * index,
            moisture=0.7,
        )
    for index in range(3):
        _step(
            log, HENRY, 3500 + 5 * index, "ep-clock", index, client_lag=0.2 if index != 2 else 8.0
        )
    # gold standards: frank passes one, then fails three
    for n, passed in enumerate(FRANK_GOLD):
        log.emit(
            FRANK,
            "gold_standard_result",
            5000 + 60 * n,
            {
                "task_id": f"gold-{n}",
                "expected": "o2",
                "answer": "o2" if passed else "o1",
                "passed": passed,
            },
            session="gold",
        )
    # peer predictions: alice and henry match, bob is the minority; grace's lone pairings
    for player, choice in ((ALICE, "o1"), (HENRY, "o1"), (BOB, "o2")):
        log.emit(
            player,
            "peer_prediction",
            6000,
            {"pairing_id": "pr-1", "scenario_id": "famine", "choice": choice},
            session="peer",
        )
    log.emit(
        GRACE,
        "peer_prediction",
        6100,
        {"pairing_id": "pr-2", "scenario_id": "drought", "choice": "o1", "peer_choice": "o2"},
        session="peer",
    )
    log.emit(
        GRACE,
        "peer_prediction",
        6200,
        {"pairing_id": "pr-3", "scenario_id": "famine", "choice": "o1", "peer_choice": "o1"},
        session="peer",
    )
    # bots: dave at exactly 2 s intervals; erin 22 events in about 11 s
    for n in range(BOT_EVENTS[DAVE]):
        _step(log, DAVE, 7000 + 2.0 * n, "ep-bot", n, session="farm", moisture=0.7)
    at = 8000.0
    for n in range(BOT_EVENTS[ERIN]):
        _step(log, ERIN, at, "ep-rush", n, session="rush", moisture=0.7 - 0.01 * n)
        at += 0.2 if n % 2 == 0 else 0.8
    malformed = dict(log.events[-1])
    # consent is applied at processing: the players whose steps, decisions and episodes plant
    # checks grant every data type before their first event (emitted last: earlier ids stay)
    for player in (FRANK, GRACE, HENRY):
        scopes = ["sft", "dpo", "rlds", "cot"]
        log.emit(player, "consent", -30, {"granted": True, "scopes": scopes}, session="acct")
    lines = [json.dumps(e) for e in log.events]
    malformed.update(
        event_id=f"{log.day}-malformed", event_type="decision", payload={"scenario_id": "famine"}
    )
    lines.append(json.dumps(malformed))
    log.lines = lines
    return log


def _day_two() -> _Log:
    log = _Log(DAYS[1])
    log.emit(ALICE, "consent", 0, {"granted": False, "scopes": ["dpo"]}, session="acct")
    _conversation(log, ALICE, 100, exchanges=3, karma=50)
    _conversation(log, CAROL, 400, exchanges=3, karma=140)
    _decision(
        log, CAROL, 800, scenario="drought", state_hash="h-drought-2", ambiguity=0.8, reasoning=None
    )
    log.emit(
        CAROL, "deletion_request", 900, {"request_id": "del-carol", "scope": "all"}, session="acct"
    )
    log.lines = [json.dumps(e) for e in log.events]
    return log


def planted_days() -> dict[str, list[str]]:
    """Return the planted raw lines per ingest day."""
    return {log.day: log.lines for log in (_day_one(), _day_two())}


def write_planted(raw_root: str | Path) -> list[Path]:
    """Write the planted days under `<raw_root>/telemetry/<day>/planted.jsonl`."""
    paths = []
    for day, lines in planted_days().items():
        path = Path(raw_root) / SOURCE / day / "planted.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
