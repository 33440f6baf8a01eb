-- Silver telemetry events: the bronze `events` whose keys `accepted` (event_id, event_seq:
-- select_accepted_keys.sql, written before) holds, in that order, with the privacy
-- generalisations of rules/telemetry_privacy.py applied (see defs/telemetry/privacy.py).
-- `flags` (event_id, check) lists the flag decisions kept with the event.
-- Bind parameters:
--   $bucket      seconds of the event-time bucket (event_time = floor(server_ts / bucket) * bucket)
--   $grid        game-world units of the location grid cell
--   $step_patch  JSON merge patch removing the precise location from trajectory steps
--   $patch       JSON merge patch removing the precise location from other payloads
--   $shape       regex of the game's player-id shape
--   $placeholder what replaces player ids
-- `mentions` (event_id, words) lists the known players' words of each text that names one
-- (select_player_mentions.sql); `every_texts` (event_id, payload) holds, already replaced, the
-- texts that go through every player-id regex; `{redact_player_ids}` is replaced before binding
-- by the expression choosing what each text goes through (defs/telemetry/privacy.py:
-- `redact_player_ids`, `replace_in_every_text`).
-- The payloads join the keys by event_id (present and unique in a bronze day); the caller
-- writes the rows in event_seq order. The keys filter the events (SEMI JOIN) and give event_seq
-- through a LEFT JOIN: taken through an inner join, the table's statistics (no NULL) would make
-- silver's event_seq a required Parquet column, where it has always been optional.
WITH kept AS (
    SELECT
        e.* EXCLUDE (payload),
        a.event_seq,
        {redact_player_ids} AS payload
    FROM events AS e
    SEMI JOIN accepted AS s ON e.event_id = s.event_id
    LEFT JOIN accepted AS a ON e.event_id = a.event_id
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
