-- Samples of an sft_steps file ($path) that break the `together` format: roles not in the order
-- system, user, (assistant, user)*, assistant; an assistant turn that is not a tool-call JSON
-- object {"type":"tool_call","name":..,"args":{..}}; a user turn after the GOAL that is not a
-- tool result; an empty content.
WITH samples AS (
    SELECT id, messages FROM read_parquet($path)
)
SELECT id, 'role_order' AS problem FROM samples
WHERE NOT regexp_full_match(
    array_to_string(list_transform(messages, lambda m: m.role), ','), $role_order
)
UNION ALL
SELECT id, 'assistant_not_tool_call' FROM samples
WHERE NOT list_bool_and(list_transform(
    list_filter(messages, lambda m: m.role = 'assistant'),
    lambda m: coalesce(json_valid(m.content), false)
        AND coalesce(m.content ->> '$.type' = 'tool_call', false)
        AND coalesce(json_type(m.content, '$.name') = 'VARCHAR', false)
        AND coalesce(json_type(m.content, '$.args') = 'OBJECT', false)
))
UNION ALL
SELECT id, 'tool_result_prefix' FROM samples
WHERE NOT list_bool_and(list_transform(
    list_filter(messages[3:], lambda m: m.role = 'user'),
    lambda m: starts_with(m.content, $tool_result_prefix)
))
UNION ALL
SELECT id, 'empty_content' FROM samples
WHERE list_bool_or(list_transform(messages, lambda m: coalesce(m.content, '') = ''))
ORDER BY id, problem
