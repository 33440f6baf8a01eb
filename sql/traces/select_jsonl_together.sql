-- One JSONL line per sample (of split $split, or all when NULL) in the `together` chat format:
-- {"messages": [{role, content}, ...]}.
SELECT messages
FROM samples
WHERE $split IS NULL OR split = $split
ORDER BY source_file, line_no
