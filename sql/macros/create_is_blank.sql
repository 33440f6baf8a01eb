-- is_blank(s): `trim(s) = ''` (only spaces, or empty) without copying the string: true unless it
-- holds a character other than a space (the search stops at the first one).
CREATE OR REPLACE MACRO is_blank(s) AS NOT regexp_matches(s, '[^ ]')
