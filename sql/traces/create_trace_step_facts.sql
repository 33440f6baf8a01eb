-- One row per agent step (run_id, t) with the facts of its events (temp table
-- trace_step_facts), read from bronze columns (view `events`; no event text is read): the
-- llm_request that produced the action (its bronze row `request_k`), the llm_action (its bronze
-- row `action_k`, position, time, type, tool, canonical arguments), an llm_parse_error, and the
-- tool_result's ok. A duplicated event (the same kind twice for one step) counts once: the first
-- in file order (`k`, the event's row number in bronze, which is in (file, line) order). A
-- call's arguments lose the `thought` the agent lets the model add (the canonical tool call has
-- none).
CREATE OR REPLACE TEMP TABLE trace_step_facts AS
WITH step_events AS (
    SELECT
        file_row_number AS k,
        source_file,
        line_no,
        ts,
        kind,
        run_id,
        t,
        action AS action_type,
        tool AS action_name,
        CASE
            WHEN kind <> 'llm_action' THEN NULL
            WHEN contains(args, $thought_key) THEN json_merge_patch(args, $thought_patch)::VARCHAR
            ELSE args
        END AS action_args,
        CASE WHEN kind = 'tool_result' THEN ok END AS obs_ok
    FROM events
    WHERE kind IN ('llm_request', 'llm_action', 'llm_parse_error', 'tool_result') AND t IS NOT NULL
)
SELECT
    run_id,
    t,
    min(k) FILTER (WHERE kind = 'llm_request') AS request_k,
    min(k) FILTER (WHERE kind = 'llm_action') AS action_k,
    arg_min(source_file, k) FILTER (WHERE kind = 'llm_action') AS action_file,
    arg_min(line_no, k) FILTER (WHERE kind = 'llm_action') AS action_line,
    arg_min(ts, k) FILTER (WHERE kind = 'llm_action') AS action_ts,
    arg_min(action_type, k) FILTER (WHERE kind = 'llm_action') AS action_type,
    arg_min(action_name, k) FILTER (WHERE kind = 'llm_action') AS tool_name,
    arg_min(action_args, k) FILTER (WHERE kind = 'llm_action') AS action_args,
    bool_or(kind = 'llm_parse_error') AS has_parse_error,
    bool_or(kind = 'tool_result') AS has_result,
    arg_min(obs_ok, k) FILTER (WHERE kind = 'tool_result') AS obs_ok,
    arg_min(source_file, k) AS first_file,
    arg_min(line_no, k) AS first_line,
    min(ts) AS first_ts
FROM step_events
GROUP BY run_id, t
