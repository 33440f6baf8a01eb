"""Telemetry validation rules (docs/sources/telemetry.md#validation, anti-gaming included).

Seed stage 2: malformed data → immediate reject (ingest quarantine, `contracts.telemetry`);
impossible actions → flag for review; bot signatures → reject + investigate the account. Every
check below yields one `telemetry/validation` row per event that fails it.

Timestamp sanity (decision `flag`), per event; `client_ts` is the client's clock, `server_ts` the
gateway's (trusted):
- `client_ts_in_future`: client_ts later than server_ts by more than FUTURE_TOLERANCE_SECONDS
  (a client cannot send an event before it happened);
- `clock_skew`: client_ts earlier than server_ts by more than MAX_CLOCK_SKEW_SECONDS (the seed's
  client buffer holds events at most 30 s; minutes of lag mean a skewed or tampered clock);
- `turn_out_of_order` / `step_out_of_order`: within one conversation (by turn_index) or episode
  (by step_index), an event whose time (client_ts, else server_ts) is earlier than the previous
  one's: the client's own clock contradicts the sequence.

Action plausibility (decision `flag`), documented per action type in ACTION_RANGES: each listed
`action_details` value must lie in its physical range (`action_out_of_range`; unlisted action
types and fields are not range-checked). Impossible transitions: `step_index_backwards` (in
server arrival order, a step whose index is lower than one the episode already sent),
`action_after_episode_end` (a step the server received after the episode's `episode_end`), and
`chosen_option_not_offered` (a decision's chosen_option is none of its options).

Bot signatures (decision `reject`), per player and session over one ingest day, on the player's
action events (every event type but ACCOUNT_EVENT_TYPES), with at least BOT_MIN_EVENTS of them:
`inhuman_action_rate` (more than MAX_ACTIONS_PER_MINUTE over the session's span) or
`regular_intervals` (coefficient of variation of the gaps between consecutive events below
MIN_INTERVAL_CV: humans are irregular, scripts are not). A bot signature rejects every event of that
player on that day (check `bot_signature`) and flags the account (`telemetry/player_quality`).
"""

from __future__ import annotations

FUTURE_TOLERANCE_SECONDS = 5.0
MAX_CLOCK_SKEW_SECONDS = 300.0
# action_type -> action_details field -> (min, max), inclusive
ACTION_RANGES: dict[str, dict[str, tuple[float, float]]] = {
    "wheel_manipulation": {
        "hand_pressure": (0.0, 1.0),
        "lift_rate": (0.0, 1.0),
        "wheel_speed_adjust": (-1.0, 1.0),
    },
    "navigation": {"forward_velocity": (-1.0, 1.0), "lateral_velocity": (-1.0, 1.0)},
    "combat": {"swing_power": (0.0, 1.0), "guard_position": (-1.0, 1.0)},
}
ACCOUNT_EVENT_TYPES: tuple[str, ...] = ("consent", "deletion_request")
BOT_MIN_EVENTS = 20
MAX_ACTIONS_PER_MINUTE = 60.0
MIN_INTERVAL_CV = 0.1

FLAG = "flag"
REJECT = "reject"
CATEGORIES: dict[str, str] = {
    "client_ts_in_future": "timestamp_sanity",
    "clock_skew": "timestamp_sanity",
    "turn_out_of_order": "timestamp_sanity",
    "step_out_of_order": "timestamp_sanity",
    "action_out_of_range": "action_plausibility",
    "step_index_backwards": "action_plausibility",
    "action_after_episode_end": "action_plausibility",
    "chosen_option_not_offered": "action_plausibility",
    "bot_signature": "bot_signature",
}
DECISIONS: dict[str, str] = {
    check: REJECT if category == "bot_signature" else FLAG for check, category in CATEGORIES.items()
}
