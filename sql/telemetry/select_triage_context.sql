-- Per triage candidate: its row plus the context the triage rules read from other events of
-- the partition (rules/telemetry_triage.py), in silver order (event_time, event_seq, event_id).
-- Inputs: `candidates` (the candidate events with their payload fields, as `triage.py` lifts
-- them), `peer` (player_key, scenario_id of the peer predictions), `step_state` (event_id,
-- entropy, top_skill: select_step_state.sql).
-- peer_flagged: the player made a peer prediction on the scenario. player_karma: the player's
-- highest karma_state in the partition. repeated_action: the action equals the previous one of
-- the episode by step_index, then event_id (NULL when either is NULL; nulls first, as Polars
-- orders). seen_scenario: a decision whose game_state_hash an earlier candidate already had.
WITH karma AS (
    SELECT player_key, max(karma_state) AS player_karma
    FROM candidates
    GROUP BY player_key
),
previous AS (
    SELECT
        event_id,
        action = lag(action) OVER (
            PARTITION BY episode_id
            ORDER BY step_index ASC NULLS FIRST, event_id ASC NULLS FIRST
        ) AS repeated_action
    FROM candidates
),
seen AS (
    SELECT
        event_id,
        row_number() OVER (
            PARTITION BY game_state_hash
            ORDER BY event_time ASC NULLS FIRST, event_seq ASC NULLS FIRST,
                event_id ASC NULLS FIRST
        ) > 1 AS seen_before
    FROM candidates
    WHERE game_state_hash IS NOT NULL
)
SELECT
    c.event_id,
    c.player_key,
    c.event_type,
    c.ambiguity_score,
    c.reasoning_given,
    c.scenario_id,
    c.quest_id,
    c.ambiguity_level,
    c.social_context,
    c.episode_id,
    c.action_action_type,
    s.entropy,
    s.top_skill,
    p.scenario_id IS NOT NULL AS peer_flagged,
    k.player_karma,
    r.repeated_action,
    c.event_type = 'decision' AND coalesce(n.seen_before, false) AS seen_scenario
FROM candidates AS c
LEFT JOIN step_state AS s ON c.event_id = s.event_id
LEFT JOIN (SELECT DISTINCT player_key, scenario_id FROM peer) AS p
    ON c.player_key = p.player_key AND c.scenario_id = p.scenario_id
LEFT JOIN karma AS k ON c.player_key IS NOT DISTINCT FROM k.player_key
LEFT JOIN previous AS r ON c.event_id = r.event_id
LEFT JOIN seen AS n ON c.event_id = n.event_id
ORDER BY c.event_time ASC NULLS FIRST, c.event_seq ASC NULLS FIRST, c.event_id ASC NULLS FIRST
