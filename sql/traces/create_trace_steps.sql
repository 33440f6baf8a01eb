-- One row per agent step (run_id, t) with its fate (temp table trace_steps): `reason` is NULL
-- for a step that becomes a sample, else why it was dropped — the trace filtering rules
-- (create_trace_steps_filtered.sql), then
--   invalid_sample (validate: the request's roles are system, user, then per tool call an
--     assistant message and one tool message, with DRIVER NOTE system messages anywhere after
--     the assistant message; every assistant call has JSON-object arguments),
--   duplicate (dedup: same system prompt, goal, tool-call history and target as an earlier
--     valid sample; the earliest by action time, run, step is kept).
CREATE OR REPLACE TEMP TABLE trace_steps AS
WITH prompts AS (
    SELECT run_id, any_value(prompt_hash) AS prompt_hash
    FROM request_shapes
    WHERE prompt_hash IS NOT NULL
    GROUP BY run_id
),
validated AS (
    SELECT
        f.*,
        r.goal,
        s.request_roles,
        CASE
            WHEN f.reason IS NOT NULL THEN f.reason
            WHEN $validate AND NOT (
                regexp_full_match(s.request_roles, $request_role_order) AND s.request_calls_ok
            ) THEN 'invalid_sample'
        END AS pre_dedup_reason,
        CASE WHEN pre_dedup_reason IS NULL THEN md5(concat_ws(
            chr(31), coalesce(p.prompt_hash, ''), coalesce(r.goal, ''), f.history, f.target
        )) END AS dedup_key
    FROM trace_steps_filtered AS f
    JOIN trace_runs AS r ON r.run_id = f.run_id
    LEFT JOIN request_shapes AS s ON s.wants_context AND s.run_id = f.run_id AND s.t = f.t
    LEFT JOIN prompts AS p ON p.run_id = f.run_id
),
first_of_key AS (
    SELECT dedup_key, min({'ts': action_ts, 'run_id': run_id, 't': t}) AS first
    FROM validated
    WHERE pre_dedup_reason IS NULL
    GROUP BY dedup_key
),
deduped AS (
    SELECT
        validated.*,
        first_of_key.first IS NOT NULL
            AND first_of_key.first <> {'ts': action_ts, 'run_id': run_id, 't': t} AS is_duplicate,
        CASE WHEN is_duplicate THEN left(sha256(concat_ws(
            chr(31), 'traces', 'sft', first_of_key.first.run_id, first_of_key.first.t::VARCHAR
        )), 16) END AS first_id
    FROM validated
    LEFT JOIN first_of_key
        ON validated.pre_dedup_reason IS NULL AND validated.dedup_key = first_of_key.dedup_key
)
SELECT
    run_id,
    t,
    CASE WHEN $dedup AND is_duplicate THEN 'duplicate' ELSE pre_dedup_reason END AS reason,
    CASE
        WHEN $dedup AND is_duplicate THEN 'same as ' || first_id
        WHEN pre_dedup_reason LIKE 'run\_%' ESCAPE '\' THEN 'run ' || run_id || ' ' || skip_reason
        WHEN pre_dedup_reason IN ('unknown_tool', 'missing_args', 'invalid_args')
            THEN tool_name || ' ' || action_args
        WHEN pre_dedup_reason = 'invalid_sample' THEN 'request roles ' || request_roles
    END AS detail,
    coalesce(action_file, first_file) AS source_file,
    coalesce(action_line, first_line) AS line_no,
    coalesce(action_ts, first_ts) AS event_time,
    tool_name,
    action_args AS target_args,
    target,
    coalesce(after_failed_call AND obs_ok, false) AS is_recovery,
    failed_calls_before,
    success
FROM deduped
