-- One row per agent step (run_id, t) with the facts of its events (temp table
-- trace_step_facts): the llm_request that produced the action (its position), the
-- llm_action (position, time, type, tool, canonical arguments), an llm_parse_error, and the
-- tool_result's ok. A duplicated event (the same kind twice for one step) counts once: the first
-- in file order (`k`).
CREATE OR REPLACE TEMP TABLE trace_step_facts AS
SELECT
    run_id,
    t,
    arg_min(source_file, k) FILTER (WHERE kind = 'llm_request') AS request_file,
    arg_min(line_no, k) FILTER (WHERE kind = 'llm_request') AS request_line,
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
FROM trace_events
GROUP BY run_id, t
