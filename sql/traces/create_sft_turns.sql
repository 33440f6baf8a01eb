-- The context of every kept step (trace_steps.reason IS NULL), read from the llm_request that
-- produced its action (view `events`), as temp view sft_turns: the system prompt, the GOAL user
-- message, and one turn per earlier assistant tool call — its tool name, canonical arguments
-- (`thought` removed), the output of its tool message cut to max_context_chars, and the DRIVER
-- NOTE system messages the agent put between that call and the next one (normalised to follow
-- the tool output); plus the columns both sample formats share (quality score, split, kind,
-- source_ref, and `provenance`: the metadata fields both formats publish).
-- A view takes no bind parameters: rule values come from session variables that
-- distill_assets.defs.traces.extract sets from rules/traces.py and the extraction options.
CREATE OR REPLACE TEMP VIEW sft_turns AS
WITH requests AS (
    SELECT
        k.*,
        from_json(
            e.event,
            '{"payload":{"messages":[{"role":"VARCHAR","content":"VARCHAR",'
            || '"tool_calls":[{"function":{"name":"VARCHAR","arguments":"VARCHAR"}}]}]}}'
        ).payload.messages AS m
    FROM events AS e
    JOIN trace_steps AS k ON e.source_file = k.request_file AND e.line_no = k.request_line
    WHERE e.kind = 'llm_request' AND k.reason IS NULL
),
segmented AS (
    SELECT
        *,
        list_filter(range(1, len(m) + 1), lambda i: m[i].role = 'assistant') AS apos
    FROM requests
),
turned AS (
    SELECT
        * EXCLUDE (m, apos),
        m[1].content AS system_prompt,
        m[2].content AS goal_message,
        list_transform(apos, lambda p, k: {
            'name': m[p].tool_calls[1].function.name,
            'args': json_merge_patch(
                m[p].tool_calls[1].function.arguments::JSON, getvariable('thought_patch')
            )::VARCHAR,
            'output': coalesce(list_filter(
                m[p + 1:coalesce(apos[k + 1], len(m) + 1) - 1], lambda x: x.role = 'tool'
            )[1].content, ''),
            'notes': list_transform(list_filter(
                m[p + 1:coalesce(apos[k + 1], len(m) + 1) - 1], lambda x: x.role = 'system'
            ), lambda x: coalesce(x.content, ''))
        }) AS full_turns
    FROM segmented
),
cut AS (
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
),
scored AS (
    SELECT
        *,
        CASE WHEN is_recovery THEN 'recovery' ELSE 'step' END AS sample_kind,
        CASE
            WHEN ('0x' || left(sha256(split_group), 16))::UBIGINT % getvariable('split_buckets')
                < getvariable('eval_fraction') * getvariable('split_buckets') THEN 'eval'
            ELSE 'train'
        END AS split,
        greatest(0.0, least(1.0,
            getvariable('quality_base')
            - CASE WHEN success THEN 0.0 ELSE getvariable('penalty_not_successful') END
            - CASE WHEN is_recovery THEN getvariable('penalty_recovery') ELSE 0.0 END
            - CASE WHEN truncated_outputs > 0 THEN getvariable('penalty_truncated') ELSE 0.0 END
            - getvariable('penalty_per_failed_call')
                * least(failed_calls_before, getvariable('max_failed_calls'))
        )) AS quality_score
    FROM cut
)
SELECT
    *,
    'run:' || run_id || '/step:' || t AS source_ref,
    {
        'run_id': run_id,
        't': t,
        'task_id': task_id,
        'tool': tool_name,
        'file': source_file,
        'line': line_no,
        'model': model,
        'run_success': success,
        'sample_kind': sample_kind,
        'split': split,
        'context_turns': len(turns),
        'truncated_outputs': truncated_outputs
    } AS provenance
FROM scored
