-- The quarantine line of telemetry records the parse accepted and the ingest then quarantined as
-- repeats (duplicate_event_id): the raw line redacted as `select_redacted_events.sql` redacts the
-- lines it quarantines itself (macro redact_line; an accepted record's id is its parsed
-- `player_id`, and it has no broken-record id text). Reads the view `repeated_lines`: the input
-- `line` and the parse's columns of those records (`rewrite_id`, `rewrite_id_json`,
-- `player_key`); output in the same order.
SELECT redact_line(line, rewrite_id, rewrite_id_json, NULL, player_key) AS line
FROM repeated_lines
