-- The texts `events.payload` that hold a known player's token as a word, with those tokens
-- (`mentioned`: word, a known token lower-cased). A text's words are its maximal runs of RE2
-- word characters (what `\b` separates): in a text free of the letters RE2 folds into ASCII
-- ones, a known token matches exactly a word equal to it lower-cased
-- (defs/telemetry/privacy.py: `redact_player_ids`).
-- Bind parameters:
--   $word  regex of a word at least as long as the shortest known token (shorter ones name
--          no one, and most words are short)
SELECT t.event_id, list(DISTINCT m.word ORDER BY m.word) AS words
FROM (SELECT event_id, unnest(regexp_extract_all(payload, $word)) AS token FROM events) AS t
JOIN mentioned AS m ON lower(t.token) = m.word
GROUP BY t.event_id
