-- Every kept step (kept_steps) of the current slice with its context (view slice_turns, the slice's spilled request contexts: system prompt, GOAL user message, earlier
-- tool-call turns with outputs cut to max_context_chars and their DRIVER NOTEs), as temp view
-- sft_turns, plus the columns both sample formats share (quality score, split, kind, source_ref,
-- and `provenance`: the metadata fields both formats publish). The extraction's own `split` (what
-- `sft-extract` writes per split) stays out of `provenance`: the release splits by its own rule,
-- and published metadata must not name a split that disagrees.
-- A view takes no bind parameters: rule values come from session variables that
-- distill_assets.defs.traces.sft_extraction sets from rules/traces.py and the extraction options.
CREATE OR REPLACE TEMP VIEW sft_turns AS
WITH cut AS (
    SELECT
        k.*,
        c.system_prompt,
        c.goal_message,
        c.turns,
        c.truncated_outputs
    FROM kept_steps AS k
    JOIN slice_turns AS c ON c.run_id = k.run_id AND c.t = k.t
),
scored AS (
    SELECT
        *,
        CASE WHEN is_recovery THEN 'recovery' ELSE 'step' END AS sample_kind,
        greatest(0.0, least(1.0,
            getvariable('quality_base')
            - CASE WHEN success THEN 0.0 ELSE getvariable('penalty_not_successful') END
            - CASE WHEN is_recovery THEN getvariable('penalty_recovery') ELSE 0.0 END
            - CASE WHEN truncated_outputs > 0 THEN getvariable('penalty_truncated') ELSE 0.0 END
            - getvariable('penalty_per_failed_call')
                * least(failed_calls_before, getvariable('max_failed_calls'))
        )) AS quality_score
    FROM cut
)
SELECT
    *,
    'run:' || run_id || '/step:' || t AS source_ref,
    {
        'run_id': run_id,
        't': t,
        'task_id': task_id,
        'tool': tool_name,
        'file': source_file,
        'line': line_no,
        'model': model,
        'run_success': success,
        'sample_kind': sample_kind,
        'context_turns': len(turns),
        'truncated_outputs': truncated_outputs
    } AS provenance
FROM scored
