-- Runs of the extraction by why they are not successful ('' for successful runs).
SELECT coalesce(skip_reason, '') AS skip_reason, count(*) AS runs FROM trace_runs GROUP BY ALL
