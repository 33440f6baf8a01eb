-- traces/dropped_steps: every step that did not become a sample, with the reason it left (see
-- create_trace_steps.sql), in raw-file order.
SELECT
    left(sha256(concat_ws(chr(31), 'traces', 'step', s.run_id, s.t::VARCHAR)), 16) AS id,
    'traces' AS source,
    'run:' || s.run_id || '/step:' || s.t AS source_ref,
    s.run_id,
    s.t,
    s.reason,
    s.detail,
    s.tool_name,
    s.target,
    s.success AS run_success,
    r.task_id,
    s.source_file,
    s.line_no,
    s.event_time
FROM trace_steps AS s
JOIN trace_runs AS r ON r.run_id = s.run_id
WHERE s.reason IS NOT NULL
ORDER BY s.source_file, s.line_no, s.run_id, s.t
