-- The `sft_tools` feed rows (feed_schema("sft_tools")): the same samples as select_sft_steps in
-- the OpenAI/TRL tool-calling format. Each earlier tool call is an assistant message with
-- `tool_calls` (id call_<k>, arguments as a JSON object text, published as Arrow JSON) and
-- content '' (chat templates fail on null), followed by its `tool` message (tool_call_id call_<k>,
-- its output) and then, when it has DRIVER NOTEs, one user message holding them (no system
-- message after the first: Qwen3.5+ templates reject it); the target is an assistant message
-- calling this step's tool. `tools` holds one JSON schema text per tool ($tools: a JSON array).
-- Same order as select_sft_steps.
WITH rendered AS (
    SELECT
        *,
        [
            {
                'role': 'system', 'content': system_prompt,
                'tool_calls': NULL, 'tool_call_id': NULL::VARCHAR
            },
            {
                'role': 'user', 'content': goal_message,
                'tool_calls': NULL, 'tool_call_id': NULL::VARCHAR
            }
        ] AS opening,
        flatten(list_transform(turns, lambda u, k: list_concat(
            [
                {
                    'role': 'assistant',
                    'content': '',
                    'tool_calls': [{
                        'id': $call_id_prefix || k,
                        'type': 'function',
                        'function': {'name': u.name, 'arguments': u.args}
                    }],
                    'tool_call_id': NULL::VARCHAR
                },
                {
                    'role': 'tool',
                    'content': u.output,
                    'tool_calls': NULL,
                    'tool_call_id': $call_id_prefix || k
                }
            ],
            CASE WHEN len(u.notes) > 0 THEN [{
                'role': 'user',
                'content': array_to_string(u.notes, $note_separator),
                'tool_calls': NULL,
                'tool_call_id': NULL::VARCHAR
            }] ELSE [] END
        ))) AS history,
        [{
            'role': 'assistant',
            'content': '',
            'tool_calls': [{
                'id': $call_id_prefix || (len(turns) + 1),
                'type': 'function',
                'function': {'name': tool_name, 'arguments': target_args}
            }],
            'tool_call_id': NULL::VARCHAR
        }] AS closing
    FROM sft_turns
)
SELECT
    left(sha256(concat_ws(chr(31), 'traces', 'sft_tools', run_id, t::VARCHAR)), 16) AS id,
    'traces' AS source,
    source_ref,
    quality_score,
    to_json(struct_insert(provenance, format := 'tools'))::VARCHAR AS metadata,
    list_concat(opening, history, closing) AS messages,
    list_transform(json_extract($tools::JSON, '$[*]'), lambda t: t::VARCHAR) AS tools,
    split_group,
    event_time,
    run_id,
    t,
    task_id,
    tool_name,
    sample_kind,
    split,
    source_file,
    line_no
FROM rendered
ORDER BY source_file, line_no
