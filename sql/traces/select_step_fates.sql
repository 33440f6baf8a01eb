-- Steps of the extraction by why they were dropped ('' for the steps that became samples).
SELECT coalesce(reason, '') AS reason, count(*) AS steps FROM trace_steps GROUP BY ALL
