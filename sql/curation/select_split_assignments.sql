-- Train/test assignment by a stable hash of the row's group (rules: distill_assets/rules/curation.py).
-- Input `split_keys`: row_nr, id, split_group. bucket = first 16 hex digits of sha256(group) as an
-- unsigned integer, mod $buckets (the same as distill_assets.lib.hashing.split_bucket); buckets
-- below $test_buckets are the test split. An empty group falls back to the row's own id.
WITH grouped AS (
    SELECT
        row_nr,
        coalesce(nullif(split_group, ''), id) AS group_key
    FROM split_keys
)
SELECT
    row_nr,
    CASE
        WHEN ('0x' || left(sha256(group_key), 16))::UBIGINT % $buckets < $test_buckets
            THEN $test_split
        ELSE $train_split
    END AS split
FROM grouped
ORDER BY row_nr
