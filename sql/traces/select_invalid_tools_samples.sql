-- Samples of an sft_tool_steps file ($path) that break the tool-calling format: roles not in the
-- order system, user, (assistant, tool, user?)*, assistant; an assistant message without
-- exactly one tool call with JSON-object arguments or with a null content; a tool message whose
-- tool_call_id is not the id of the call right before it; a `tools` value that is empty or holds
-- an entry that is not a JSON object.
WITH samples AS (
    SELECT id, messages, tools FROM read_parquet($path)
)
SELECT id, 'role_order' AS problem FROM samples
WHERE NOT regexp_full_match(
    array_to_string(list_transform(messages, lambda m: m.role), ','), $role_order
)
UNION ALL
SELECT id, 'bad_tool_call' FROM samples
WHERE NOT list_bool_and(list_transform(
    list_filter(messages, lambda m: m.role = 'assistant'),
    lambda m: len(m.tool_calls) = 1
        AND m.content IS NOT NULL
        AND coalesce(json_type(m.tool_calls[1].function.arguments) = 'OBJECT', false)
        AND m.tool_calls[1].type = 'function'
))
UNION ALL
SELECT id, 'tool_call_id' FROM samples
WHERE NOT list_bool_and(list_transform(
    range(1, len(messages) + 1),
    lambda i: messages[i].role <> 'tool'
        OR coalesce(messages[i].tool_call_id = messages[i - 1].tool_calls[1].id, false)
))
UNION ALL
SELECT id, 'tools_not_array' FROM samples
WHERE coalesce(len(tools), 0) = 0
    OR NOT list_bool_and(list_transform(tools, lambda t: coalesce(json_type(t) = 'OBJECT', false)))
ORDER BY id, problem
