-- The texts `events.payload` that hold a known player's token, and the one regex that replaces
-- exactly what every player-id regex would in each (`mentioned`: word, pattern, with `word` a
-- known token lower-cased and `pattern` its regex). A text's words are its maximal runs of
-- RE2 word characters (what `\b` separates) of the token length; a text free of the characters
-- RE2 folds into ASCII letters holds a known token exactly when one of its words, lower-cased,
-- is one (defs/telemetry/privacy.py: `redact_player_ids` routes the other texts through every
-- regex).
-- Bind parameters:
--   $token  regex of a word (rules TOKEN_CHARS)
--   $shape  regex of the game's player-id shape, appended to each text's regex
SELECT
    t.event_id,
    '\b(?:' || string_agg(DISTINCT m.pattern, '|' ORDER BY m.pattern) || ')\b|' || $shape AS words
FROM (SELECT event_id, unnest(regexp_extract_all(payload, $token)) AS token FROM events) AS t
JOIN mentioned AS m ON lower(t.token) = m.word
GROUP BY t.event_id
