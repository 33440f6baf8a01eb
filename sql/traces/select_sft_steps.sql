-- The `sft` feed rows (contracts/published.py feed_schema("sft")) in the `together` format of
-- docs/sources/traces.md#samples: system, GOAL user, then per earlier tool call an assistant
-- turn whose content is the canonical tool-call JSON and a user turn "[tool_result]\n<output>"
-- followed by its DRIVER NOTEs, and last the target assistant turn (this step's tool call). Ordered
-- by the step's llm_action position in the raw files (source_file, line_no).
SELECT
    left(sha256(concat_ws(chr(31), 'traces', 'sft', run_id, t::VARCHAR)), 16) AS id,
    'traces' AS source,
    source_ref,
    quality_score,
    to_json(struct_insert(provenance, format := 'together'))::VARCHAR AS metadata,
    list_concat(
        [
            {'role': 'system', 'content': system_prompt},
            {'role': 'user', 'content': goal_message}
        ],
        flatten(list_transform(turns, lambda u: [
            {'role': 'assistant', 'content': json_object(
                'type', 'tool_call', 'name', u.name, 'args', json(u.args)
            )::VARCHAR},
            {'role': 'user', 'content': $tool_result_prefix || u.output
                || array_to_string(list_transform(u.notes, lambda n: $note_separator || n), '')}
        ])),
        [{'role': 'assistant', 'content': target}]
    ) AS messages,
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
FROM sft_turns
ORDER BY source_file, line_no
