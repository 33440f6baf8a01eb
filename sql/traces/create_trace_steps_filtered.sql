-- One row per agent step (run_id, t) with the trace filtering rules applied (temp table
-- trace_steps_filtered): `reason` is NULL for a step that passes them, else the first that
-- applies, in this order (rules/traces.py):
--   run_<skip_reason> (require_success), llm_parse_error, no_action, final_action,
--   unknown_action, no_llm_request, unknown_tool, missing_args, invalid_args, no_tool_result,
--   tool_not_ok (require_valid_tool_ok), recovery_step (unless include_recovery: the step right
--   after a failed tool call).
-- create_trace_steps.sql then validates and deduplicates what passed. The canonical tool call
-- (`target`) is {"type":"tool_call","name":..,"args":..} with `thought` removed.
CREATE OR REPLACE TEMP TABLE trace_steps_filtered AS
WITH tools AS (
    SELECT tool, list(arg ORDER BY arg) AS required, list({'arg': arg, 'types': json_types}) AS spec
    FROM tool_args
    GROUP BY tool
),
checked AS (
    SELECT
        s.*,
        r.success,
        r.skip_reason,
        -- the steps the rules after the run filter apply to (the others are dropped by it)
        r.success OR NOT $require_success AS considered,
        tools.tool IS NOT NULL AS known_tool,
        CASE WHEN considered AND s.action_args IS NOT NULL
            THEN list_has_all(json_keys(s.action_args), tools.required) END AS has_all_args,
        CASE WHEN considered AND s.action_args IS NOT NULL THEN
            len(json_keys(s.action_args)) = len(tools.required)
            AND list_bool_and(list_transform(
                tools.spec,
                lambda a: list_contains(a.types, json_type(s.action_args, '$.' || a.arg))
            ))
        END AS args_well_typed,
        CASE WHEN s.action_type = 'tool_call' AND s.action_args IS NOT NULL THEN json_object(
            'type', 'tool_call', 'name', s.tool_name, 'args', json(s.action_args)
        )::VARCHAR END AS target
    FROM trace_step_facts AS s
    JOIN trace_runs AS r USING (run_id)
    LEFT JOIN tools ON tools.tool = s.tool_name
),
-- window results on a narrow projection (wide rows make the window operator slow), for the
-- considered steps only (NULL for the others)
windowed AS (
    SELECT
        run_id,
        t,
        lag(obs_ok) OVER w = false AS after_failed_call,
        coalesce(sum(CASE WHEN obs_ok = false THEN 1 ELSE 0 END) OVER (
            w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ), 0) AS failed_calls_before,
        md5_number(target) AS call,
        -- the position of this call among the run's tool calls
        count(target) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS call_no
    FROM checked
    WHERE considered
    WINDOW w AS (PARTITION BY run_id ORDER BY t)
),
-- the tool-call history of the run before this step (its context's assistant turns) as an
-- order-sensitive fingerprint: the sum of a 64-bit hash of every earlier (call, position), twice
-- with different seeds (a running sum costs O(1) per step, a concatenation O(steps))
histories AS (
    SELECT
        run_id,
        t,
        after_failed_call,
        failed_calls_before,
        coalesce(sum(CASE WHEN call IS NOT NULL THEN hash(call, call_no, 1) END) OVER (
            w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ), 0)::VARCHAR || ':' || coalesce(sum(CASE WHEN call IS NOT NULL THEN hash(call, call_no, 2) END) OVER (
            w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING
        ), 0)::VARCHAR AS history
    FROM windowed
    WINDOW w AS (PARTITION BY run_id ORDER BY t)
)
-- the columns of the checks are not kept (only their verdict, `reason`)
SELECT
    * EXCLUDE (
        action_type, has_parse_error, has_result, considered, known_tool, has_all_args,
        args_well_typed
    ),
    CASE
        WHEN NOT considered THEN 'run_' || skip_reason
        WHEN action_type IS NULL AND has_parse_error THEN 'llm_parse_error'
        WHEN action_type IS NULL THEN 'no_action'
        WHEN action_type = 'final' THEN 'final_action'
        WHEN action_type <> 'tool_call' THEN 'unknown_action'
        WHEN request_k IS NULL THEN 'no_llm_request'
        WHEN NOT known_tool THEN 'unknown_tool'
        WHEN NOT coalesce(has_all_args, false) THEN 'missing_args'
        WHEN NOT args_well_typed THEN 'invalid_args'
        WHEN NOT has_result THEN 'no_tool_result'
        WHEN $require_valid_tool_ok AND NOT coalesce(obs_ok, false) THEN 'tool_not_ok'
        WHEN NOT $include_recovery AND after_failed_call THEN 'recovery_step'
    END AS reason
FROM checked
LEFT JOIN histories USING (run_id, t)
