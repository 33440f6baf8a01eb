-- The contexts of the current slice's candidate steps (its spill file, session variable
-- slice_spill), as temp view slice_turns, which sft_turns joins to the kept steps.
CREATE OR REPLACE TEMP VIEW slice_turns AS
SELECT run_id, t, system_prompt, goal_message, turns, truncated_outputs
FROM read_parquet(getvariable('slice_spill'))
WHERE wants_context
