-- json_value_text(v): what `json_extract_string` gives for a compact JSON value: a string's text,
-- else the value's JSON text (a number, an object, ...); NULL for JSON null.
CREATE OR REPLACE MACRO json_value_text(v) AS
    CASE
        WHEN starts_with(v, '"') THEN json_text(v)
        WHEN CAST(v AS VARCHAR) <> 'null' THEN CAST(v AS VARCHAR)
    END
