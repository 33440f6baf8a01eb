-- The facts of every step event (view `events`: llm_request, llm_action, llm_parse_error,
-- tool_result) the step rules need, as temp table trace_events. Bronze already holds them as
-- columns (parsed with the envelope), so no event text is read here; a call's arguments lose
-- the `thought` the agent lets the model add (the canonical tool call has none). `k` is the
-- event's row number in bronze, which is in (file, line) order.
CREATE OR REPLACE TEMP TABLE trace_events AS
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
