-- Parse revision-loop validations (one JSON object per raw line) against the contract of
-- distill_assets/contracts/revisions.py. One output row per raw line: the bronze columns plus
-- quarantine_reason (NULL = accepted; the first failing test below wins) and quarantine_detail.
-- `dedup_key` is the (turn_id, iteration) of an accepted line: a second line for the same key is
-- quarantined as duplicate_validation, the first one in (source_file, line_no) order is kept
-- (contracts.revisions.DEDUP). Reads the view `raw_lines` (one chunk of a partition, in order);
-- output in the same order. Parameters from the ingest (defs.ingest.UsualExtras):
-- $extra_sequence, $extra_structure.
WITH lines AS (
    SELECT
        source_file,
        line_no,
        line,
        utf8_replaced,
        is_last_line,
        CASE WHEN json_valid(line) THEN line END AS doc
    FROM raw_lines
),
objects AS (
    SELECT
        *,
        coalesce(starts_object(doc), false) AS is_object
    FROM lines
),
-- each object is parsed once for the compact JSON text of every contract field (their kinds and
-- string texts read off their first characters: macros json_kind, json_text) and once for its
-- keys
parsed AS (
    SELECT
        *,
        CASE
            WHEN doc IS NULL THEN NULL
            WHEN is_object THEN 'OBJECT'
            ELSE json_type(doc)
        END AS doc_type,
        CASE WHEN is_object THEN json_transform(doc, '{"turn_id":"JSON","ts":"JSON","iteration":"JSON","decision":"JSON","response":"JSON","query":"JSON","revision_hints":"JSON","revision_focus":"JSON"}')
        END AS f,
        CASE WHEN is_object THEN json_keys(doc) END AS keys
    FROM objects
),
typed AS (
    SELECT
        *,
        json_kind(f.turn_id) AS turn_id_type,
        json_kind(f.ts) AS ts_type,
        json_kind(f.iteration) AS iteration_type,
        json_kind(f.decision) AS decision_type,
        json_kind(f.response) AS response_type,
        json_kind(f.query) AS query_type,
        json_kind(f.revision_hints) AS hints_type,
        json_kind(f.revision_focus) AS focus_type,
        list_filter(keys, lambda k: NOT list_contains([
            'turn_id', 'ts', 'iteration', 'decision', 'response', 'query', 'revision_hints',
            'revision_focus'
        ], k)) AS extra_keys,
        json_value_text(f.turn_id) AS turn_id_text,
        json_value_text(f.ts) AS ts_text,
        CASE WHEN json_kind(f.revision_hints) = 'ARRAY'
            THEN json_type(f.revision_hints, '$[*]')
        END AS hint_item_types
    FROM parsed
),
valued AS (
    SELECT
        *,
        CASE
            WHEN turn_id_type = 'VARCHAR' THEN nullif(trim(turn_id_text), '')
            WHEN turn_id_type IN ('UBIGINT', 'BIGINT') THEN turn_id_text
        END AS turn_id_value,
        CASE
            WHEN ts_type IN ('UBIGINT', 'BIGINT', 'DOUBLE') THEN TRY_CAST(ts_text AS DOUBLE)
            WHEN ts_type = 'VARCHAR'
                AND regexp_matches(
                    ts_text, '[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|z|[+-]\d{2}(:?\d{2})?)$'
                )
                THEN epoch(TRY_CAST(ts_text AS TIMESTAMPTZ))
            WHEN ts_type = 'VARCHAR' THEN epoch(TRY_CAST(ts_text AS TIMESTAMP))
        END AS ts_value,
        CASE
            WHEN iteration_type IN ('UBIGINT', 'BIGINT')
                THEN TRY_CAST(f.iteration AS BIGINT)
        END AS iteration_value,
        CASE WHEN decision_type = 'VARCHAR' THEN upper(trim(json_text(f.decision))) END
            AS decision_value,
        CASE WHEN response_type = 'VARCHAR' THEN json_text(f.response) END AS response_value,
        CASE
            WHEN hints_type = 'VARCHAR' THEN [trim(json_text(f.revision_hints))]
            WHEN hints_type = 'ARRAY'
                THEN list_transform(
                    json_extract_string(f.revision_hints, '$[*]'), lambda h: trim(h)
                )
            ELSE []
        END AS hints_value
    FROM typed
),
checked AS (
    SELECT
        *,
        CASE
            WHEN doc IS NULL AND is_last_line THEN 'torn_last_line'
            WHEN doc IS NULL THEN 'invalid_json'
            WHEN doc_type <> 'OBJECT' THEN 'not_an_object'
            WHEN coalesce(turn_id_type, 'NULL') = 'NULL'
                OR (turn_id_type = 'VARCHAR' AND turn_id_value IS NULL) THEN 'missing_turn_id'
            WHEN turn_id_value IS NULL THEN 'invalid_turn_id'
            WHEN coalesce(ts_type, 'NULL') = 'NULL' THEN 'missing_ts'
            WHEN ts_value IS NULL OR NOT isfinite(ts_value)
                OR ts_value < 0 OR ts_value >= 4102444800 THEN 'invalid_ts'
            WHEN coalesce(iteration_type, 'NULL') = 'NULL' THEN 'missing_iteration'
            WHEN iteration_value IS NULL OR iteration_value < 1 THEN 'invalid_iteration'
            WHEN coalesce(decision_type, 'NULL') = 'NULL' THEN 'missing_decision'
            WHEN decision_value IS NULL
                OR decision_value NOT IN ('REVISE', 'APPROVE', 'FAIL') THEN 'invalid_decision'
            WHEN coalesce(response_type, 'NULL') = 'NULL'
                OR (response_type = 'VARCHAR' AND trim(response_value) = '')
                THEN 'missing_response'
            WHEN response_value IS NULL THEN 'invalid_response'
            WHEN coalesce(query_type, 'NULL') NOT IN ('NULL', 'VARCHAR') THEN 'invalid_query'
            WHEN coalesce(hints_type, 'NULL') NOT IN ('NULL', 'VARCHAR', 'ARRAY')
                OR (hints_type = 'ARRAY'
                    AND NOT list_bool_and(list_transform(hint_item_types, lambda t: t = 'VARCHAR'))
                ) THEN 'invalid_revision_hints'
            WHEN coalesce(focus_type, 'NULL') NOT IN ('NULL', 'VARCHAR')
                THEN 'invalid_revision_focus'
        END AS contract_reason
    FROM valued
),
keyed AS (
    SELECT
        *,
        -- the iteration is a number: the last separator splits the key unambiguously
        CASE WHEN contract_reason IS NULL THEN turn_id_value || chr(31) || iteration_value END
            AS iteration_key
    FROM checked
)
SELECT
    left(sha256(source_file || chr(31) || line_no), 16) AS id,
    'revisions' AS source,
    source_file || ':' || line_no AS source_ref,
    source_file,
    line_no,
    utf8_replaced,
    turn_id_value AS turn_id,
    ts_value AS ts,
    iteration_value AS iteration,
    decision_value AS decision,
    CASE WHEN query_type = 'VARCHAR' THEN json_text(f.query) END AS query,
    response_value AS response,
    list_filter(hints_value, lambda h: h <> '') AS revision_hints,
    CASE WHEN focus_type = 'VARCHAR' THEN nullif(trim(json_text(f.revision_focus)), '') END
        AS revision_focus,
    -- the usual unknown fields read by one json_transform, others by a merge patch of the
    -- whole document (the same text; defs.ingest.UsualExtras)
    CASE
        WHEN len(extra_keys) > 0 AND extra_keys = $extra_sequence
            THEN CAST(to_json(json_transform(doc, $extra_structure)) AS VARCHAR)
        WHEN len(extra_keys) > 0 THEN CAST(json_merge_patch(
            doc,
            '{"turn_id":null,"ts":null,"iteration":null,"query":null,"response":null,'
            || '"decision":null,"revision_hints":null,"revision_focus":null}'
        ) AS VARCHAR)
        WHEN doc_type = 'OBJECT' THEN '{}'
    END AS extra,
    extra_keys,
    contract_reason AS quarantine_reason,
    CASE
        WHEN contract_reason = 'invalid_json' THEN 'line is not valid JSON'
        WHEN contract_reason = 'torn_last_line'
            THEN 'last line of the file is not valid JSON (cut off while being written?)'
        WHEN contract_reason = 'not_an_object'
            THEN 'JSON ' || lower(doc_type) || ' where an object was expected'
        WHEN contract_reason LIKE 'missing_%'
            THEN substr(contract_reason, 9) || ' is absent, null or blank'
        WHEN contract_reason LIKE 'invalid_%'
            THEN substr(contract_reason, 9) || ' = '
            || left(json_extract(doc, '$.' || substr(contract_reason, 9))::VARCHAR, 200)
    END AS quarantine_detail,
    iteration_key AS dedup_key
FROM keyed
