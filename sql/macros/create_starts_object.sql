-- starts_object(s): whether a valid JSON document is an object, read off its first character (an
-- object iff it starts with `{` after JSON whitespace) instead of parsing it for its type.
CREATE OR REPLACE MACRO starts_object(s) AS regexp_matches(s, '^[ \t\r\n]*\{')
