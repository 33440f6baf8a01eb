-- Facts read from the text of a few llm_request events (view `events`), as temp table
-- request_shapes, in one scan: for every step that passed the seed 003 filters
-- (trace_steps_filtered.reason IS NULL), the shape of its request — its roles joined by "," and
-- whether every assistant message holds a tool call with JSON-object arguments (what a sample is
-- validated against before it is built); and for the runs of those steps, the md5 of the system
-- prompt of their first request (part of the near-duplicate key).
CREATE OR REPLACE TEMP TABLE request_shapes AS
WITH candidates AS (
    SELECT run_id, t, request_file, request_line
    FROM trace_steps_filtered
    WHERE reason IS NULL
),
firsts AS (
    SELECT run_id, arg_min(request_file, t) AS request_file, arg_min(request_line, t) AS request_line
    FROM trace_steps_filtered
    WHERE request_file IS NOT NULL AND run_id IN (SELECT run_id FROM candidates)
    GROUP BY run_id
),
wanted AS (
    SELECT
        coalesce(c.request_file, f.request_file) AS request_file,
        coalesce(c.request_line, f.request_line) AS request_line,
        coalesce(c.run_id, f.run_id) AS run_id,
        c.t,
        c.run_id IS NOT NULL AS wants_shape,
        f.run_id IS NOT NULL AS wants_prompt
    FROM candidates AS c
    FULL JOIN firsts AS f
        ON c.request_file = f.request_file AND c.request_line = f.request_line
),
parsed AS (
    SELECT
        w.run_id,
        w.t,
        w.wants_shape,
        CASE WHEN w.wants_shape THEN from_json(
            e.event,
            '{"payload":{"messages":[{"role":"VARCHAR",'
            || '"tool_calls":[{"function":{"arguments":"VARCHAR"}}]}]}}'
        ).payload.messages END AS shape,
        CASE WHEN w.wants_prompt
            THEN md5(coalesce(e.event ->> '$.payload.messages[0].content', '')) END AS prompt_hash
    FROM events AS e
    JOIN wanted AS w ON e.source_file = w.request_file AND e.line_no = w.request_line
    WHERE e.kind = 'llm_request'
)
SELECT
    run_id,
    t,
    wants_shape,
    array_to_string(list_transform(shape, lambda m: coalesce(m.role, '?')), ',') AS request_roles,
    coalesce(list_bool_and(list_transform(
        list_filter(shape, lambda m: m.role = 'assistant'),
        lambda m: len(m.tool_calls) > 0
            AND coalesce(json_valid(m.tool_calls[1].function.arguments), false)
            AND coalesce(json_type(m.tool_calls[1].function.arguments) = 'OBJECT', false)
    )), true) AS request_calls_ok,
    prompt_hash
FROM parsed
