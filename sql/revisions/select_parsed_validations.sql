-- Parse revision-loop validations (one JSON object per raw line) against the contract of
-- distill_assets/contracts/revisions.py. One output row per raw line: the bronze columns plus
-- quarantine_reason (NULL = accepted; the first failing test below wins) and quarantine_detail.
-- Among accepted lines, a second line for the same (turn_id, iteration) is quarantined as
-- duplicate_validation: the first one in (source_file, line_no) order is kept. Reads the view
-- `raw_lines` (one chunk of a partition, in order) and the table `seen_keys` (iterations accepted
-- in earlier chunks, with a hash of their line; see distill_assets.defs.ingest); `new_key` names
-- the iteration of a line accepted first here.
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
-- each document is parsed once for the kinds of its fields and once for their texts
parsed AS (
    SELECT
        *,
        json_type(doc, [
            '$', '$.turn_id', '$.ts', '$.iteration', '$.decision', '$.response', '$.query',
            '$.revision_hints', '$.revision_focus'
        ]) AS kinds,
        json_extract_string(doc, [
            '$.turn_id', '$.ts', '$.iteration', '$.decision', '$.response', '$.query',
            '$.revision_hints', '$.revision_focus'
        ]) AS texts
    FROM lines
),
typed AS (
    SELECT
        *,
        kinds[1] AS doc_type,
        kinds[2] AS turn_id_type,
        kinds[3] AS ts_type,
        kinds[4] AS iteration_type,
        kinds[5] AS decision_type,
        kinds[6] AS response_type,
        kinds[7] AS query_type,
        kinds[8] AS hints_type,
        kinds[9] AS focus_type,
        texts[1] AS turn_id_text,
        texts[2] AS ts_text,
        CASE WHEN kinds[8] = 'ARRAY' THEN json_type(doc, '$.revision_hints[*]') END
            AS hint_item_types
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
                THEN TRY_CAST(texts[3] AS BIGINT)
        END AS iteration_value,
        CASE WHEN decision_type = 'VARCHAR' THEN upper(trim(texts[4])) END
            AS decision_value,
        CASE WHEN response_type = 'VARCHAR' THEN texts[5] END AS response_value,
        CASE
            WHEN hints_type = 'VARCHAR' THEN [trim(texts[7])]
            WHEN hints_type = 'ARRAY'
                THEN list_transform(
                    json_extract_string(doc, '$.revision_hints[*]'), lambda h: trim(h)
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
),
chunk_ranked AS (
    SELECT
        *,
        row_number() OVER same_iteration AS chunk_occurrence,
        first_value(source_file || ':' || line_no) OVER same_iteration AS chunk_first_ref,
        first_value(line) OVER same_iteration AS chunk_first_line
    FROM keyed
    WINDOW same_iteration AS (
        PARTITION BY contract_reason IS NULL, turn_id_value, iteration_value
        ORDER BY source_file, line_no
    )
),
ranked AS (
    SELECT
        chunk_ranked.*,
        chunk_occurrence + (seen.first_ref IS NOT NULL)::INTEGER AS occurrence,
        coalesce(seen.first_ref, chunk_first_ref) AS first_ref,
        CASE
            WHEN seen.first_ref IS NOT NULL THEN md5(line) = seen.first_line_hash
            ELSE line = chunk_first_line
        END AS repeats_first
    FROM chunk_ranked
    LEFT JOIN seen_keys AS seen ON seen.dedup_key = chunk_ranked.iteration_key
)
SELECT
    left(sha256(source_file || chr(31) || line_no), 16) AS id,
    'revisions' AS source,
    source_file || ':' || line_no AS source_ref,
    source_file,
    line_no,
    line,
    utf8_replaced,
    turn_id_value AS turn_id,
    ts_value AS ts,
    iteration_value AS iteration,
    decision_value AS decision,
    CASE WHEN query_type = 'VARCHAR' THEN texts[6] END AS query,
    response_value AS response,
    list_filter(hints_value, lambda h: h <> '') AS revision_hints,
    CASE WHEN focus_type = 'VARCHAR' THEN nullif(trim(texts[8]), '') END
        AS revision_focus,
    CASE WHEN doc_type = 'OBJECT' THEN json_merge_patch(
        doc,
        '{"turn_id":null,"ts":null,"iteration":null,"query":null,"response":null,'
        || '"decision":null,"revision_hints":null,"revision_focus":null}'
    )::VARCHAR END AS extra,
    CASE
        WHEN contract_reason IS NOT NULL THEN contract_reason
        WHEN occurrence > 1 THEN 'duplicate_validation'
    END AS quarantine_reason,
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
        WHEN occurrence > 1 AND repeats_first
            THEN 'repeats ' || first_ref || ' (first occurrence kept)'
        WHEN occurrence > 1
            THEN 'conflicts with ' || first_ref || ' (first occurrence kept)'
    END AS quarantine_detail,
    CASE WHEN contract_reason IS NULL AND occurrence = 1 THEN iteration_key END AS new_key,
    CASE WHEN contract_reason IS NULL AND occurrence = 1 THEN md5(line) END
        AS new_key_line_hash
FROM ranked
ORDER BY source_file, line_no
