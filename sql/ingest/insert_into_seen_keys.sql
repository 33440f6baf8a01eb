-- Remember the keys a parsed chunk (`parsed_lines`) accepted first, with where and which line.
INSERT INTO seen_keys
SELECT
    new_key,
    source_file || ':' || line_no,
    new_key_line_hash
FROM parsed_lines
WHERE new_key IS NOT NULL
