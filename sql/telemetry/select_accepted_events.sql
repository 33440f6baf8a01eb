-- Silver telemetry events: bronze `events` without rejected events (`rejected`: event_id) and
-- without players a deletion request removed from everything (`deleted`: player_key), with the
-- privacy generalisations of rules/telemetry_privacy.py applied (see defs/telemetry/privacy.py).
-- `flags` (event_id, check) lists the flag decisions kept with the event.
-- Bind parameters:
--   $bucket      seconds of the event-time bucket (event_time = floor(server_ts / bucket) * bucket)
--   $grid        game-world units of the location grid cell
--   $step_patch  JSON merge patch removing the precise location from trajectory steps
--   $patch       JSON merge patch removing the precise location from other payloads
WITH kept AS (
    SELECT e.*
    FROM events AS e
    ANTI JOIN rejected AS r ON e.event_id = r.event_id
    ANTI JOIN deleted AS d ON e.player_key = d.player_key
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
    -- the exact order within the partition survives the bucketing (the time itself does not)
    row_number() OVER (ORDER BY l.server_ts, l.event_id) AS event_seq,
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
ORDER BY l.server_ts, l.event_id
