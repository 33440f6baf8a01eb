-- has_duplicate_key(doc) / duplicate_key(doc): whether a valid JSON document has an object (at any
-- depth: the document itself and every value inside it) that repeats a key, and the first key
-- repeated. DuckDB's JSON functions read the first of repeated keys and Python's `json` the last,
-- so such a record means two things; the ingest quarantines it as `duplicate_key`. One parse of
-- the document lists every object's keys (`json_keys` of the root and of `$..*`).
CREATE OR REPLACE MACRO has_duplicate_key(doc) AS
    list_bool_or(list_transform(
        list_prepend(json_keys(doc), json_keys(doc, '$..*')),
        lambda k: len(k) <> len(list_distinct(k))
    ));
CREATE OR REPLACE MACRO duplicate_key(doc) AS
    flatten(list_transform(
        list_prepend(json_keys(doc), json_keys(doc, '$..*')),
        lambda k: list_filter(k, lambda key, i: list_position(k, key) < i)
    ))[1];
-- has_nested_duplicate_key(v): has_duplicate_key(v) of a JSON value, reading its nested values'
-- keys only when its text can hold a nested object: a value whose text holds no `{` holds no
-- object; one whose only `{` starts it is an object holding no other, whose keys are all there
-- is to compare (a `{` inside a string only sends the value to the full test).
CREATE OR REPLACE MACRO has_nested_duplicate_key(v) AS
    CASE
        WHEN NOT contains(v, '{') THEN false
        WHEN regexp_matches(v, '^\{[^{]*$') THEN
            list_bool_or(list_transform([json_keys(v)], lambda k: len(k) <> len(list_distinct(k))))
        ELSE has_duplicate_key(v)
    END;
