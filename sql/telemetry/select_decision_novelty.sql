-- Novelty H of each decision (rules/telemetry_trust.py): the surprisal -ln p of the chosen option
-- under its ai_policy_probs (normalised to sum 1), divided by the surprisal of $floor and clipped to
-- [0, 1]; 0 when the policy is missing, empty or gives the chosen option no entry.
-- Input `decisions`: event_id, chosen_option, policy (the ai_policy_probs JSON object).
-- Bind parameters: $floor  the probability whose surprisal is full novelty (H = 1).
WITH probabilities AS (
    SELECT
        event_id,
        chosen_option,
        json_transform(policy, '"MAP(VARCHAR, DOUBLE)"') AS policy_map
    FROM decisions
),
chosen AS (
    SELECT
        event_id,
        map_extract(policy_map, chosen_option)[1] / nullif(list_sum(map_values(policy_map)), 0)
            AS p
    FROM probabilities
)
SELECT
    event_id,
    CASE
        WHEN p IS NULL OR p <= 0 THEN CASE WHEN p IS NULL THEN 0.0 ELSE 1.0 END
        ELSE least(greatest(-ln(p) / -ln($floor), 0.0), 1.0)
    END AS novelty
FROM chosen
