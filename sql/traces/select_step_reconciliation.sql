-- The steps in a partition's bronze events ($events: distinct (run_id, t) of step events)
-- against the samples ($samples) and dropped steps ($dropped) written for it: every step must be
-- exactly one sample or one dropped step.
SELECT
    (
        SELECT count(*) FROM (
            SELECT DISTINCT run_id, t FROM read_parquet($events)
            WHERE kind IN ('llm_request', 'llm_action', 'llm_parse_error', 'tool_result')
                AND t IS NOT NULL
        )
    ) AS steps,
    (SELECT count(*) FROM read_parquet($samples)) AS samples,
    (SELECT count(*) FROM read_parquet($dropped)) AS dropped,
    (
        SELECT count(*) FROM (
            SELECT run_id, t FROM read_parquet($samples)
            INTERSECT
            SELECT run_id, t FROM read_parquet($dropped)
        )
    ) AS overlap
