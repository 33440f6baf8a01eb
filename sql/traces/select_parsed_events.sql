-- Parse raw trace lines (view raw_lines) into bronze traces/events columns plus a quarantine
-- reason (NULL for a good event), following distill_assets/contracts/traces.py: required ts
-- (number), kind or its alias type (string), run_id (string), payload (object); optional meta
-- (object); an integer payload.t on step events; llm_request.payload.messages a non-empty array
-- of messages. Bronze keeps the event verbatim (`event`: the ingest puts the input line there,
-- contracts.traces.RAW, so the text is never copied out of DuckDB), so unknown fields are kept as
-- written, beside the envelope and the small step fields the same parse reads: the tool and
-- action of a call, its arguments, the outcome an event reports (`ok`), a run's goal and model.
-- One json_extract with a list of paths reads every checked field in one parse (TRY makes an
-- invalid line NULL). A valid line is an object iff its first character is `{`; a payload with a
-- `t` is an object, so only payloads without one (small run-level events) are typed separately;
-- likewise a meta holding task_id, model or goal (not serializing every meta saves a quarter of
-- the parse).
WITH fields AS (
    SELECT
        source_file,
        line_no,
        line,
        utf8_replaced,
        is_last_line,
        TRY(json_extract(line, [
            '$.ts',
            '$.kind',
            '$.type',
            '$.run_id',
            '$.payload.t',
            '$.payload.messages[0].role',
            '$.meta.task_id',
            '$.meta.model',
            '$.meta.goal'
        ])) AS f
    FROM raw_lines
),
enveloped AS (
    SELECT
        source_file,
        line_no,
        line,
        utf8_replaced,
        is_last_line,
        f IS NOT NULL AS valid,
        regexp_matches(line, '^[ \t]*\{') AS is_object,
        f[1] AS ts_json,
        f[2] AS kind_json,
        f[3] AS type_json,
        coalesce(f[2], f[3]) AS kind_any,
        f[4] AS run_id_json,
        f[5] AS t_json,
        f[6] AS first_role,
        f[7] AS task_id_json,
        f[8] AS model_json,
        f[9] AS meta_goal_json
    FROM fields
),
-- A JSON value that json_extract returns is serialized compactly: it is a string iff it starts
-- with `"`, an object iff with `{`, JSON null iff it is `null`, a number if it starts with a
-- digit. A string without a backslash has no escape, so its text is what lies between the
-- quotes (macro `json_text`, sql/macros). These checks replace json_type and `->> '$'` (a parse of
-- the value each) on the common values; others still go through them.
kinded AS (
    SELECT
        *,
        json_text(kind_any) AS kind
    FROM enveloped
),
-- the step fields live in small events: a second parse reads them there, never in the large
-- llm_request lines
typed AS (
    SELECT
        *,
        CASE WHEN valid AND kind IS DISTINCT FROM 'llm_request' THEN json_extract(line, [
            '$.payload.goal',
            '$.payload.action.type',
            '$.payload.action.name',
            '$.payload.action.args',
            '$.payload.tool',
            '$.payload.obs.ok',
            '$.payload.ok',
            '$.payload.state.last_test.ok',
            '$.payload.final.test_result.ok'
        ]) END AS g,
        CASE WHEN valid AND t_json IS NULL THEN json_type(line, '$.payload') END
            AS untimed_payload_type,
        -- a meta with task_id, model or goal is an object; only the others are typed here
        CASE WHEN valid AND task_id_json IS NULL AND model_json IS NULL AND meta_goal_json IS NULL
            THEN json_type(line, '$.meta') END AS bare_meta_type
    FROM kinded
),
stepped AS (
    SELECT
        * EXCLUDE (g),
        CASE WHEN kind = 'run_start' THEN coalesce(g[1], meta_goal_json) ELSE meta_goal_json END
            AS goal_json,
        g[2] AS action_json,
        g[3] AS action_name_json,
        g[4] AS args_json,
        g[5] AS tool_json,
        coalesce(g[3], g[5]) AS tool_any_json,
        CASE kind
            WHEN 'tool_result' THEN g[6]
            WHEN 'tests' THEN g[7]
            WHEN 'run_end' THEN g[8]
            WHEN 'final' THEN g[9]
        END AS ok_json
    FROM typed
),
checked AS (
    SELECT
        *,
        CASE
            WHEN NOT valid AND is_last_line THEN 'torn_last_line'
            WHEN NOT valid THEN 'invalid_json'
            WHEN NOT is_object THEN 'not_an_object'
            WHEN has_duplicate_key(line) THEN 'duplicate_key'
            WHEN kind_any IS NULL THEN 'missing_kind'
            WHEN NOT starts_with(kind_any, '"') OR kind = '' THEN 'invalid_kind'
            WHEN kind_json IS NOT NULL AND type_json IS NOT NULL AND kind_json <> type_json
                THEN 'conflicting_kind'
            WHEN run_id_json IS NULL THEN 'missing_run_id'
            WHEN NOT starts_with(run_id_json, '"') OR run_id_json::VARCHAR = '""'
                THEN 'invalid_run_id'
            WHEN ts_json IS NULL THEN 'missing_ts'
            WHEN CASE WHEN left(ts_json, 1) BETWEEN '0' AND '9' THEN false
                ELSE json_type(ts_json) NOT IN ('DOUBLE', 'BIGINT', 'UBIGINT') END
                THEN 'invalid_ts'
            WHEN t_json IS NULL AND untimed_payload_type IS NULL THEN 'missing_payload'
            WHEN t_json IS NULL AND untimed_payload_type <> 'OBJECT' THEN 'invalid_payload'
            WHEN bare_meta_type NOT IN ('OBJECT', 'NULL') THEN 'invalid_meta'
            WHEN kind IN ('llm_request', 'llm_action', 'llm_parse_error', 'tool_result')
                AND CASE WHEN regexp_full_match(t_json, '[0-9]{1,18}') THEN false
                    ELSE coalesce(json_type(t_json), '') NOT IN ('BIGINT', 'UBIGINT') END
                THEN 'missing_t'
            WHEN kind = 'llm_request' AND first_role IS NULL THEN 'invalid_messages'
        END AS quarantine_reason
    FROM stepped
),
texts AS (
    SELECT
        *,
        json_text(run_id_json) AS run_id_text,
        json_text(task_id_json) AS task_id_text,
        json_text(model_json) AS model_text,
        json_text(goal_json) AS goal_text,
        json_text(action_json) AS action_text,
        json_text(tool_any_json) AS tool_text
    FROM checked
)
SELECT
    source_file,
    line_no,
    CASE WHEN quarantine_reason IS NULL THEN ts_json::DOUBLE END AS ts,
    CASE WHEN quarantine_reason IS NULL THEN kind END AS kind,
    CASE WHEN quarantine_reason IS NULL THEN run_id_text END AS run_id,
    CASE WHEN quarantine_reason IS NULL THEN t_json::BIGINT END AS t,
    CASE WHEN quarantine_reason IS NULL THEN task_id_text END AS task_id,
    CASE WHEN quarantine_reason IS NULL THEN model_text END AS model,
    CASE WHEN quarantine_reason IS NULL THEN goal_text END AS goal,
    CASE WHEN quarantine_reason IS NULL THEN action_text END AS action,
    CASE WHEN quarantine_reason IS NULL THEN tool_text END AS tool,
    CASE WHEN quarantine_reason IS NULL AND starts_with(args_json::VARCHAR, '{')
        THEN args_json::VARCHAR END AS args,
    CASE WHEN quarantine_reason IS NULL THEN
        CASE ok_json::VARCHAR WHEN 'true' THEN true WHEN 'false' THEN false END
    END AS ok,
    utf8_replaced,
    quarantine_reason,
    CASE quarantine_reason
        WHEN 'torn_last_line' THEN 'last line of the file is not valid JSON'
        WHEN 'invalid_json' THEN 'line is not valid JSON'
        WHEN 'not_an_object' THEN 'top-level JSON value is ' || lower(json_type(line))
        WHEN 'duplicate_key' THEN 'repeated key: ' || duplicate_key(line)
        WHEN 'missing_kind' THEN 'no kind or type field'
        WHEN 'invalid_kind' THEN 'kind is ' || kind_any
        WHEN 'conflicting_kind' THEN 'kind ' || kind_json || ' vs type ' || type_json
        WHEN 'missing_run_id' THEN 'no run_id field'
        WHEN 'invalid_run_id' THEN 'run_id is ' || run_id_json
        WHEN 'missing_ts' THEN 'no ts field'
        WHEN 'invalid_ts' THEN 'ts is ' || ts_json
        WHEN 'missing_payload' THEN 'no payload field'
        WHEN 'invalid_payload' THEN 'payload is ' || lower(untimed_payload_type)
        WHEN 'invalid_meta' THEN 'meta is ' || lower(bare_meta_type)
        WHEN 'missing_t' THEN kind || ' payload has no integer t'
        WHEN 'invalid_messages' THEN 'messages is not a non-empty array of messages'
    END AS quarantine_detail
FROM texts
