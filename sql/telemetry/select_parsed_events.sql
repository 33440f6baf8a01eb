-- Parse telemetry envelopes from `raw_lines` (see distill_assets.defs.ingest) into bronze rows with
-- `quarantine_reason` / `quarantine_detail`, the raw player id replaced by its keyed hash.
-- Bind parameters:
--   $inner_pad, $outer_pad  HMAC-SHA256 key pads (key XOR 0x36.. / 0x5c.., 64 bytes, BLOB):
--                           player_key = sha256(outer_pad || sha256(inner_pad || player_id))
--   $event_types, $speakers allowed values (contracts.telemetry)
--   $envelope_patch         JSON merge patch removing the envelope fields (what is left is `extra`)
--   $ts_min, $ts_max        plausible unix-second bounds of client_ts / server_ts
-- `line` is set for quarantined rows only, with every occurrence of the player id replaced by its
-- key (the id is found as the `player_id` value, parsed or, in broken JSON, by pattern; a line
-- that holds an id under no `player_id` key is kept as is); the caller keeps `line` out of
-- bronze. Duplicate event_id: the first valid record (by source_file, line_no) is kept, later
-- ones are quarantined as duplicate_event_id.
WITH docs AS (
    SELECT
        source_file,
        line_no,
        line,
        utf8_replaced,
        is_last_line,
        json_valid(line) AS is_json,
        CASE WHEN json_valid(line) AND json_type(line) = 'OBJECT' THEN line::JSON END AS doc
    FROM raw_lines
),
fields AS (
    SELECT
        *,
        coalesce(json_type(doc, '$.event_id'), 'NULL') AS event_id_kind,
        doc ->> '$.event_id' AS event_id_raw,
        coalesce(json_type(doc, '$.event_type'), 'NULL') AS event_type_kind,
        doc ->> '$.event_type' AS event_type_raw,
        coalesce(json_type(doc, '$.player_id'), 'NULL') AS player_id_kind,
        doc ->> '$.player_id' AS player_id_raw,
        doc ->> '$.schema_version' AS schema_version_raw,
        doc ->> '$.session_id' AS session_id_raw,
        coalesce(json_type(doc, '$.server_ts'), 'NULL') AS server_ts_kind,
        doc ->> '$.server_ts' AS server_ts_raw,
        coalesce(json_type(doc, '$.client_ts'), 'NULL') AS client_ts_kind,
        doc ->> '$.client_ts' AS client_ts_raw,
        coalesce(json_type(doc, '$.payload'), 'NULL') AS payload_kind,
        doc -> '$.payload' AS payload_doc,
        coalesce(json_type(doc, '$.payload.conversation_id'), 'NULL') AS conversation_id_kind,
        doc ->> '$.payload.conversation_id' AS conversation_id_raw,
        coalesce(json_type(doc, '$.payload.speaker'), 'NULL') AS speaker_kind,
        doc ->> '$.payload.speaker' AS speaker_raw,
        coalesce(json_type(doc, '$.payload.text'), 'NULL') AS text_kind,
        doc ->> '$.payload.text' AS text_raw,
        coalesce(json_type(doc, '$.payload.turn_index'), 'NULL') AS turn_index_kind,
        doc ->> '$.payload.turn_index' AS turn_index_raw
    FROM docs
),
timed AS (
    SELECT
        *,
        CASE
            WHEN server_ts_kind IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST(server_ts_raw AS DOUBLE)
            WHEN server_ts_kind = 'VARCHAR'
                AND regexp_matches(server_ts_raw, '[T ]\d\d:\d\d(:\d\d(\.\d+)?)?\s*([zZ]|[+-]\d\d(:?\d\d)?)$')
                THEN epoch(TRY_CAST(server_ts_raw AS TIMESTAMPTZ))
            WHEN server_ts_kind = 'VARCHAR' THEN epoch(TRY_CAST(server_ts_raw AS TIMESTAMP))
        END AS server_ts,
        CASE
            WHEN client_ts_kind IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST(client_ts_raw AS DOUBLE)
            WHEN client_ts_kind = 'VARCHAR'
                AND regexp_matches(client_ts_raw, '[T ]\d\d:\d\d(:\d\d(\.\d+)?)?\s*([zZ]|[+-]\d\d(:?\d\d)?)$')
                THEN epoch(TRY_CAST(client_ts_raw AS TIMESTAMPTZ))
            WHEN client_ts_kind = 'VARCHAR' THEN epoch(TRY_CAST(client_ts_raw AS TIMESTAMP))
        END AS client_ts
    FROM fields
),
checked AS (
    SELECT
        *,
        CASE
            WHEN NOT is_json AND is_last_line THEN 'torn_last_line'
            WHEN NOT is_json THEN 'invalid_json'
            WHEN doc IS NULL THEN 'not_an_object'
            WHEN event_id_kind = 'NULL' OR (event_id_kind = 'VARCHAR' AND trim(event_id_raw) = '')
                THEN 'missing_event_id'
            WHEN event_id_kind <> 'VARCHAR' THEN 'invalid_event_id'
            WHEN event_type_kind = 'NULL' OR (event_type_kind = 'VARCHAR' AND trim(event_type_raw) = '')
                THEN 'missing_event_type'
            WHEN event_type_kind <> 'VARCHAR' OR NOT list_contains($event_types, event_type_raw)
                THEN 'unknown_event_type'
            WHEN player_id_kind = 'NULL' OR (player_id_kind = 'VARCHAR' AND trim(player_id_raw) = '')
                THEN 'missing_player_id'
            WHEN player_id_kind <> 'VARCHAR' THEN 'invalid_player_id'
            WHEN server_ts_kind = 'NULL' THEN 'missing_server_ts'
            WHEN server_ts IS NULL OR NOT (server_ts >= $ts_min AND server_ts < $ts_max)
                THEN 'invalid_timestamp'
            WHEN client_ts_kind <> 'NULL'
                AND (client_ts IS NULL OR NOT (client_ts >= $ts_min AND client_ts < $ts_max))
                THEN 'invalid_timestamp'
            WHEN payload_kind = 'NULL' THEN 'missing_payload'
            WHEN payload_kind <> 'OBJECT' THEN 'invalid_payload'
            WHEN event_type_raw <> 'dialogue_turn' THEN NULL
            WHEN conversation_id_kind <> 'VARCHAR' OR trim(conversation_id_raw) = ''
                THEN 'missing_conversation_id'
            WHEN speaker_kind <> 'VARCHAR' THEN 'missing_speaker'
            WHEN NOT list_contains($speakers, speaker_raw) THEN 'invalid_speaker'
            WHEN text_kind <> 'VARCHAR' OR trim(text_raw) = '' THEN 'missing_text'
            WHEN turn_index_kind = 'NULL' THEN 'missing_turn_index'
            WHEN turn_index_kind NOT IN ('BIGINT', 'UBIGINT')
                OR coalesce(TRY_CAST(turn_index_raw AS BIGINT) < 0, true)
                THEN 'invalid_turn_index'
        END AS invalid_reason
    FROM timed
),
detailed AS (
    SELECT
        *,
        CASE invalid_reason
            WHEN 'not_an_object' THEN 'top-level JSON ' || lower(json_type(line))
            WHEN 'invalid_event_id' THEN 'event_id is ' || lower(event_id_kind)
            WHEN 'unknown_event_type' THEN 'event_type: ' || coalesce(event_type_raw, '?')
            WHEN 'invalid_player_id' THEN 'player_id is ' || lower(player_id_kind)
            WHEN 'invalid_timestamp' THEN
                CASE
                    WHEN server_ts IS NULL OR NOT (server_ts >= $ts_min AND server_ts < $ts_max)
                        THEN 'server_ts: ' || server_ts_raw
                    ELSE 'client_ts: ' || client_ts_raw
                END
            WHEN 'invalid_payload' THEN 'payload is ' || lower(payload_kind)
            WHEN 'missing_conversation_id' THEN 'conversation_id is '
                || CASE conversation_id_kind WHEN 'VARCHAR' THEN 'blank' ELSE lower(conversation_id_kind) END
            WHEN 'missing_speaker' THEN 'speaker is ' || lower(speaker_kind)
            WHEN 'invalid_speaker' THEN 'speaker: ' || speaker_raw
            WHEN 'missing_text' THEN 'text is '
                || CASE text_kind WHEN 'VARCHAR' THEN 'blank' ELSE lower(text_kind) END
            WHEN 'invalid_turn_index' THEN 'turn_index: ' || turn_index_raw
        END AS invalid_detail,
        -- for quarantined records: the id exactly as written (a string's text, even if torn or
        -- escaped, else a bare number), so the kept raw line can be redacted
        CASE WHEN invalid_reason IS NOT NULL THEN coalesce(
            nullif(regexp_extract(line, '"player_id"\s*:\s*"((?:[^"\\]|\\.)*)', 1), ''),
            regexp_extract(line, '"player_id"\s*:\s*(-?[0-9][^\s,}\]]*)', 1)
        ) END AS raw_id_text
    FROM checked
),
identified AS (
    SELECT
        *,
        -- the id to hash and redact: the parsed value, else (broken records) its raw text
        CASE
            WHEN invalid_reason IS NULL THEN player_id_raw
            WHEN player_id_kind IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE')
                AND trim(player_id_raw) <> '' THEN player_id_raw
            ELSE nullif(raw_id_text, '')
        END AS redact_id
    FROM detailed
),
keyed AS (
    SELECT
        *,
        CASE WHEN redact_id IS NOT NULL THEN
            sha256($outer_pad::BLOB || unhex(sha256($inner_pad::BLOB || encode(redact_id))))
        END AS player_key,
        -- the id as it appears inside serialized JSON strings
        CASE WHEN redact_id IS NOT NULL THEN
            substr(to_json(redact_id)::VARCHAR, 2, length(to_json(redact_id)::VARCHAR) - 2)
        END AS redact_json,
        payload_doc::VARCHAR AS payload_raw,
        nullif(json_merge_patch(doc, $envelope_patch)::VARCHAR, '{}') AS extra_raw
    FROM identified
),
redacted AS (
    SELECT
        *,
        replace(event_id_raw, redact_id, player_key) AS event_id,
        replace(session_id_raw, redact_id, player_key) AS session_id,
        replace(schema_version_raw, redact_id, player_key) AS schema_version,
        replace(payload_raw, redact_json, player_key) AS payload,
        replace(extra_raw, redact_json, player_key) AS extra
    FROM keyed
),
valid AS (
    SELECT
        *,
        coalesce(
            invalid_reason,
            -- a bare-token id (e.g. digits that also occur as a JSON number) cannot be replaced
            -- without breaking the JSON: quarantine rather than keep the raw id
            CASE WHEN (payload <> payload_raw AND NOT json_valid(payload))
                OR (extra <> extra_raw AND NOT json_valid(extra))
                THEN 'unredactable_player_id' END
        ) AS pre_reason
    FROM redacted
),
ranked AS (
    SELECT
        *,
        CASE WHEN pre_reason IS NULL THEN
            row_number() OVER (PARTITION BY pre_reason IS NULL, event_id ORDER BY source_file, line_no)
        END AS event_rank,
        CASE WHEN pre_reason IS NULL THEN
            first(source_file || ':' || line_no) OVER (
                PARTITION BY pre_reason IS NULL, event_id ORDER BY source_file, line_no
            )
        END AS first_seen
    FROM valid
),
final AS (
    SELECT
        *,
        CASE WHEN event_rank > 1 THEN 'duplicate_event_id' ELSE pre_reason END AS reason
    FROM ranked
)
SELECT
    source_file,
    line_no,
    utf8_replaced,
    CASE WHEN reason IS NULL THEN event_id END AS event_id,
    CASE WHEN reason IS NULL THEN event_type_raw END AS event_type,
    CASE WHEN reason IS NULL THEN schema_version END AS schema_version,
    CASE WHEN reason IS NULL THEN player_key END AS player_key,
    CASE WHEN reason IS NULL THEN session_id END AS session_id,
    CASE WHEN reason IS NULL THEN client_ts END AS client_ts,
    CASE WHEN reason IS NULL THEN server_ts END AS server_ts,
    CASE WHEN reason IS NULL THEN payload END AS payload,
    CASE WHEN reason IS NULL THEN extra END AS extra,
    CASE WHEN reason IS NOT NULL AND redact_id IS NULL THEN line
        WHEN reason IS NOT NULL THEN replace(
            replace(replace(line, redact_id, player_key), redact_json, player_key),
            coalesce(raw_id_text, ''),
            player_key
        )
    END AS line,
    reason AS quarantine_reason,
    CASE WHEN reason = 'duplicate_event_id' THEN 'first kept at ' || first_seen
        ELSE invalid_detail END AS quarantine_detail
FROM final
ORDER BY source_file, line_no
