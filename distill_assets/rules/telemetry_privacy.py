"""Telemetry privacy rules (docs/privacy.md#de-identification): data protection and consent.

- Player ids: HMAC pseudonyms at ingest (`defs/player_ids.py`); never reversible.
- Timing "bucketed, not exact": past bronze every event time is floored to TIME_BUCKET_SECONDS
  (`event_time`); `client_ts` is dropped.
- Location "generalized, not precise": a payload `location` object (top level, or
  `observation.location` in trajectory steps) with `x`, `y` game-world coordinates and an optional
  `region` is replaced past bronze by the grid cell `region:floor(x/G):floor(y/G)` with
  G = LOCATION_GRID_UNITS, and the precise object is removed from the payload. Unknown envelope
  fields (`extra`, e.g. client device details) do not go past bronze.
- Consent "explicit opt-in", per data type (DATA_TYPES): a `consent` event grants or withdraws the
  listed scopes; per player and data type the latest consent event (server time, then event_id)
  wins; with no event the player's consent is CONSENT_DEFAULT_GRANTED (no consent). Scopes outside
  DATA_TYPES are ignored.
- Consent is applied at processing: an event of a data type (EVENT_DATA_TYPES) enters silver and
  everything built on it only when, at the event's server time, the player's latest consent event
  for that type (at or before it) granted it, and no later consent event withdrew it (a
  withdrawal removes the type's earlier rows, like a deletion). Other event types (outcomes,
  gold-standard results, peer predictions, consent, deletion requests) carry no training text.
- Deletion "can request removal": a `deletion_request` with scope `all` (or absent) removes the
  player from every data type; a scope naming one data type removes that type only.
- Player ids in text "hashed, not reversible": past bronze every payload string has (a) every
  token (a run of TOKEN_CHARS) whose HMAC, as written, lower-cased or upper-cased, is a known
  player_key, or which is itself a known player_key, and (b) every token of the game's player-id
  shape (PLAYER_ID_SHAPE, any case, known or not) replaced by PLAYER_PLACEHOLDER. Known keys are
  every player_key in bronze (all days; deletion requests stay in bronze, so a deleted player
  stays known).
- Raw files are the producer's landing area: kept RAW_RETENTION_DAYS after their date (the re-run
  window), then removed by `distill raw purge` (a deleted player's raw lines go with them).
"""

from __future__ import annotations

TIME_BUCKET_SECONDS = 60
LOCATION_GRID_UNITS = 100.0
DATA_TYPES: tuple[str, ...] = ("sft", "dpo", "rlds", "cot")
CONSENT_DEFAULT_GRANTED = False
DELETE_ALL_SCOPE = "all"
# event type -> the data type whose consent it needs (docs/privacy.md#consent)
EVENT_DATA_TYPES: dict[str, str] = {
    "dialogue_turn": "sft",
    "decision": "dpo",
    "trajectory_step": "rlds",
    "episode_end": "rlds",
    "reasoning": "cot",
}
# the game's player ids: `p_` then letters, digits, underscores (`p_4b1760bf50`); case-insensitive
PLAYER_ID_SHAPE = r"\bp_[a-z0-9_]+\b"
# the characters of a candidate token hashed against the known player keys (whole words only)
TOKEN_CHARS = r"[A-Za-z0-9_]{3,}"
PLAYER_PLACEHOLDER = "[REDACTED_PLAYER_ID]"
# days a raw telemetry day folder is kept after its date (re-run window), then `distill raw purge`
RAW_RETENTION_DAYS = 30
