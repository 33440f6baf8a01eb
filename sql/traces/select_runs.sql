-- traces/runs: one row per run, in the order runs start in the raw files.
SELECT * FROM trace_runs ORDER BY source_file, first_line_no, run_id
