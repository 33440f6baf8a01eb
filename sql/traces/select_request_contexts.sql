-- The llm_request text of one slice of steps, read once (view `events`); distill_assets.defs.
-- traces.sft_extraction writes the result to the slice's spill file. A slice is the bronze rows
-- [$lo, $hi): the steps that passed the trace filtering rules (candidate_requests) whose llm_action
-- lies there, and the first requests of runs (run_first_requests) that lie there. For every such
-- step, the shape of its request — its roles joined by "," and whether every assistant message
-- holds a tool call with JSON-object arguments (what a sample is validated against) — and its
-- context: the system prompt, the GOAL user message, and one turn per earlier assistant tool
-- call — its tool name, canonical arguments (`thought` removed), the output of its tool message
-- cut to max_context_chars, and the DRIVER NOTE system messages the agent put between that call
-- and the next one (normalised to follow the tool output). For a run's first request, the md5 of
-- its system prompt (part of the near-duplicate key). The join on the row number lets the
-- Parquet scan skip the row groups outside the slice's requests.
-- Rule values come from session variables that distill_assets.defs.traces.sft_extraction sets.
WITH candidates AS (
    SELECT run_id, t, request_k
    FROM candidate_requests
    WHERE action_k >= $lo AND action_k < $hi
),
firsts AS (
    SELECT run_id, request_k
    FROM run_first_requests
    WHERE request_k >= $lo AND request_k < $hi
),
wanted AS (
    SELECT
        coalesce(c.request_k, f.request_k) AS request_k,
        coalesce(c.run_id, f.run_id) AS run_id,
        c.t,
        c.run_id IS NOT NULL AS wants_context,
        f.run_id IS NOT NULL AS wants_prompt
    FROM candidates AS c
    FULL JOIN firsts AS f ON c.request_k = f.request_k
),
parsed AS (
    SELECT
        w.run_id,
        w.t,
        w.wants_context,
        w.wants_prompt,
        CASE WHEN w.wants_context THEN from_json(
            e.event,
            '{"payload":{"messages":[{"role":"VARCHAR","content":"VARCHAR",'
            || '"tool_calls":[{"function":{"name":"VARCHAR","arguments":"VARCHAR"}}]}]}}'
        ).payload.messages END AS m,
        CASE WHEN w.wants_prompt AND NOT w.wants_context
            THEN e.event ->> '$.payload.messages[0].content' END AS first_prompt
    FROM events AS e
    JOIN wanted AS w ON e.file_row_number = w.request_k
),
-- the positions of the assistant, tool and system messages (a turn's tool output and notes are
-- found by position, which is cheaper than slicing the messages)
segmented AS (
    SELECT
        *,
        list_filter(range(1, len(m) + 1), lambda i: m[i].role = 'assistant') AS apos,
        list_filter(range(1, len(m) + 1), lambda i: m[i].role = 'tool') AS tpos,
        list_filter(range(1, len(m) + 1), lambda i: m[i].role = 'system') AS spos
    FROM parsed
),
turned AS (
    SELECT
        run_id,
        t,
        wants_context,
        array_to_string(list_transform(m, lambda x: coalesce(x.role, '?')), ',') AS request_roles,
        coalesce(list_bool_and(list_transform(
            apos,
            lambda p: len(m[p].tool_calls) > 0
                AND coalesce(json_valid(m[p].tool_calls[1].function.arguments), false)
                AND coalesce(json_type(m[p].tool_calls[1].function.arguments) = 'OBJECT', false)
        )), true) AS request_calls_ok,
        CASE WHEN wants_prompt
            THEN md5(coalesce(CASE WHEN wants_context THEN m[1].content ELSE first_prompt END, ''))
        END AS prompt_hash,
        m[1].content AS system_prompt,
        m[2].content AS goal_message,
        list_transform(apos, lambda p, k: {
            'name': m[p].tool_calls[1].function.name,
            'args': json_merge_patch(
                TRY_CAST(m[p].tool_calls[1].function.arguments AS JSON),
                getvariable('thought_patch')
            )::VARCHAR,
            'output': coalesce(m[list_filter(
                tpos, lambda i: i > p AND i < coalesce(apos[k + 1], len(m) + 1)
            )[1]].content, ''),
            'notes': list_transform(list_filter(
                spos, lambda i: i > p AND i < coalesce(apos[k + 1], len(m) + 1)
            ), lambda i: coalesce(m[i].content, ''))
        }) AS full_turns
    FROM segmented
)
SELECT
    * EXCLUDE (full_turns),
    list_transform(full_turns, lambda u: {
        'name': u.name,
        'args': u.args,
        'output': CASE WHEN getvariable('max_context_chars') > 0
            THEN left(u.output, getvariable('max_context_chars')) ELSE u.output END,
        'notes': u.notes
    }) AS turns,
    CASE WHEN getvariable('max_context_chars') > 0 THEN len(list_filter(
        full_turns, lambda u: length(u.output) > getvariable('max_context_chars')
    )) ELSE 0 END AS truncated_outputs
FROM turned
