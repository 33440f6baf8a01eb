-- Parse raw escalation lines (seed 000 "Interaction", contracts/escalations.py) into bronze columns
-- plus a quarantine reason (NULL = accepted). Reads the view `raw_lines` (one chunk of a partition,
-- in (source_file, line_no) order) and the table `seen_keys` (ids accepted in earlier chunks, see
-- distill_assets.defs.ingest); output ordered by (source_file, line_no). Each line is parsed once
-- for the JSON kinds of its fields, once for their texts and once for its keys (not once per
-- field). The first failing rule names the reason; a valid record whose id was already seen earlier
-- in the partition is a `duplicate_id`; `new_key` is the id of a record accepted first here.
-- Parameters (from contracts.escalations.parse_parameters): $known_fields, $iso_pattern,
-- $offset_pattern, $max_unix_seconds, $domains, $reasoning_types.
WITH objects AS (
    SELECT
        source_file,
        line_no,
        line,
        utf8_replaced,
        is_last_line,
        json_valid(line) AS is_json,
        CASE WHEN json_valid(line) THEN json_type(line, ['$', '$.id', '$.session_id', '$.created_at', '$.timestamp', '$.query', '$.query_context', '$.sam_attempt', '$.sam_confidence', '$.sam_reasoning', '$.claude_response', '$.domain', '$.subdomain', '$.task_type', '$.complexity', '$.reasoning_type']) END AS kinds
    FROM raw_lines
),
parsed AS (
    SELECT
        *,
        kinds[1] AS json_kind,
        kinds[1] = 'OBJECT' AS is_object,
        CASE WHEN kinds[1] = 'OBJECT' THEN json_extract_string(line, ['$.id', '$.session_id', '$.created_at', '$.timestamp', '$.query', '$.query_context', '$.sam_attempt', '$.sam_confidence', '$.sam_reasoning', '$.claude_response', '$.domain', '$.subdomain', '$.task_type', '$.complexity', '$.reasoning_type']) END AS texts,
        CASE WHEN kinds[1] = 'OBJECT' THEN json_keys(line) END AS keys
    FROM objects
),
typed AS (
    SELECT
        *,
        coalesce(CASE WHEN is_object THEN kinds[2] END, 'NULL') AS t_id,
        coalesce(CASE WHEN is_object THEN kinds[3] END, 'NULL') AS t_session_id,
        coalesce(CASE WHEN is_object THEN kinds[4] END, 'NULL') AS t_created_at,
        coalesce(CASE WHEN is_object THEN kinds[5] END, 'NULL') AS t_timestamp,
        coalesce(CASE WHEN is_object THEN kinds[6] END, 'NULL') AS t_query,
        coalesce(CASE WHEN is_object THEN kinds[7] END, 'NULL') AS t_query_context,
        coalesce(CASE WHEN is_object THEN kinds[8] END, 'NULL') AS t_sam_attempt,
        coalesce(CASE WHEN is_object THEN kinds[9] END, 'NULL') AS t_sam_confidence,
        coalesce(CASE WHEN is_object THEN kinds[10] END, 'NULL') AS t_sam_reasoning,
        coalesce(CASE WHEN is_object THEN kinds[11] END, 'NULL') AS t_claude_response,
        coalesce(CASE WHEN is_object THEN kinds[12] END, 'NULL') AS t_domain,
        coalesce(CASE WHEN is_object THEN kinds[13] END, 'NULL') AS t_subdomain,
        coalesce(CASE WHEN is_object THEN kinds[14] END, 'NULL') AS t_task_type,
        coalesce(CASE WHEN is_object THEN kinds[15] END, 'NULL') AS t_complexity,
        coalesce(CASE WHEN is_object THEN kinds[16] END, 'NULL') AS t_reasoning_type,
        list_filter(keys, lambda k: NOT list_contains($known_fields, k)) AS extra_keys
    FROM parsed
),
valued AS (
    SELECT
        *,
        CASE WHEN t_id = 'VARCHAR' THEN texts[1] END AS v_id,
        CASE WHEN t_query = 'VARCHAR' THEN texts[5] END AS v_query,
        CASE WHEN t_claude_response = 'VARCHAR' THEN texts[10] END AS v_response,
        CASE WHEN t_timestamp = 'VARCHAR' THEN texts[4] END AS v_timestamp,
        CASE
            WHEN t_created_at IN ('BIGINT', 'UBIGINT', 'HUGEINT', 'DOUBLE')
                THEN CAST(texts[3] AS DOUBLE)
        END AS v_created_at,
        CASE
            WHEN t_sam_confidence IN ('BIGINT', 'UBIGINT', 'HUGEINT', 'DOUBLE')
                THEN CAST(texts[8] AS DOUBLE)
        END AS v_confidence,
        CASE
            WHEN t_complexity IN ('BIGINT', 'UBIGINT', 'HUGEINT')
                THEN try_cast(texts[14] AS BIGINT)
        END AS v_complexity
    FROM typed
),
timed AS (
    SELECT
        *,
        CASE
            WHEN regexp_matches(v_timestamp, $iso_pattern)
                THEN epoch(try_cast(
                    CASE
                        WHEN regexp_matches(v_timestamp, $offset_pattern) THEN v_timestamp
                        ELSE v_timestamp || '+00:00'
                    END AS TIMESTAMPTZ
                ))
        END AS v_timestamp_seconds
    FROM valued
),
ranged AS (
    SELECT
        *,
        t_created_at = 'NULL'
            OR coalesce(v_created_at >= 0 AND v_created_at < $max_unix_seconds, false)
            AS created_at_ok,
        t_timestamp = 'NULL' OR v_timestamp_seconds IS NOT NULL AS timestamp_ok
    FROM timed
),
checked AS (
    SELECT
        *,
        CASE
            WHEN NOT is_json AND is_last_line THEN 'torn_last_line'
            WHEN NOT is_json THEN 'invalid_json'
            WHEN json_kind <> 'OBJECT' THEN 'not_an_object'
            WHEN t_query = 'NULL' OR (t_query = 'VARCHAR' AND trim(v_query) = '')
                THEN 'missing_query'
            WHEN t_query <> 'VARCHAR' THEN 'invalid_query'
            WHEN t_claude_response = 'NULL' OR (t_claude_response = 'VARCHAR' AND trim(v_response) = '')
                THEN 'missing_claude_response'
            WHEN t_claude_response <> 'VARCHAR' THEN 'invalid_claude_response'
            WHEN t_created_at = 'NULL' AND t_timestamp = 'NULL' THEN 'missing_timestamp'
            WHEN NOT (created_at_ok AND timestamp_ok) THEN 'invalid_timestamp'
            WHEN t_sam_confidence <> 'NULL' AND NOT coalesce(v_confidence BETWEEN 0 AND 1, false)
                THEN 'invalid_sam_confidence'
            WHEN t_id <> 'NULL' AND NOT coalesce(trim(v_id) <> '', false) THEN 'invalid_id'
            WHEN t_session_id NOT IN ('NULL', 'VARCHAR') THEN 'invalid_session_id'
            WHEN t_query_context NOT IN ('NULL', 'VARCHAR') THEN 'invalid_query_context'
            WHEN t_sam_attempt NOT IN ('NULL', 'VARCHAR') THEN 'invalid_sam_attempt'
            WHEN t_sam_reasoning NOT IN ('NULL', 'VARCHAR') THEN 'invalid_sam_reasoning'
            WHEN t_domain <> 'NULL'
                AND NOT coalesce(
                    t_domain = 'VARCHAR' AND list_contains($domains, texts[11]),
                    false
                )
                THEN 'invalid_domain'
            WHEN t_subdomain NOT IN ('NULL', 'VARCHAR') THEN 'invalid_subdomain'
            WHEN t_task_type NOT IN ('NULL', 'VARCHAR') THEN 'invalid_task_type'
            WHEN t_complexity <> 'NULL' AND NOT coalesce(v_complexity BETWEEN 1 AND 10, false)
                THEN 'invalid_complexity'
            WHEN t_reasoning_type <> 'NULL'
                AND NOT coalesce(
                    t_reasoning_type = 'VARCHAR'
                    AND list_contains($reasoning_types, texts[15]),
                    false
                )
                THEN 'invalid_reasoning_type'
        END AS invalid_reason,
        coalesce(
            v_id,
            left(
                sha256(
                    v_query || coalesce(v_timestamp, CAST(v_created_at AS VARCHAR))
                ),
                16
            )
        ) AS escalation_id
    FROM ranged
),
chunk_ranked AS (
    SELECT
        *,
        CASE WHEN invalid_reason IS NULL THEN row_number() OVER same_id END AS chunk_rank,
        CASE WHEN invalid_reason IS NULL THEN first_value(source_file || ':' || line_no) OVER same_id
        END AS chunk_first_ref
    FROM checked
    WINDOW same_id AS (
        PARTITION BY invalid_reason IS NULL, escalation_id ORDER BY source_file, line_no
    )
),
ranked AS (
    SELECT
        chunk_ranked.*,
        CASE WHEN invalid_reason IS NULL THEN chunk_rank + (seen.first_ref IS NOT NULL)::INTEGER
        END AS id_rank,
        coalesce(seen.first_ref, chunk_first_ref) AS first_ref
    FROM chunk_ranked
    LEFT JOIN seen_keys AS seen
        ON chunk_ranked.invalid_reason IS NULL AND seen.dedup_key = chunk_ranked.escalation_id
)
SELECT
    source_file,
    line_no,
    line,
    utf8_replaced,
    escalation_id AS id,
    v_id IS NULL AS id_derived,
    texts[2] AS session_id,
    coalesce(v_created_at, v_timestamp_seconds) AS created_at,
    v_timestamp AS "timestamp",
    v_query AS query,
    texts[6] AS query_context,
    texts[7] AS sam_attempt,
    v_confidence AS sam_confidence,
    texts[9] AS sam_reasoning,
    v_response AS claude_response,
    texts[11] AS domain,
    texts[12] AS subdomain,
    texts[13] AS task_type,
    v_complexity AS complexity,
    texts[15] AS reasoning_type,
    -- the document without its contract fields (one parse, not one per extra key)
    CASE
        WHEN len(extra_keys) > 0 THEN CAST(json_merge_patch(
            line,
            '{' || array_to_string(list_transform($known_fields, lambda k: to_json(k) || ':null'), ',')
                || '}'
        ) AS VARCHAR)
    END AS extra,
    coalesce(invalid_reason, CASE WHEN id_rank > 1 THEN 'duplicate_id' END) AS quarantine_reason,
    CASE
        WHEN invalid_reason IS NULL AND id_rank > 1
            THEN 'id ' || escalation_id || ' first seen at ' || first_ref
        WHEN invalid_reason = 'not_an_object' THEN 'json ' || lower(json_kind)
        WHEN invalid_reason = 'invalid_timestamp' AND NOT created_at_ok
            THEN left('created_at = ' || CAST(json(line) -> 'created_at' AS VARCHAR), 200)
        WHEN invalid_reason LIKE 'invalid_%' AND invalid_reason <> 'invalid_json'
            THEN left(
                replace(invalid_reason, 'invalid_', '') || ' = '
                    || coalesce(CAST(json(line) -> replace(invalid_reason, 'invalid_', '') AS VARCHAR), 'null'),
                200
            )
    END AS quarantine_detail,
    CASE WHEN invalid_reason IS NULL AND id_rank = 1 THEN escalation_id END AS new_key,
    NULL::VARCHAR AS new_key_line_hash
FROM ranked
ORDER BY source_file, line_no
