-- Per raw file (the file of a run's first event) and run outcome: runs and their samples.
WITH samples AS (
    SELECT run_id, count(*) FILTER (WHERE reason IS NULL) AS samples
    FROM trace_steps
    GROUP BY run_id
)
SELECT r.source_file, r.skip_reason, count(*) AS runs, coalesce(sum(s.samples), 0) AS samples
FROM trace_runs AS r
LEFT JOIN samples AS s USING (run_id)
GROUP BY ALL
ORDER BY ALL
