-- Silver telemetry events: bronze `events` without rejected events (`rejected`: event_id),
-- without players a deletion request removed from everything (`deleted`: player_key) and without
-- events of a data type their player had not consented to at the event's time, with the privacy
-- generalisations of rules/telemetry_privacy.py applied (see defs/telemetry/privacy.py).
-- `flags` (event_id, check) lists the flag decisions kept with the event. Consent:
-- `data_types` (event_type, data_type) maps the event types that need one; `consents`
-- (player_key, data_type, granted, decided_ts) holds every consent decision of all history;
-- `withdrawals` (player_key, data_type, withdrawn_ts) the latest withdrawal per player and type.
-- Bind parameters:
--   $bucket      seconds of the event-time bucket (event_time = floor(server_ts / bucket) * bucket)
--   $grid        game-world units of the location grid cell
--   $step_patch  JSON merge patch removing the precise location from trajectory steps
--   $patch       JSON merge patch removing the precise location from other payloads
--   $shape       regex of the game's player-id shape
--   $placeholder what replaces player ids
--   $default_granted  consent of a player with no consent event for the type
-- `mentions` (event_id, words) lists the known players' words of each text that names one
-- (select_player_mentions.sql); `every_texts` (event_id, payload) holds, already replaced, the
-- texts that go through every player-id regex; `{redact_player_ids}` is replaced before binding
-- by the expression choosing what each text goes through (defs/telemetry/privacy.py:
-- `redact_player_ids`, `replace_in_every_text`).
-- The consent join and the event order run on the events' keys only; the payloads join them
-- by event_id (present and unique in a bronze day) and are sorted once, for the output.
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
),
kept AS (
    SELECT
        e.* EXCLUDE (payload),
        a.event_seq,
        {redact_player_ids} AS payload
    FROM events AS e
    JOIN accepted AS a ON e.event_id = a.event_id
    LEFT JOIN mentions AS m ON e.event_id = m.event_id
    LEFT JOIN every_texts AS v ON e.event_id = v.event_id
),
located AS (
    SELECT
        *,
        -- most payloads carry no location: only those that mention one are parsed and patched
        contains(payload, '"location"') AS has_location,
        CASE WHEN contains(payload, '"location"') THEN coalesce(
            json_extract(payload, '$.location'), json_extract(payload, '$.observation.location')
        ) END AS location
    FROM kept
),
flagged AS (
    SELECT event_id, list_sort(list_distinct(list("check"))) AS flag_checks
    FROM flags
    GROUP BY event_id
)
SELECT
    l.event_id,
    l.event_type,
    l.player_key,
    l.session_id,
    floor(l.server_ts / $bucket) * $bucket AS event_time,
    l.event_seq,
    CASE WHEN l.has_location THEN json_merge_patch(
        l.payload::JSON, CASE WHEN l.event_type = 'trajectory_step' THEN $step_patch ELSE $patch END
    )::VARCHAR ELSE l.payload END AS payload,
    CASE WHEN json_type(l.location) = 'OBJECT'
        AND json_type(l.location, '$.x') IN ('BIGINT', 'UBIGINT', 'DOUBLE')
        AND json_type(l.location, '$.y') IN ('BIGINT', 'UBIGINT', 'DOUBLE')
        THEN coalesce(l.location ->> '$.region', '') || ':'
            || CAST(floor(CAST(l.location ->> '$.x' AS DOUBLE) / $grid) AS BIGINT) || ':'
            || CAST(floor(CAST(l.location ->> '$.y' AS DOUBLE) / $grid) AS BIGINT)
    END AS location_cell,
    f.flag_checks IS NOT NULL AS flagged,
    coalesce(f.flag_checks, []::VARCHAR[]) AS flag_checks,
    l.source_file || ':' || l.line_no AS source_ref
FROM located AS l
LEFT JOIN flagged AS f ON l.event_id = f.event_id
ORDER BY l.event_seq
