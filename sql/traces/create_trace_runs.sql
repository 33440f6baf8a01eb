-- One row per run (temp table trace_runs) from the bronze events (view `events`) and the step
-- facts: what it was, how it ended, whether it succeeded and by which rule (rules/traces.py:
-- run_end.payload.state.last_test.ok, else final.payload.final.test_result.ok, else not
-- successful), and its step counts. Bronze rows are in (file, line) order, so its row number
-- `k` makes "first" and "last" deterministic.
CREATE OR REPLACE TEMP TABLE trace_runs AS
WITH keyed AS (
    SELECT run_id, kind, ts, source_file, line_no, task_id, goal, model, ok, file_row_number AS k
    FROM events
),
step_counts AS (
    SELECT
        run_id,
        count(*) AS steps,
        count(*) FILTER (WHERE action_type = 'tool_call') AS tool_calls,
        count(*) FILTER (WHERE has_result AND obs_ok) AS ok_tool_calls,
        count(*) FILTER (WHERE has_result AND NOT obs_ok) AS failed_tool_calls
    FROM trace_step_facts
    GROUP BY run_id
),
agg AS (
    SELECT
        run_id,
        arg_min(source_file, k) AS source_file,
        arg_min(line_no, k) AS first_line_no,
        count(DISTINCT source_file) AS files,
        count(*) AS events,
        min(ts) AS started_at,
        max(ts) AS ended_at,
        arg_min(task_id, k) FILTER (WHERE task_id IS NOT NULL) AS task_id,
        coalesce(
            arg_min(goal, k) FILTER (WHERE kind = 'run_start'),
            arg_min(goal, k) FILTER (WHERE goal IS NOT NULL)
        ) AS goal,
        arg_min(model, k) FILTER (WHERE model IS NOT NULL) AS model,
        bool_or(kind = 'run_start') AS has_run_start,
        bool_or(kind = 'run_end') AS has_run_end,
        bool_or(kind = 'final') AS has_final,
        bool_or(kind = 'llm_parse_error') AS has_parse_error,
        count(*) FILTER (WHERE kind = 'tests') AS test_runs,
        arg_max(ok, k) FILTER (WHERE kind = 'run_end') AS last_test_ok,
        arg_max(ok, k) FILTER (WHERE kind = 'final') AS final_test_ok
    FROM keyed
    GROUP BY run_id
),
decided AS (
    SELECT
        agg.*,
        CASE
            WHEN last_test_ok IS NOT NULL THEN $rule_run_end
            WHEN final_test_ok IS NOT NULL THEN $rule_final
            ELSE $rule_none
        END AS success_rule,
        coalesce(last_test_ok, final_test_ok, false) AS success,
        CASE
            WHEN has_final THEN 'final'
            WHEN has_run_end THEN 'max_iters'
            WHEN has_parse_error THEN 'llm_parse_error'
            ELSE 'incomplete'
        END AS ended_by
    FROM agg
)
SELECT
    left(sha256(concat_ws(chr(31), 'traces', 'run', d.run_id)), 16) AS id,
    'traces' AS source,
    'run:' || d.run_id AS source_ref,
    d.run_id,
    d.task_id,
    d.goal,
    coalesce(d.task_id, 'goal:' || left(sha256(coalesce(d.goal, '')), 16)) AS split_group,
    d.success,
    d.success_rule,
    d.ended_by,
    CASE
        WHEN d.success THEN NULL
        WHEN coalesce(d.last_test_ok, d.final_test_ok) = false THEN 'tests_failed'
        WHEN d.ended_by IN ('llm_parse_error', 'incomplete') THEN d.ended_by
        ELSE 'no_tests'
    END AS skip_reason,
    coalesce(c.steps, 0) AS steps,
    coalesce(c.tool_calls, 0) AS tool_calls,
    coalesce(c.ok_tool_calls, 0) AS ok_tool_calls,
    coalesce(c.failed_tool_calls, 0) AS failed_tool_calls,
    d.test_runs,
    d.model,
    d.has_run_start,
    d.has_run_end,
    d.events,
    d.started_at,
    d.ended_at,
    d.source_file,
    d.first_line_no,
    d.files
FROM decided AS d
LEFT JOIN step_counts AS c USING (run_id)
