-- Parse raw escalation lines (docs/sources/escalations.md#raw-contract,
-- contracts/escalations.py) into bronze columns plus a quarantine reason (NULL = accepted). Reads
-- the view `raw_lines` (one chunk of a partition, in (source_file, line_no) order); output in the
-- same order. Each object is parsed once for the compact JSON text of every contract field
-- (`json_transform` to a struct of JSON, whose kinds and string texts are read off their first
-- characters: macros json_kind, json_text) and once for its keys. The first failing rule names the
-- reason; `dedup_key` is the id of an accepted record (a later record with an id seen before is a
-- `duplicate_id`: contracts.escalations.DEDUP). Parameters (from
-- contracts.escalations.parse_parameters): $known_fields, $iso_pattern, $offset_pattern,
-- $max_unix_seconds, $domains, $reasoning_types, $field_structure; from the ingest
-- (defs.ingest.UsualExtras): $extra_sequence, $extra_structure.
WITH lines AS (
    SELECT
        source_file,
        line_no,
        line,
        utf8_replaced,
        is_last_line,
        json_valid(line) AS is_json
    FROM raw_lines
),
docs AS (
    SELECT
        *,
        is_json AND starts_object(line) AS is_object
    FROM lines
),
parsed AS (
    SELECT
        *,
        CASE WHEN is_json AND NOT is_object THEN json_type(line) END AS top_kind,
        -- every contract field's compact JSON text (NULL when absent or null), one parse
        CASE WHEN is_object THEN json_transform(line, $field_structure) END AS f,
        CASE WHEN is_object THEN json_keys(line) END AS keys
    FROM docs
),
typed AS (
    SELECT
        *,
        json_kind(f.id) AS t_id,
        json_kind(f.session_id) AS t_session_id,
        json_kind(f.created_at) AS t_created_at,
        json_kind(f."timestamp") AS t_timestamp,
        json_kind(f.query) AS t_query,
        json_kind(f.query_context) AS t_query_context,
        json_kind(f.sam_attempt) AS t_sam_attempt,
        json_kind(f.sam_confidence) AS t_sam_confidence,
        json_kind(f.sam_reasoning) AS t_sam_reasoning,
        json_kind(f.claude_response) AS t_claude_response,
        json_kind(f.domain) AS t_domain,
        json_kind(f.subdomain) AS t_subdomain,
        json_kind(f.task_type) AS t_task_type,
        json_kind(f.complexity) AS t_complexity,
        json_kind(f.reasoning_type) AS t_reasoning_type,
        list_filter(keys, lambda k: NOT list_contains($known_fields, k)) AS extra_keys
    FROM parsed
),
texts AS (
    SELECT
        *,
        CASE WHEN t_id = 'VARCHAR' THEN json_text(f.id) END AS s_id,
        CASE WHEN t_session_id = 'VARCHAR' THEN json_text(f.session_id) END AS s_session_id,
        CASE WHEN t_timestamp = 'VARCHAR' THEN json_text(f."timestamp") END AS s_timestamp,
        CASE WHEN t_query = 'VARCHAR' THEN json_text(f.query) END AS s_query,
        CASE WHEN t_query_context = 'VARCHAR' THEN json_text(f.query_context) END
            AS s_query_context,
        CASE WHEN t_sam_attempt = 'VARCHAR' THEN json_text(f.sam_attempt) END AS s_sam_attempt,
        CASE WHEN t_sam_reasoning = 'VARCHAR' THEN json_text(f.sam_reasoning) END
            AS s_sam_reasoning,
        CASE WHEN t_claude_response = 'VARCHAR' THEN json_text(f.claude_response) END
            AS s_claude_response,
        CASE WHEN t_domain = 'VARCHAR' THEN json_text(f.domain) END AS s_domain,
        CASE WHEN t_subdomain = 'VARCHAR' THEN json_text(f.subdomain) END AS s_subdomain,
        CASE WHEN t_task_type = 'VARCHAR' THEN json_text(f.task_type) END AS s_task_type,
        CASE WHEN t_reasoning_type = 'VARCHAR' THEN json_text(f.reasoning_type) END
            AS s_reasoning_type
    FROM typed
),
valued AS (
    SELECT
        *,
        s_id AS v_id,
        s_query AS v_query,
        s_claude_response AS v_response,
        s_timestamp AS v_timestamp,
        CASE
            WHEN t_created_at IN ('BIGINT', 'UBIGINT', 'HUGEINT', 'DOUBLE')
                THEN CAST(f.created_at AS DOUBLE)
        END AS v_created_at,
        CASE
            WHEN t_sam_confidence IN ('BIGINT', 'UBIGINT', 'HUGEINT', 'DOUBLE')
                THEN CAST(f.sam_confidence AS DOUBLE)
        END AS v_confidence,
        CASE
            WHEN t_complexity IN ('BIGINT', 'UBIGINT', 'HUGEINT')
                THEN try_cast(f.complexity AS BIGINT)
        END AS v_complexity
    FROM texts
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
            WHEN NOT is_object THEN 'not_an_object'
            WHEN t_query = 'NULL' OR (t_query = 'VARCHAR' AND is_blank(v_query))
                THEN 'missing_query'
            WHEN t_query <> 'VARCHAR' THEN 'invalid_query'
            WHEN t_claude_response = 'NULL' OR (t_claude_response = 'VARCHAR' AND is_blank(v_response))
                THEN 'missing_claude_response'
            WHEN t_claude_response <> 'VARCHAR' THEN 'invalid_claude_response'
            WHEN t_created_at = 'NULL' AND t_timestamp = 'NULL' THEN 'missing_timestamp'
            WHEN NOT (created_at_ok AND timestamp_ok) THEN 'invalid_timestamp'
            WHEN t_sam_confidence <> 'NULL' AND NOT coalesce(v_confidence BETWEEN 0 AND 1, false)
                THEN 'invalid_sam_confidence'
            WHEN t_id <> 'NULL' AND NOT coalesce(NOT is_blank(v_id), false) THEN 'invalid_id'
            WHEN t_session_id NOT IN ('NULL', 'VARCHAR') THEN 'invalid_session_id'
            WHEN t_query_context NOT IN ('NULL', 'VARCHAR') THEN 'invalid_query_context'
            WHEN t_sam_attempt NOT IN ('NULL', 'VARCHAR') THEN 'invalid_sam_attempt'
            WHEN t_sam_reasoning NOT IN ('NULL', 'VARCHAR') THEN 'invalid_sam_reasoning'
            WHEN t_domain <> 'NULL'
                AND NOT coalesce(
                    t_domain = 'VARCHAR' AND list_contains($domains, s_domain),
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
                    AND list_contains($reasoning_types, s_reasoning_type),
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
)
SELECT
    source_file,
    line_no,
    utf8_replaced,
    escalation_id AS id,
    v_id IS NULL AS id_derived,
    s_session_id AS session_id,
    coalesce(v_created_at, v_timestamp_seconds) AS created_at,
    v_timestamp AS "timestamp",
    v_query AS query,
    s_query_context AS query_context,
    s_sam_attempt AS sam_attempt,
    v_confidence AS sam_confidence,
    s_sam_reasoning AS sam_reasoning,
    v_response AS claude_response,
    s_domain AS domain,
    s_subdomain AS subdomain,
    s_task_type AS task_type,
    v_complexity AS complexity,
    s_reasoning_type AS reasoning_type,
    -- the document without its contract fields: the usual unknown fields read by one
    -- json_transform, others by a merge patch of the whole document (same text; defs.ingest)
    CASE
        WHEN len(extra_keys) > 0 AND extra_keys = $extra_sequence
            THEN CAST(to_json(json_transform(line, $extra_structure)) AS VARCHAR)
        WHEN len(extra_keys) > 0 THEN CAST(json_merge_patch(
            line,
            '{' || array_to_string(list_transform($known_fields, lambda k: to_json(k) || ':null'), ',')
                || '}'
        ) AS VARCHAR)
    END AS extra,
    extra_keys,
    invalid_reason AS quarantine_reason,
    CASE
        WHEN invalid_reason = 'not_an_object' THEN 'json ' || lower(top_kind)
        WHEN invalid_reason = 'invalid_timestamp' AND NOT created_at_ok
            THEN left('created_at = ' || CAST(json(line) -> 'created_at' AS VARCHAR), 200)
        WHEN invalid_reason LIKE 'invalid_%' AND invalid_reason <> 'invalid_json'
            THEN left(
                replace(invalid_reason, 'invalid_', '') || ' = '
                    || coalesce(CAST(json(line) -> replace(invalid_reason, 'invalid_', '') AS VARCHAR), 'null'),
                200
            )
    END AS quarantine_detail,
    CASE WHEN invalid_reason IS NULL THEN escalation_id END AS dedup_key
FROM checked
