-- json_text(v): the text of a compact JSON value (as `json_extract` returns it). A string without
-- a backslash has no escape, so its text is what lies between the quotes and needs no second
-- parse; anything else (escapes, numbers, objects, null) goes through `->> '$'`.
CREATE OR REPLACE MACRO json_text(v) AS
    CASE WHEN starts_with(v, '"') AND NOT contains(v, '\')
        THEN substr(v, 2, length(v) - 2) ELSE v ->> '$'
    END
