-- The keys of the silver telemetry events, in their order: bronze `events` without rejected
-- events (`rejected`: event_id), without players a deletion request removed from everything
-- (`deleted`: player_key) and without events of a data type their player had not consented to at
-- the event's time. Consent: `data_types` (event_type, data_type) maps the event types that need
-- one; `consents` (player_key, data_type, granted, decided_ts) holds every consent decision of all
-- history; `withdrawals` (player_key, data_type, withdrawn_ts) the latest withdrawal per player
-- and type. Written to a table of its own before `select_accepted_events.sql` reads it, so its
-- sort and the payloads' are not held at once (defs/telemetry/privacy.py:
-- `write_accepted_events`).
-- Bind parameters:
--   $default_granted  consent of a player with no consent event for the type
WITH typed AS (
    SELECT e.event_id, e.player_key, e.server_ts, t.data_type
    FROM events AS e
    LEFT JOIN data_types AS t ON e.event_type = t.event_type
    ANTI JOIN rejected AS r ON e.event_id = r.event_id
    ANTI JOIN deleted AS d ON e.player_key = d.player_key
),
consented AS (
    SELECT e.*, c.granted
    FROM typed AS e
    ASOF LEFT JOIN consents AS c
        ON e.player_key = c.player_key AND e.data_type = c.data_type
        AND e.server_ts >= c.decided_ts
),
accepted AS (
    SELECT
        e.event_id,
        -- the exact order within the partition survives the bucketing (the time itself does not)
        row_number() OVER (ORDER BY e.server_ts, e.event_id) AS event_seq
    FROM consented AS e
    LEFT JOIN withdrawals AS w ON e.player_key = w.player_key AND e.data_type = w.data_type
    WHERE e.data_type IS NULL
        OR (coalesce(e.granted, $default_granted) AND coalesce(w.withdrawn_ts < e.server_ts, true))
)
SELECT event_id, event_seq FROM accepted
