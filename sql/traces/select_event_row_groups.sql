-- The row groups of a bronze events file ($path), in order: their rows and the size of their
-- event text (uncompressed, from the footer), which is what the extraction slices by.
SELECT row_group_num_rows AS rows, total_uncompressed_size AS event_bytes
FROM parquet_metadata($path)
WHERE path_in_schema = 'event'
ORDER BY row_group_id
