-- The distinct tokens of the texts `events.payload` that name a known player: the token's
-- HMAC-SHA256 (as written, lower-cased or upper-cased) is a known player_key, or, with
-- $match_keys, the token is one (`known`: player_key). See rules/telemetry_privacy.py and
-- defs/player_ids.py.
-- Bind parameters:
--   $inner_pad, $outer_pad  HMAC-SHA256 key pads (the same as the ingest's)
--   $token                  regex of a candidate token (rules TOKEN_CHARS)
--   $match_keys             whether a known key itself is a match (payloads: yes; the release
--                           scan: no, published metadata carries the pseudonym by design)
WITH tokens AS (
    SELECT DISTINCT unnest(regexp_extract_all(payload, $token)) AS token
    FROM events
),
variants AS (
    SELECT token, unnest([token, lower(token), upper(token)]) AS variant
    FROM tokens
),
hashed AS (
    SELECT
        token,
        variant,
        sha256($outer_pad::BLOB || unhex(sha256($inner_pad::BLOB || encode(variant)))) AS hmac
    FROM variants
)
SELECT DISTINCT h.token
FROM hashed AS h
WHERE h.hmac IN (SELECT player_key FROM known)
    OR ($match_keys AND h.variant IN (SELECT player_key FROM known))
ORDER BY h.token
