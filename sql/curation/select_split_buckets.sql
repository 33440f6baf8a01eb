-- Split bucket of each row's split key (rules: distill_assets/rules/curation.py).
-- Input `split_keys`: row_nr, split_key. bucket = first 16 hex digits of sha256(split_key) as an
-- unsigned integer, mod $buckets (the same as distill_assets.lib.hashing.split_bucket).
SELECT
    row_nr,
    (('0x' || left(sha256(split_key), 16))::UBIGINT % $buckets)::BIGINT AS bucket
FROM split_keys
ORDER BY row_nr
