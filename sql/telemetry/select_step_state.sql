-- Per trajectory step: the state entropy (Euclidean norm of the change of the numeric
-- observation.game_state values from the episode's previous step by step_index; NULL for a first
-- step) and the highest level in observation.skill_state (rules/telemetry_triage.py).
-- Input `steps`: event_id, episode_id, step_index, game_state (JSON text), skill_state (JSON text).
WITH states AS (
    SELECT
        event_id,
        episode_id,
        step_index,
        try(json_transform(game_state, '"MAP(VARCHAR, DOUBLE)"')) AS state,
        try(json_transform(skill_state, '"MAP(VARCHAR, DOUBLE)"')) AS skills
    FROM steps
),
paired AS (
    SELECT
        *,
        lag(state) OVER (PARTITION BY episode_id ORDER BY step_index, event_id) AS previous
    FROM states
)
SELECT
    event_id,
    CASE WHEN previous IS NOT NULL THEN sqrt(coalesce(list_sum(list_transform(
        map_keys(state), lambda k: coalesce(pow(state[k] - previous[k], 2), 0.0)
    )), 0.0)) END AS entropy,
    list_max(map_values(skills)) AS top_skill
FROM paired
