-- One row per trajectory step and action_details key, in the payload's key order (key_pos from 0).
-- Input `steps`: row_nr, action_details (JSON object text of numbers). A non-object or
-- non-numeric payload gives no rows for that step (rules/action_tokens.py).
WITH parsed AS (
    SELECT row_nr, try(json_transform(action_details, '"MAP(VARCHAR, DOUBLE)"')) AS details
    FROM steps
)
SELECT
    row_nr,
    unnest(range(cardinality(details)::BIGINT)) AS key_pos,
    unnest(map_keys(details)) AS key,
    unnest(map_values(details)) AS value
FROM parsed
WHERE details IS NOT NULL
