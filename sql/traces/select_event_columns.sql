-- The traces parse after the contract's checks: bronze traces/events' columns. The checks are
-- generated from contracts.traces.TraceEvent and its step payload models
-- (lib.contract_sql.extract_statement, `then` = this statement): they end in the CTE `contract`,
-- whose columns this reads (each path the contract reads as JSON text, `"$.meta.goal"`; `valid`;
-- `"v_kind"`, the event kind; `"v_<field>"`, a field's value for an accepted event;
-- `contract_reason`, `contract_detail`). Bronze keeps each event verbatim (`event`: the ingest
-- puts the input line there, contracts.traces.RAW, so the text is never copied out of DuckDB),
-- beside the envelope and the small step fields read here: the tool and action of a call, its
-- arguments, the outcome an event reports (`ok`), a run's goal and model. The step fields live
-- in small events: a second parse reads them there, never in the large llm_request lines.
WITH stepped AS (
    SELECT
        *,
        CASE WHEN valid AND "v_kind" IS DISTINCT FROM 'llm_request' THEN json_extract(line, [
            '$.payload.goal',
            '$.payload.action.type',
            '$.payload.action.name',
            '$.payload.action.args',
            '$.payload.tool',
            '$.payload.obs.ok',
            '$.payload.ok',
            '$.payload.state.last_test.ok',
            '$.payload.final.test_result.ok'
        ]) END AS g
    FROM contract
),
step_fields AS (
    SELECT
        * EXCLUDE (g),
        CASE WHEN "v_kind" = 'run_start' THEN coalesce(g[1], "$.meta.goal") ELSE "$.meta.goal" END
            AS goal_json,
        g[2] AS action_json,
        coalesce(g[3], g[5]) AS tool_json,
        g[4] AS args_json,
        CASE "v_kind"
            WHEN 'tool_result' THEN g[6]
            WHEN 'tests' THEN g[7]
            WHEN 'run_end' THEN g[8]
            WHEN 'final' THEN g[9]
        END AS ok_json
    FROM stepped
)
SELECT
    source_file,
    line_no,
    "v_ts" AS ts,
    CASE WHEN contract_reason IS NULL THEN "v_kind" END AS kind,
    "v_run_id" AS run_id,
    CASE WHEN contract_reason IS NULL THEN "$.payload.t"::BIGINT END AS t,
    CASE WHEN contract_reason IS NULL THEN json_text("$.meta.task_id") END AS task_id,
    CASE WHEN contract_reason IS NULL THEN json_text("$.meta.model") END AS model,
    CASE WHEN contract_reason IS NULL THEN json_text(goal_json) END AS goal,
    CASE WHEN contract_reason IS NULL THEN json_text(action_json) END AS action,
    CASE WHEN contract_reason IS NULL THEN json_text(tool_json) END AS tool,
    CASE WHEN contract_reason IS NULL AND starts_with(args_json::VARCHAR, '{')
        THEN args_json::VARCHAR END AS args,
    CASE WHEN contract_reason IS NULL THEN
        CASE ok_json::VARCHAR WHEN 'true' THEN true WHEN 'false' THEN false END
    END AS ok,
    utf8_replaced,
    contract_reason AS quarantine_reason,
    contract_detail AS quarantine_detail
FROM step_fields
