"""Telemetry privacy rules (docs/privacy.md#de-identification): data protection and consent.

- Player ids: HMAC pseudonyms at ingest (`defs/telemetry/pseudonym.py`); never reversible.
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
- Deletion "can request removal": a `deletion_request` with scope `all` (or absent) removes the
  player from every data type; a scope naming one data type removes that type only.
"""

from __future__ import annotations

TIME_BUCKET_SECONDS = 60
LOCATION_GRID_UNITS = 100.0
DATA_TYPES: tuple[str, ...] = ("sft", "dpo", "rlds", "cot")
CONSENT_DEFAULT_GRANTED = False
DELETE_ALL_SCOPE = "all"
