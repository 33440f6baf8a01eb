-- The first llm_request (by step) of every run with a step that passed the trace filtering rules
-- (candidate_requests), as temp table run_first_requests: its system prompt is part of the
-- near-duplicate key.
CREATE OR REPLACE TEMP TABLE run_first_requests AS
SELECT run_id, arg_min(request_k, t) AS request_k
FROM trace_steps_filtered
WHERE request_k IS NOT NULL
    AND run_id IN (SELECT run_id FROM candidate_requests)
GROUP BY run_id
