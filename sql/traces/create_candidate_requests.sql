-- The steps that passed the trace filtering rules (trace_steps_filtered.reason IS NULL), with the
-- bronze rows of their llm_request and llm_action (temp table candidate_requests): what each
-- slice of select_request_contexts.sql selects its steps from, by the row of their action.
CREATE OR REPLACE TEMP TABLE candidate_requests AS
SELECT run_id, t, request_k, action_k
FROM trace_steps_filtered
WHERE reason IS NULL
