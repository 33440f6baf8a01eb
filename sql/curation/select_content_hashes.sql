-- Exact-dedup content hash of each row (rules: distill_assets/rules/curation.py).
-- Input `curation_keys`: row_nr, content_key (the normalized content as JSON). The hash is the
-- first $hash_digits hex digits of sha256(content_key).
SELECT
    row_nr,
    left(sha256(content_key), $hash_digits) AS content_hash
FROM curation_keys
ORDER BY row_nr
