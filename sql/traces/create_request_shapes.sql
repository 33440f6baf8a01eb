-- The small part of every slice's spilled request contexts (select_request_contexts.sql; the
-- files in session variable context_spills), as temp table request_shapes: the shape of each
-- candidate step's request (wants_context) and the prompt hash of each run's first request
-- (wants_prompt). Parquet is columnar: the contexts themselves are not read.
-- create_trace_steps.sql validates and deduplicates with it.
CREATE OR REPLACE TEMP TABLE request_shapes AS
SELECT run_id, t, wants_context, request_roles, request_calls_ok, prompt_hash
FROM read_parquet(getvariable('context_spills'))
