-- redact_line(line, id, id_json, id_text, player_key): a raw telemetry line with every occurrence
-- of the player id replaced by its key: the id as parsed (`id`), as it appears inside serialized
-- JSON strings (`id_json`) and as written in a broken record (`id_text`, NULL when there is none).
-- No id: the line as it is.
CREATE OR REPLACE MACRO redact_line(line, id, id_json, id_text, player_key) AS
    CASE WHEN id IS NULL THEN line
        ELSE replace(
            replace(replace(line, id, player_key), id_json, player_key),
            coalesce(id_text, ''),
            player_key
        )
    END
