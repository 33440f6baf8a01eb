-- json_kind(v): the `json_type` name of a compact JSON value as `json_extract` or a JSON field of
-- `json_transform` returns it, read off its first characters instead of parsing it again: VARCHAR,
-- OBJECT, ARRAY, BOOLEAN, NULL (SQL NULL too: an absent field), UBIGINT / BIGINT for an integer
-- that fits (non-negative / negative), else DOUBLE — the names `json_type` gives.
CREATE OR REPLACE MACRO json_kind(v) AS
    CASE
        WHEN v IS NULL OR v = 'null' THEN 'NULL'
        WHEN starts_with(v, '"') THEN 'VARCHAR'
        WHEN starts_with(v, '{') THEN 'OBJECT'
        WHEN starts_with(v, '[') THEN 'ARRAY'
        WHEN v = 'true' OR v = 'false' THEN 'BOOLEAN'
        WHEN NOT regexp_full_match(v, '-?[0-9]+') THEN 'DOUBLE'
        WHEN starts_with(v, '-') THEN
            CASE WHEN try_cast(v AS BIGINT) IS NOT NULL THEN 'BIGINT' ELSE 'DOUBLE' END
        WHEN try_cast(v AS UBIGINT) IS NOT NULL THEN 'UBIGINT'
        ELSE 'DOUBLE'
    END
