-- Exact-duplicate clusters of one config (rules: distill_assets/rules/curation.py).
-- Input `curation_keys`: row_nr, id, source_ref, quality_score, event_time, content_key (the
-- normalized content). A cluster is every row with the same content hash; its representative
-- (cluster_rank = 1) is the highest quality_score, then the earliest event_time, then the
-- smallest id, then the smallest source_ref, so the choice never depends on input order.
WITH hashed AS (
    SELECT
        row_nr,
        id,
        source_ref,
        quality_score,
        event_time,
        left(sha256(content_key), $hash_digits) AS content_hash
    FROM curation_keys
)
SELECT
    row_nr,
    content_hash,
    first_value(id) OVER cluster AS kept_id,
    row_number() OVER cluster AS cluster_rank
FROM hashed
WINDOW cluster AS (
    PARTITION BY content_hash
    ORDER BY
        quality_score DESC NULLS LAST,
        event_time ASC NULLS LAST,
        id ASC NULLS LAST,
        source_ref ASC NULLS LAST
)
ORDER BY row_nr
