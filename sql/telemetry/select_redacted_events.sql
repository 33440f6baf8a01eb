-- The telemetry parse after the contract's checks: the raw player id replaced by its keyed hash.
-- The checks are generated from contracts.telemetry.TelemetryEvent and its payload models
-- (lib.contract_sql.parse_statement, `then` = this statement): they end in the CTE `contract`,
-- whose columns this reads (`f`, the envelope's fields as JSON; `"t_<field>"` / `"v_<field>"`,
-- each field's JSON kind and value; `contract_reason`, `contract_detail`, `contract_extra`).
-- Bind parameters: $inner_pad, $outer_pad, the HMAC-SHA256 key pads (key XOR 0x36.. / 0x5c..,
-- 64 bytes, BLOB): player_key = sha256(outer_pad || sha256(inner_pad || player_id)); and
-- $extra_sequence, $extra_structure (defs.ingest.UsualExtras) for the generated `contract_extra`.
-- `line` is the line of a quarantined record as quarantine keeps it, with every occurrence of the
-- player id replaced by its key (macro redact_line; the id is found as the `player_id` value,
-- parsed or, in broken JSON, by pattern; a line that holds an id under no `player_id` key is kept
-- as is), NULL for an accepted record; the caller keeps `line` out of bronze. `dedup_key` is the
-- event id of a valid record: the first valid record of an id (by source_file, line_no) is kept,
-- later ones are quarantined as duplicate_event_id (contracts.telemetry.DEDUP), their line
-- redacted from `rewrite_id` / `rewrite_id_json` (the contract's line_rewrite,
-- select_repeated_lines.sql). `raw_lines` is one chunk of a partition (in order); output in the
-- same order.
WITH identified AS (
    SELECT
        *,
        json_value_text(f.player_id) AS player_id_text,
        -- for quarantined records: the id exactly as written (a string's text, even if torn or
        -- escaped, else a bare number), so the kept raw line can be redacted
        CASE WHEN contract_reason IS NOT NULL THEN coalesce(
            nullif(regexp_extract(line, '"player_id"\s*:\s*"((?:[^"\\]|\\.)*)', 1), ''),
            regexp_extract(line, '"player_id"\s*:\s*(-?[0-9][^\s,}\]]*)', 1)
        ) END AS raw_id_text
    FROM contract
),
redacting AS (
    SELECT
        *,
        -- the id to hash and redact: the parsed value, else (broken records) its raw text
        CASE
            WHEN contract_reason IS NULL THEN player_id_text
            WHEN "t_player_id" IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE')
                AND trim(player_id_text) <> '' THEN player_id_text
            ELSE nullif(raw_id_text, '')
        END AS redact_id
    FROM identified
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
        "v_payload"::VARCHAR AS payload_raw,
        nullif(contract_extra, '{}') AS extra_raw
    FROM redacting
),
redacted AS (
    SELECT
        *,
        replace("v_event_id", redact_id, player_key) AS event_id,
        replace("v_session_id", redact_id, player_key) AS session_id,
        replace("v_schema_version", redact_id, player_key) AS schema_version,
        replace(payload_raw, redact_json, player_key) AS payload,
        replace(extra_raw, redact_json, player_key) AS extra
    FROM keyed
),
final AS (
    SELECT
        *,
        coalesce(
            contract_reason,
            -- a bare-token id (e.g. digits that also occur as a JSON number) cannot be replaced
            -- without breaking the JSON: quarantine rather than keep the raw id
            CASE WHEN (payload <> payload_raw AND NOT json_valid(payload))
                OR (extra <> extra_raw AND NOT json_valid(extra))
                THEN 'unredactable_player_id' END
        ) AS reason
    FROM redacted
)
SELECT
    source_file,
    line_no,
    utf8_replaced,
    CASE WHEN reason IS NULL THEN event_id END AS event_id,
    CASE WHEN reason IS NULL THEN "v_event_type" END AS event_type,
    CASE WHEN reason IS NULL THEN schema_version END AS schema_version,
    CASE WHEN reason IS NULL THEN player_key END AS player_key,
    CASE WHEN reason IS NULL THEN session_id END AS session_id,
    CASE WHEN reason IS NULL THEN "v_client_ts" END AS client_ts,
    CASE WHEN reason IS NULL THEN "v_server_ts" END AS server_ts,
    CASE WHEN reason IS NULL THEN payload END AS payload,
    CASE WHEN reason IS NULL THEN extra END AS extra,
    -- the redacted line of a record quarantined here; an accepted record may still be quarantined
    -- as a repeat, and the ingest then redacts its line from the two `rewrite_` columns
    -- (select_repeated_lines.sql): redacting every accepted line here would copy each one twice
    -- a line repeating `player_id` is redacted from the first value, which DuckDB read: every
    -- other value of the key becomes that key too, so no later raw id stays in quarantine
    CASE WHEN reason = 'duplicate_key'
        THEN regexp_replace(
            redact_line(line, redact_id, redact_json, raw_id_text, player_key),
            '("player_id"\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][^\s,}\]]*)',
            '\1"' || coalesce(player_key, '[REDACTED_PLAYER_ID]') || '"',
            'g'
        )
        WHEN reason IS NOT NULL
        THEN redact_line(line, redact_id, redact_json, raw_id_text, player_key)
    END AS line,
    CASE WHEN reason IS NULL THEN redact_id END AS rewrite_id,
    CASE WHEN reason IS NULL THEN redact_json END AS rewrite_id_json,
    extra_keys,
    reason AS quarantine_reason,
    contract_detail AS quarantine_detail,
    CASE WHEN reason IS NULL THEN event_id END AS dedup_key
FROM final
