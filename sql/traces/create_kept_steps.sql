-- The steps that become samples (trace_steps.reason IS NULL), for the whole partition, with
-- their run's split group, task and model and their split (temp table kept_steps): the columns
-- of a sample that do not depend on its context, which each slice's samples (sft_turns) join to
-- their spilled contexts. The split is a stable hash of the run's split group (task id, else
-- goal), so a task is never in both splits.
CREATE OR REPLACE TEMP TABLE kept_steps AS
WITH runs AS (
    SELECT
        run_id,
        split_group,
        task_id,
        model,
        CASE
            WHEN ('0x' || left(sha256(split_group), 16))::UBIGINT % getvariable('split_buckets')
                < getvariable('eval_fraction') * getvariable('split_buckets') THEN 'eval'
            ELSE 'train'
        END AS split
    FROM trace_runs
)
SELECT k.*, runs.* EXCLUDE (run_id)
FROM trace_steps AS k
JOIN runs USING (run_id)
WHERE k.reason IS NULL
