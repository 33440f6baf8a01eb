-- One JSONL line per sample (of split $split, or all when NULL) in the `tools` format, as
-- OpenAI/TRL expect it: each message carries only its own keys (assistant: tool_calls; tool:
-- tool_call_id, content; others: content), and `tools` is the array of function schemas.
SELECT
    json(to_json(list_transform(messages, lambda m: CASE m.role
        WHEN 'assistant' THEN json_object('role', m.role, 'tool_calls', to_json(m.tool_calls))
        WHEN 'tool' THEN json_object(
            'role', m.role, 'tool_call_id', m.tool_call_id, 'content', m.content
        )
        ELSE json_object('role', m.role, 'content', m.content)
    END))) AS messages,
    json(to_json(list_transform(tools, lambda t: json(t)))) AS tools
FROM samples
WHERE $split IS NULL OR split = $split
ORDER BY source_file, line_no
