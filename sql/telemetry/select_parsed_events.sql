-- Parse telemetry envelopes from `raw_lines` (see distill_assets.defs.ingest) into bronze rows with
-- `quarantine_reason` / `quarantine_detail`, the raw player id replaced by its keyed hash.
-- Bind parameters:
--   $inner_pad, $outer_pad  HMAC-SHA256 key pads (key XOR 0x36.. / 0x5c.., 64 bytes, BLOB):
--                           player_key = sha256(outer_pad || sha256(inner_pad || player_id))
--   $event_types, $speakers allowed values (contracts.telemetry)
--   $skill_tiers, $ambiguity_levels  allowed values of the dialogue_turn literals
--   $envelope_patch         JSON merge patch removing the envelope fields (what is left is `extra`)
--   $envelope_fields, $envelope_structure  the envelope's field names, and as a json_transform
--                           structure reading each one's JSON text
--   $dialogue_structure     likewise for the dialogue_turn payload fields
--   $ts_min, $ts_max        plausible unix-second bounds of client_ts / server_ts
--   $extra_sequence, $extra_structure  the usual unknown fields (bound by defs.ingest.UsualExtras)
-- `line` is the line of a quarantined record as quarantine keeps it, with every occurrence of the
-- player id replaced by its key (macro redact_line; the id is found as the `player_id` value,
-- parsed or, in broken JSON, by pattern; a line that holds an id under no `player_id` key is kept
-- as is), NULL for an accepted record; the caller keeps `line` out of bronze. `dedup_key` is the
-- event id of a valid record: the first valid record of an id (by source_file, line_no) is kept,
-- later ones are quarantined as duplicate_event_id (contracts.telemetry.DEDUP), their line
-- redacted from `rewrite_id` / `rewrite_id_json` (defs.ingest.LINE_REWRITES). `raw_lines` is one
-- chunk of a partition (in order); output in the same order.
WITH lines AS (
    SELECT
        source_file,
        line_no,
        line,
        utf8_replaced,
        is_last_line,
        json_valid(line) AS is_json
    FROM raw_lines
),
docs AS (
    SELECT
        *,
        CASE WHEN is_json AND starts_object(line) THEN line END AS doc
    FROM lines
),
-- each document is parsed once for the compact JSON text of every envelope field (their kinds and
-- string texts read off their first characters: macros json_kind, json_text) and once for its
-- keys; a dialogue_turn payload once more for its fields
fields AS (
    SELECT
        *,
        json_transform(doc, $envelope_structure) AS e,
        json_keys(doc) AS keys
    FROM docs
),
envelope AS (
    SELECT
        *,
        json_kind(e.event_id) AS event_id_kind,
        json_value_text(e.event_id) AS event_id_raw,
        json_kind(e.event_type) AS event_type_kind,
        json_value_text(e.event_type) AS event_type_raw,
        json_kind(e.player_id) AS player_id_kind,
        json_value_text(e.player_id) AS player_id_raw,
        json_value_text(e.schema_version) AS schema_version_raw,
        json_value_text(e.session_id) AS session_id_raw,
        json_kind(e.server_ts) AS server_ts_kind,
        json_value_text(e.server_ts) AS server_ts_raw,
        json_kind(e.client_ts) AS client_ts_kind,
        json_value_text(e.client_ts) AS client_ts_raw,
        json_kind(e.payload) AS payload_kind,
        CASE WHEN json_kind(e.payload) = 'OBJECT' THEN e.payload END AS payload_doc
    FROM fields
),
dialogue AS (
    SELECT
        *,
        CASE WHEN payload_doc IS NOT NULL AND event_type_raw = 'dialogue_turn'
            THEN json_transform(payload_doc, $dialogue_structure)
        END AS d
    FROM envelope
),
dialogue_fields AS (
    SELECT
        *,
        json_kind(d.conversation_id) AS conversation_id_kind,
        json_value_text(d.conversation_id) AS conversation_id_raw,
        json_kind(d.speaker) AS speaker_kind,
        json_value_text(d.speaker) AS speaker_raw,
        json_kind(d."text") AS text_kind,
        json_value_text(d."text") AS text_raw,
        json_kind(d.turn_index) AS turn_index_kind,
        json_value_text(d.turn_index) AS turn_index_raw
    FROM dialogue
),
timed AS (
    SELECT
        *,
        CASE
            WHEN server_ts_kind IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST(server_ts_raw AS DOUBLE)
            WHEN server_ts_kind = 'VARCHAR'
                AND regexp_matches(server_ts_raw, '[T ]\d\d:\d\d(:\d\d(\.\d+)?)?\s*([zZ]|[+-]\d\d(:?\d\d)?)$')
                THEN epoch(TRY_CAST(server_ts_raw AS TIMESTAMPTZ))
            WHEN server_ts_kind = 'VARCHAR' THEN epoch(TRY_CAST(server_ts_raw AS TIMESTAMP))
        END AS server_ts,
        CASE
            WHEN client_ts_kind IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN TRY_CAST(client_ts_raw AS DOUBLE)
            WHEN client_ts_kind = 'VARCHAR'
                AND regexp_matches(client_ts_raw, '[T ]\d\d:\d\d(:\d\d(\.\d+)?)?\s*([zZ]|[+-]\d\d(:?\d\d)?)$')
                THEN epoch(TRY_CAST(client_ts_raw AS TIMESTAMPTZ))
            WHEN client_ts_kind = 'VARCHAR' THEN epoch(TRY_CAST(client_ts_raw AS TIMESTAMP))
        END AS client_ts
    FROM dialogue_fields
),
-- payload fields of every event type (contracts.telemetry PAYLOAD_MODELS, validated strictly):
-- `pk` holds the JSON types of the event type's fields (one parse of the payload), and
-- `payload_fault` the first breach in declaration order as
-- {reason: missing_<field> | invalid_<field>, detail}. The dialogue_turn fields the dialogues need
-- are checked in `checked` with their own reasons; the rest here.
payload_kinds AS (
    SELECT
        *,
        CASE event_type_raw
            WHEN 'dialogue_turn' THEN [json_kind(d.npc_id), json_kind(d.npc_name), json_kind(d.npc_persona), json_kind(d.quest_id), json_kind(d.game_genre), json_kind(d.player_skill_tier), json_kind(d.ambiguity_level), json_kind(d.social_context), json_kind(d.karma_state), json_kind(d.profession)]
            WHEN 'decision' THEN json_type(payload_doc, ['$.scenario_id', '$.game_state_hash', '$.prompt', '$.options', '$.chosen_option', '$.reasoning', '$.ambiguity_score', '$.ai_policy_probs', '$.is_gold_standard'])
            WHEN 'outcome' THEN json_type(payload_doc, ['$.decision_event_id', '$.episode_id', '$.outcome', '$.label', '$.reward', '$.karma_delta', '$.option_id'])
            WHEN 'trajectory_step' THEN json_type(payload_doc, ['$.episode_id', '$.step_index', '$.observation', '$.observation.game_state', '$.observation.inventory', '$.observation.skill_state', '$.observation.natural_language_instruction', '$.action', '$.action.action_type', '$.action.action_details', '$.reward'])
            WHEN 'episode_end' THEN json_type(payload_doc, ['$.episode_id', '$.success', '$.task_description', '$.total_steps', '$.competence_score'])
            WHEN 'reasoning' THEN json_type(payload_doc, ['$.reasoning_id', '$.scenario_id', '$.context', '$.thought_process', '$.conclusion', '$.outcome'])
            WHEN 'gold_standard_result' THEN json_type(payload_doc, ['$.task_id', '$.scenario_id', '$.expected', '$.answer', '$.passed'])
            WHEN 'peer_prediction' THEN json_type(payload_doc, ['$.pairing_id', '$.scenario_id', '$.choice', '$.peer_choice', '$.matched'])
            WHEN 'consent' THEN json_type(payload_doc, ['$.granted', '$.scopes', '$.policy_version'])
            WHEN 'deletion_request' THEN json_type(payload_doc, ['$.request_id', '$.scope', '$.reason'])
        END AS pk
    FROM timed
),
payload_checked AS (
    SELECT
        *,
        CASE event_type_raw
            WHEN 'dialogue_turn' THEN CASE
                WHEN pk[1] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_npc_id', 'detail': 'dialogue_turn.npc_id: expected a string or null, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[2] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_npc_name', 'detail': 'dialogue_turn.npc_name: expected a string or null, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN pk[3] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_npc_persona', 'detail': 'dialogue_turn.npc_persona: expected a string or null, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[4] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_quest_id', 'detail': 'dialogue_turn.quest_id: expected a string or null, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN pk[5] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_game_genre', 'detail': 'dialogue_turn.game_genre: expected a string or null, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN pk[6] NOT IN ('NULL', 'VARCHAR') OR (pk[6] = 'VARCHAR' AND NOT list_contains($skill_tiers, json_text(d.player_skill_tier)))
                    THEN {'reason': 'invalid_player_skill_tier', 'detail': 'dialogue_turn.player_skill_tier: expected one of the allowed values, got ' || lower(coalesce(pk[6], 'absent'))}
                WHEN pk[7] NOT IN ('NULL', 'VARCHAR') OR (pk[7] = 'VARCHAR' AND NOT list_contains($ambiguity_levels, json_text(d.ambiguity_level)))
                    THEN {'reason': 'invalid_ambiguity_level', 'detail': 'dialogue_turn.ambiguity_level: expected one of the allowed values, got ' || lower(coalesce(pk[7], 'absent'))}
                WHEN pk[8] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_social_context', 'detail': 'dialogue_turn.social_context: expected a string or null, got ' || lower(coalesce(pk[8], 'absent'))}
                WHEN pk[9] NOT IN ('NULL', 'BIGINT', 'UBIGINT')
                    THEN {'reason': 'invalid_karma_state', 'detail': 'dialogue_turn.karma_state: expected an integer or null, got ' || lower(coalesce(pk[9], 'absent'))}
                WHEN pk[10] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_profession', 'detail': 'dialogue_turn.profession: expected a string or null, got ' || lower(coalesce(pk[10], 'absent'))}
            END
            WHEN 'decision' THEN CASE
                WHEN coalesce(pk[1], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_scenario_id', 'detail': 'decision.scenario_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[1] <> 'VARCHAR'
                    THEN {'reason': 'invalid_scenario_id', 'detail': 'decision.scenario_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN coalesce(pk[2], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_game_state_hash', 'detail': 'decision.game_state_hash: expected a string, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN pk[2] <> 'VARCHAR'
                    THEN {'reason': 'invalid_game_state_hash', 'detail': 'decision.game_state_hash: expected a string, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN coalesce(pk[3], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_prompt', 'detail': 'decision.prompt: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[3] <> 'VARCHAR'
                    THEN {'reason': 'invalid_prompt', 'detail': 'decision.prompt: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN coalesce(pk[4], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_options', 'detail': 'decision.options: expected >= 2 objects with string option_id and text, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN pk[4] <> 'ARRAY' OR json_array_length(payload_doc, '$.options') < 2 OR NOT coalesce(list_bool_and(list_transform(json_type(payload_doc, '$.options[*]'), lambda t: t IN ('OBJECT'))), true) OR len(list_filter(json_type(payload_doc, '$.options[*].option_id'), lambda t: t = 'VARCHAR')) <> json_array_length(payload_doc, '$.options') OR len(list_filter(json_type(payload_doc, '$.options[*].text'), lambda t: t = 'VARCHAR')) <> json_array_length(payload_doc, '$.options')
                    THEN {'reason': 'invalid_options', 'detail': 'decision.options: expected >= 2 objects with string option_id and text, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN coalesce(pk[5], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_chosen_option', 'detail': 'decision.chosen_option: expected a string, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN pk[5] <> 'VARCHAR'
                    THEN {'reason': 'invalid_chosen_option', 'detail': 'decision.chosen_option: expected a string, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN pk[6] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_reasoning', 'detail': 'decision.reasoning: expected a string or null, got ' || lower(coalesce(pk[6], 'absent'))}
                WHEN coalesce(pk[7], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_ambiguity_score', 'detail': 'decision.ambiguity_score: expected a number in [0, 1], got ' || lower(coalesce(pk[7], 'absent'))}
                WHEN pk[7] NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE') OR NOT (TRY_CAST(payload_doc ->> '$.ambiguity_score' AS DOUBLE) BETWEEN 0 AND 1)
                    THEN {'reason': 'invalid_ambiguity_score', 'detail': 'decision.ambiguity_score: expected a number in [0, 1], got ' || lower(coalesce(pk[7], 'absent'))}
                WHEN coalesce(pk[8], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_ai_policy_probs', 'detail': 'decision.ai_policy_probs: expected an object of numbers, got ' || lower(coalesce(pk[8], 'absent'))}
                WHEN pk[8] <> 'OBJECT' OR NOT coalesce(list_bool_and(list_transform(json_type(payload_doc, '$.ai_policy_probs.*'), lambda t: t IN ('BIGINT', 'UBIGINT', 'DOUBLE'))), true)
                    THEN {'reason': 'invalid_ai_policy_probs', 'detail': 'decision.ai_policy_probs: expected an object of numbers, got ' || lower(coalesce(pk[8], 'absent'))}
                WHEN coalesce(pk[9], 'BOOLEAN') <> 'BOOLEAN'
                    THEN {'reason': 'invalid_is_gold_standard', 'detail': 'decision.is_gold_standard: expected a boolean, got ' || lower(coalesce(pk[9], 'absent'))}
            END
            WHEN 'outcome' THEN CASE
                WHEN pk[1] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_decision_event_id', 'detail': 'outcome.decision_event_id: expected a string or null, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[2] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_episode_id', 'detail': 'outcome.episode_id: expected a string or null, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN coalesce(pk[3], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_outcome', 'detail': 'outcome.outcome: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[3] <> 'VARCHAR'
                    THEN {'reason': 'invalid_outcome', 'detail': 'outcome.outcome: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN coalesce(pk[4], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_label', 'detail': 'outcome.label: expected a string, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN pk[4] <> 'VARCHAR'
                    THEN {'reason': 'invalid_label', 'detail': 'outcome.label: expected a string, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN coalesce(pk[5], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_reward', 'detail': 'outcome.reward: expected a number, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN pk[5] NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE')
                    THEN {'reason': 'invalid_reward', 'detail': 'outcome.reward: expected a number, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN coalesce(pk[6], 'BIGINT') NOT IN ('BIGINT', 'UBIGINT')
                    THEN {'reason': 'invalid_karma_delta', 'detail': 'outcome.karma_delta: expected an integer, got ' || lower(coalesce(pk[6], 'absent'))}
                WHEN pk[7] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_option_id', 'detail': 'outcome.option_id: expected a string or null, got ' || lower(coalesce(pk[7], 'absent'))}
            END
            WHEN 'trajectory_step' THEN CASE
                WHEN coalesce(pk[1], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_episode_id', 'detail': 'trajectory_step.episode_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[1] <> 'VARCHAR'
                    THEN {'reason': 'invalid_episode_id', 'detail': 'trajectory_step.episode_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN coalesce(pk[2], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_step_index', 'detail': 'trajectory_step.step_index: expected an integer >= 0, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN pk[2] NOT IN ('BIGINT', 'UBIGINT') OR coalesce(TRY_CAST(payload_doc ->> '$.step_index' AS BIGINT) < 0, true)
                    THEN {'reason': 'invalid_step_index', 'detail': 'trajectory_step.step_index: expected an integer >= 0, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN coalesce(pk[3], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_observation', 'detail': 'trajectory_step.observation: expected an object, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[3] <> 'OBJECT'
                    THEN {'reason': 'invalid_observation', 'detail': 'trajectory_step.observation: expected an object, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN coalesce(pk[4], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_observation_game_state', 'detail': 'trajectory_step.observation.game_state: expected an object, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN pk[4] <> 'OBJECT'
                    THEN {'reason': 'invalid_observation_game_state', 'detail': 'trajectory_step.observation.game_state: expected an object, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN coalesce(pk[5], 'ARRAY') <> 'ARRAY' OR NOT coalesce(list_bool_and(list_transform(json_type(payload_doc, '$.observation.inventory[*]'), lambda t: t IN ('VARCHAR'))), true)
                    THEN {'reason': 'invalid_observation_inventory', 'detail': 'trajectory_step.observation.inventory: expected an array of strings, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN coalesce(pk[6], 'OBJECT') <> 'OBJECT' OR NOT coalesce(list_bool_and(list_transform(json_type(payload_doc, '$.observation.skill_state.*'), lambda t: t IN ('BIGINT', 'UBIGINT'))), true)
                    THEN {'reason': 'invalid_observation_skill_state', 'detail': 'trajectory_step.observation.skill_state: expected an object of integers, got ' || lower(coalesce(pk[6], 'absent'))}
                WHEN pk[7] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_observation_natural_language_instruction', 'detail': 'trajectory_step.observation.natural_language_instruction: expected a string or null, got ' || lower(coalesce(pk[7], 'absent'))}
                WHEN coalesce(pk[8], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_action', 'detail': 'trajectory_step.action: expected an object, got ' || lower(coalesce(pk[8], 'absent'))}
                WHEN pk[8] <> 'OBJECT'
                    THEN {'reason': 'invalid_action', 'detail': 'trajectory_step.action: expected an object, got ' || lower(coalesce(pk[8], 'absent'))}
                WHEN coalesce(pk[9], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_action_action_type', 'detail': 'trajectory_step.action.action_type: expected a string, got ' || lower(coalesce(pk[9], 'absent'))}
                WHEN pk[9] <> 'VARCHAR'
                    THEN {'reason': 'invalid_action_action_type', 'detail': 'trajectory_step.action.action_type: expected a string, got ' || lower(coalesce(pk[9], 'absent'))}
                WHEN coalesce(pk[10], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_action_action_details', 'detail': 'trajectory_step.action.action_details: expected an object of numbers, got ' || lower(coalesce(pk[10], 'absent'))}
                WHEN pk[10] <> 'OBJECT' OR NOT coalesce(list_bool_and(list_transform(json_type(payload_doc, '$.action.action_details.*'), lambda t: t IN ('BIGINT', 'UBIGINT', 'DOUBLE'))), true)
                    THEN {'reason': 'invalid_action_action_details', 'detail': 'trajectory_step.action.action_details: expected an object of numbers, got ' || lower(coalesce(pk[10], 'absent'))}
                WHEN coalesce(pk[11], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_reward', 'detail': 'trajectory_step.reward: expected a number, got ' || lower(coalesce(pk[11], 'absent'))}
                WHEN pk[11] NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE')
                    THEN {'reason': 'invalid_reward', 'detail': 'trajectory_step.reward: expected a number, got ' || lower(coalesce(pk[11], 'absent'))}
            END
            WHEN 'episode_end' THEN CASE
                WHEN coalesce(pk[1], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_episode_id', 'detail': 'episode_end.episode_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[1] <> 'VARCHAR'
                    THEN {'reason': 'invalid_episode_id', 'detail': 'episode_end.episode_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN coalesce(pk[2], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_success', 'detail': 'episode_end.success: expected a boolean, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN pk[2] <> 'BOOLEAN'
                    THEN {'reason': 'invalid_success', 'detail': 'episode_end.success: expected a boolean, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN coalesce(pk[3], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_task_description', 'detail': 'episode_end.task_description: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[3] <> 'VARCHAR'
                    THEN {'reason': 'invalid_task_description', 'detail': 'episode_end.task_description: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[4] NOT IN ('NULL', 'BIGINT', 'UBIGINT') OR (pk[4] <> 'NULL' AND coalesce(TRY_CAST(payload_doc ->> '$.total_steps' AS BIGINT) < 0, true))
                    THEN {'reason': 'invalid_total_steps', 'detail': 'episode_end.total_steps: expected an integer >= 0 or null, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN pk[5] NOT IN ('NULL', 'BIGINT', 'UBIGINT', 'DOUBLE')
                    THEN {'reason': 'invalid_competence_score', 'detail': 'episode_end.competence_score: expected a number or null, got ' || lower(coalesce(pk[5], 'absent'))}
            END
            WHEN 'reasoning' THEN CASE
                WHEN pk[1] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_reasoning_id', 'detail': 'reasoning.reasoning_id: expected a string or null, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[2] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_scenario_id', 'detail': 'reasoning.scenario_id: expected a string or null, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN coalesce(pk[3], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_context', 'detail': 'reasoning.context: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[3] <> 'VARCHAR'
                    THEN {'reason': 'invalid_context', 'detail': 'reasoning.context: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN coalesce(pk[4], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_thought_process', 'detail': 'reasoning.thought_process: expected a non-empty array of strings, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN pk[4] <> 'ARRAY' OR json_array_length(payload_doc, '$.thought_process') < 1 OR NOT coalesce(list_bool_and(list_transform(json_type(payload_doc, '$.thought_process[*]'), lambda t: t IN ('VARCHAR'))), true)
                    THEN {'reason': 'invalid_thought_process', 'detail': 'reasoning.thought_process: expected a non-empty array of strings, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN coalesce(pk[5], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_conclusion', 'detail': 'reasoning.conclusion: expected a string, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN pk[5] <> 'VARCHAR'
                    THEN {'reason': 'invalid_conclusion', 'detail': 'reasoning.conclusion: expected a string, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN pk[6] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_outcome', 'detail': 'reasoning.outcome: expected a string or null, got ' || lower(coalesce(pk[6], 'absent'))}
            END
            WHEN 'gold_standard_result' THEN CASE
                WHEN coalesce(pk[1], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_task_id', 'detail': 'gold_standard_result.task_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[1] <> 'VARCHAR'
                    THEN {'reason': 'invalid_task_id', 'detail': 'gold_standard_result.task_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[2] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_scenario_id', 'detail': 'gold_standard_result.scenario_id: expected a string or null, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN coalesce(pk[3], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_expected', 'detail': 'gold_standard_result.expected: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[3] <> 'VARCHAR'
                    THEN {'reason': 'invalid_expected', 'detail': 'gold_standard_result.expected: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN coalesce(pk[4], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_answer', 'detail': 'gold_standard_result.answer: expected a string, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN pk[4] <> 'VARCHAR'
                    THEN {'reason': 'invalid_answer', 'detail': 'gold_standard_result.answer: expected a string, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN coalesce(pk[5], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_passed', 'detail': 'gold_standard_result.passed: expected a boolean, got ' || lower(coalesce(pk[5], 'absent'))}
                WHEN pk[5] <> 'BOOLEAN'
                    THEN {'reason': 'invalid_passed', 'detail': 'gold_standard_result.passed: expected a boolean, got ' || lower(coalesce(pk[5], 'absent'))}
            END
            WHEN 'peer_prediction' THEN CASE
                WHEN coalesce(pk[1], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_pairing_id', 'detail': 'peer_prediction.pairing_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[1] <> 'VARCHAR'
                    THEN {'reason': 'invalid_pairing_id', 'detail': 'peer_prediction.pairing_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN coalesce(pk[2], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_scenario_id', 'detail': 'peer_prediction.scenario_id: expected a string, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN pk[2] <> 'VARCHAR'
                    THEN {'reason': 'invalid_scenario_id', 'detail': 'peer_prediction.scenario_id: expected a string, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN coalesce(pk[3], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_choice', 'detail': 'peer_prediction.choice: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[3] <> 'VARCHAR'
                    THEN {'reason': 'invalid_choice', 'detail': 'peer_prediction.choice: expected a string, got ' || lower(coalesce(pk[3], 'absent'))}
                WHEN pk[4] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_peer_choice', 'detail': 'peer_prediction.peer_choice: expected a string or null, got ' || lower(coalesce(pk[4], 'absent'))}
                WHEN pk[5] NOT IN ('NULL', 'BOOLEAN')
                    THEN {'reason': 'invalid_matched', 'detail': 'peer_prediction.matched: expected a boolean or null, got ' || lower(coalesce(pk[5], 'absent'))}
            END
            WHEN 'consent' THEN CASE
                WHEN coalesce(pk[1], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_granted', 'detail': 'consent.granted: expected a boolean, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[1] <> 'BOOLEAN'
                    THEN {'reason': 'invalid_granted', 'detail': 'consent.granted: expected a boolean, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN coalesce(pk[2], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_scopes', 'detail': 'consent.scopes: expected an array of strings, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN pk[2] <> 'ARRAY' OR NOT coalesce(list_bool_and(list_transform(json_type(payload_doc, '$.scopes[*]'), lambda t: t IN ('VARCHAR'))), true)
                    THEN {'reason': 'invalid_scopes', 'detail': 'consent.scopes: expected an array of strings, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN pk[3] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_policy_version', 'detail': 'consent.policy_version: expected a string or null, got ' || lower(coalesce(pk[3], 'absent'))}
            END
            WHEN 'deletion_request' THEN CASE
                WHEN coalesce(pk[1], 'NULL') = 'NULL'
                    THEN {'reason': 'missing_request_id', 'detail': 'deletion_request.request_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN pk[1] <> 'VARCHAR'
                    THEN {'reason': 'invalid_request_id', 'detail': 'deletion_request.request_id: expected a string, got ' || lower(coalesce(pk[1], 'absent'))}
                WHEN coalesce(pk[2], 'VARCHAR') <> 'VARCHAR'
                    THEN {'reason': 'invalid_scope', 'detail': 'deletion_request.scope: expected a string, got ' || lower(coalesce(pk[2], 'absent'))}
                WHEN pk[3] NOT IN ('NULL', 'VARCHAR')
                    THEN {'reason': 'invalid_reason', 'detail': 'deletion_request.reason: expected a string or null, got ' || lower(coalesce(pk[3], 'absent'))}
            END
        END AS payload_fault
    FROM payload_kinds
),
checked AS (
    SELECT
        *,
        CASE
            WHEN NOT is_json AND is_last_line THEN 'torn_last_line'
            WHEN NOT is_json THEN 'invalid_json'
            WHEN doc IS NULL THEN 'not_an_object'
            WHEN has_duplicate_key(doc) THEN 'duplicate_key'
            WHEN event_id_kind = 'NULL' OR (event_id_kind = 'VARCHAR' AND trim(event_id_raw) = '')
                THEN 'missing_event_id'
            WHEN event_id_kind <> 'VARCHAR' THEN 'invalid_event_id'
            WHEN event_type_kind = 'NULL' OR (event_type_kind = 'VARCHAR' AND trim(event_type_raw) = '')
                THEN 'missing_event_type'
            WHEN event_type_kind <> 'VARCHAR' OR NOT list_contains($event_types, event_type_raw)
                THEN 'unknown_event_type'
            WHEN player_id_kind = 'NULL' OR (player_id_kind = 'VARCHAR' AND trim(player_id_raw) = '')
                THEN 'missing_player_id'
            WHEN player_id_kind <> 'VARCHAR' THEN 'invalid_player_id'
            WHEN server_ts_kind = 'NULL' THEN 'missing_server_ts'
            WHEN server_ts IS NULL OR NOT (server_ts >= $ts_min AND server_ts < $ts_max)
                THEN 'invalid_timestamp'
            WHEN client_ts_kind <> 'NULL'
                AND (client_ts IS NULL OR NOT (client_ts >= $ts_min AND client_ts < $ts_max))
                THEN 'invalid_timestamp'
            WHEN payload_kind = 'NULL' THEN 'missing_payload'
            WHEN payload_kind <> 'OBJECT' THEN 'invalid_payload'
            WHEN event_type_raw <> 'dialogue_turn' THEN payload_fault.reason
            WHEN conversation_id_kind <> 'VARCHAR' OR trim(conversation_id_raw) = ''
                THEN 'missing_conversation_id'
            WHEN speaker_kind <> 'VARCHAR' THEN 'missing_speaker'
            WHEN NOT list_contains($speakers, speaker_raw) THEN 'invalid_speaker'
            WHEN text_kind <> 'VARCHAR' OR trim(text_raw) = '' THEN 'missing_text'
            WHEN turn_index_kind = 'NULL' THEN 'missing_turn_index'
            WHEN turn_index_kind NOT IN ('BIGINT', 'UBIGINT')
                OR coalesce(TRY_CAST(turn_index_raw AS BIGINT) < 0, true)
                THEN 'invalid_turn_index'
            ELSE payload_fault.reason
        END AS invalid_reason
    FROM payload_checked
),
detailed AS (
    SELECT
        *,
        CASE invalid_reason
            WHEN 'not_an_object' THEN 'top-level JSON ' || lower(json_type(line))
            WHEN 'duplicate_key' THEN 'repeated key: ' || duplicate_key(doc)
            WHEN 'invalid_event_id' THEN 'event_id is ' || lower(event_id_kind)
            WHEN 'unknown_event_type' THEN 'event_type: ' || coalesce(event_type_raw, '?')
            WHEN 'invalid_player_id' THEN 'player_id is ' || lower(player_id_kind)
            WHEN 'invalid_timestamp' THEN
                CASE
                    WHEN server_ts IS NULL OR NOT (server_ts >= $ts_min AND server_ts < $ts_max)
                        THEN 'server_ts: ' || server_ts_raw
                    ELSE 'client_ts: ' || client_ts_raw
                END
            WHEN 'invalid_payload' THEN 'payload is ' || lower(payload_kind)
            WHEN 'missing_conversation_id' THEN 'conversation_id is '
                || CASE conversation_id_kind WHEN 'VARCHAR' THEN 'blank' ELSE lower(conversation_id_kind) END
            WHEN 'missing_speaker' THEN 'speaker is ' || lower(speaker_kind)
            WHEN 'invalid_speaker' THEN 'speaker: ' || speaker_raw
            WHEN 'missing_text' THEN 'text is '
                || CASE text_kind WHEN 'VARCHAR' THEN 'blank' ELSE lower(text_kind) END
            WHEN 'invalid_turn_index' THEN 'turn_index: ' || turn_index_raw
            ELSE CASE WHEN invalid_reason = payload_fault.reason THEN payload_fault.detail END
        END AS invalid_detail,
        -- for quarantined records: the id exactly as written (a string's text, even if torn or
        -- escaped, else a bare number), so the kept raw line can be redacted
        CASE WHEN invalid_reason IS NOT NULL THEN coalesce(
            nullif(regexp_extract(line, '"player_id"\s*:\s*"((?:[^"\\]|\\.)*)', 1), ''),
            regexp_extract(line, '"player_id"\s*:\s*(-?[0-9][^\s,}\]]*)', 1)
        ) END AS raw_id_text
    FROM checked
),
identified AS (
    SELECT
        *,
        -- the id to hash and redact: the parsed value, else (broken records) its raw text
        CASE
            WHEN invalid_reason IS NULL THEN player_id_raw
            WHEN player_id_kind IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE')
                AND trim(player_id_raw) <> '' THEN player_id_raw
            ELSE nullif(raw_id_text, '')
        END AS redact_id,
        list_filter(keys, lambda k: NOT list_contains($envelope_fields, k)) AS extra_keys
    FROM detailed
),
keyed AS (
    SELECT
        *,
        CASE WHEN redact_id IS NOT NULL THEN
            sha256($outer_pad::BLOB || unhex(sha256($inner_pad::BLOB || encode(redact_id))))
        END AS player_key,
        -- the id as it appears inside serialized JSON strings
        CASE WHEN redact_id IS NOT NULL THEN
            substr(to_json(redact_id)::VARCHAR, 2, length(to_json(redact_id)::VARCHAR) - 2)
        END AS redact_json,
        payload_doc::VARCHAR AS payload_raw,
        -- the usual unknown fields read by one json_transform, others by a merge patch of the
        -- whole document (the same text; defs.ingest.UsualExtras)
        CASE
            WHEN len(extra_keys) > 0 AND extra_keys = $extra_sequence
                THEN CAST(to_json(json_transform(doc, $extra_structure)) AS VARCHAR)
            WHEN len(extra_keys) > 0
                THEN nullif(json_merge_patch(doc, $envelope_patch)::VARCHAR, '{}')
        END AS extra_raw
    FROM identified
),
redacted AS (
    SELECT
        *,
        replace(event_id_raw, redact_id, player_key) AS event_id,
        replace(session_id_raw, redact_id, player_key) AS session_id,
        replace(schema_version_raw, redact_id, player_key) AS schema_version,
        replace(payload_raw, redact_json, player_key) AS payload,
        replace(extra_raw, redact_json, player_key) AS extra
    FROM keyed
),
valid AS (
    SELECT
        *,
        coalesce(
            invalid_reason,
            -- a bare-token id (e.g. digits that also occur as a JSON number) cannot be replaced
            -- without breaking the JSON: quarantine rather than keep the raw id
            CASE WHEN (payload <> payload_raw AND NOT json_valid(payload))
                OR (extra <> extra_raw AND NOT json_valid(extra))
                THEN 'unredactable_player_id' END
        ) AS pre_reason
    FROM redacted
),
final AS (
    SELECT
        *,
        pre_reason AS reason
    FROM valid
)
SELECT
    source_file,
    line_no,
    utf8_replaced,
    CASE WHEN reason IS NULL THEN event_id END AS event_id,
    CASE WHEN reason IS NULL THEN event_type_raw END AS event_type,
    CASE WHEN reason IS NULL THEN schema_version END AS schema_version,
    CASE WHEN reason IS NULL THEN player_key END AS player_key,
    CASE WHEN reason IS NULL THEN session_id END AS session_id,
    CASE WHEN reason IS NULL THEN client_ts END AS client_ts,
    CASE WHEN reason IS NULL THEN server_ts END AS server_ts,
    CASE WHEN reason IS NULL THEN payload END AS payload,
    CASE WHEN reason IS NULL THEN extra END AS extra,
    -- the redacted line of a record quarantined here; an accepted record may still be quarantined
    -- as a repeat, and the ingest then redacts its line from the two `rewrite_` columns
    -- (select_repeated_lines.sql): redacting every accepted line here would copy each one twice
    -- a line repeating `player_id` is redacted from the first value, which DuckDB read: every
    -- other value of the key becomes that key too, so no later raw id stays in quarantine
    CASE WHEN reason = 'duplicate_key'
        THEN regexp_replace(
            redact_line(line, redact_id, redact_json, raw_id_text, player_key),
            '("player_id"\s*:\s*)("(?:[^"\\]|\\.)*"|-?[0-9][^\s,}\]]*)',
            '\1"' || coalesce(player_key, '[REDACTED_PLAYER_ID]') || '"',
            'g'
        )
        WHEN reason IS NOT NULL
        THEN redact_line(line, redact_id, redact_json, raw_id_text, player_key)
    END AS line,
    CASE WHEN reason IS NULL THEN redact_id END AS rewrite_id,
    CASE WHEN reason IS NULL THEN redact_json END AS rewrite_id_json,
    extra_keys,
    reason AS quarantine_reason,
    invalid_detail AS quarantine_detail,
    CASE WHEN reason IS NULL THEN event_id END AS dedup_key
FROM final
