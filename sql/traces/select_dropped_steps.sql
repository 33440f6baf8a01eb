-- traces/dropped_steps: every step that did not become a sample, with the reason it left (see
-- create_trace_steps.sql), in raw-file order.
SELECT
    left(sha256(concat_ws(chr(31), 'traces', 'step', run_id, t::VARCHAR)), 16) AS id,
    'traces' AS source,
    'run:' || run_id || '/step:' || t AS source_ref,
    run_id,
    t,
    reason,
    detail,
    tool_name,
    target,
    success AS run_success,
    task_id,
    source_file,
    line_no,
    event_time
FROM trace_steps
WHERE reason IS NOT NULL
ORDER BY source_file, line_no, run_id, t
