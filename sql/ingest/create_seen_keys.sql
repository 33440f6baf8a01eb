-- The de-duplication keys of the records a partition's parse accepted first, in earlier chunks
-- (see distill_assets.defs.ingest): a parse reads it to quarantine later copies of a key.
CREATE TEMP TABLE seen_keys (
    dedup_key VARCHAR,
    first_ref VARCHAR,
    first_line_hash VARCHAR
)
