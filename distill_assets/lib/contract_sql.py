"""Generate a raw contract's bulk parse statement from its pydantic model.

A contract states each field once, on the model: its name, type, whether it is required, its
constraints (an enum's or a Literal's values, `ge`/`gt`/`le`/`lt`), and, as `Annotated` metadata,
the `JsonField` kind that says how a JSON value of that field is read and normalised (`Text`,
`TextOrInteger`, `Integer`, `Number`, `Choice`, `UnixOrIsoSeconds`, `IsoSeconds`, `TextList`,
`Object`, `JsonText`: the same normalisations as the model's validators); optional fields of
which at least one is required share a `OneOf` group, checked as one (`missing_<group>`,
`invalid_<group>`).
`parse_statement` walks the model's fields in order and writes the DuckDB statement the ingest
runs (`lib.rawcontract.RawContract.parse`): one `json_transform` of each line to the contract's
fields, a type (`json_kind`) and a value per field, and the reason chain: the line-level reasons
(`LINE_REASONS`), then, field by field in model order, `missing_<field>` (a required field
absent, null, or blank where blank means absent) and `invalid_<field>` (present but not of the
contract). The first failing test is the record's `quarantine_reason`; the model's field order
is therefore the order the reasons are tested in. The statement also returns the bronze columns
(in the order of the contract's bronze schema), the unknown fields as `extra` (with
`extra_keys`, see `defs.ingest.UsualExtras`), `quarantine_detail` (worded by the contract's
`Details`) and, for a contract with a key unique within a partition, `dedup_key`. Bronze columns
that no single field gives (a derived id) are the contract's `derived` expressions, over the
fields' values and bronze columns (`{field.value}`, `{field.output}`).

A record holding a payload whose model another field's value picks (telemetry) is checked with
the payload models' type-derived checks after the model's fields (`union=`, `lib.payload_sql`);
what is not a contract check (telemetry's player-id redaction) is SQL run after the checks
(`then=`). A contract whose lines are too large to read whole (traces) is read by path instead
(`extract_statement`, the fields' kinds in `lib.json_paths`).

The statement is built once per process on first use (cached): there is no SQL file to go stale.
The contract's constants (an enum's values, a bound, a pattern) are part of the statement, as SQL
literals quoted here; no record value is ever put in it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from pydantic import BaseModel

from distill_assets.lib.json_fields import Column, JsonField, OneOf, Reason, sql_literal
from distill_assets.lib.json_paths import PathField, PathObject
from distill_assets.lib.payload_sql import PayloadUnion, payload_ctes

# reasons every line can get before its fields are looked at, in the order they are tested
LINE_REASONS: tuple[str, ...] = ("invalid_json", "torn_last_line", "not_an_object", "duplicate_key")
# the bronze columns no contract field gives, when the bronze schema names them
_PROVENANCE = {
    "id": "left(sha256(source_file || chr(31) || line_no), 16)",
    "source_ref": "source_file || ':' || line_no",
    "source_file": "source_file",
    "line_no": "line_no",
    "utf8_replaced": "utf8_replaced",
}


# a repeated key (at any depth, macro has_duplicate_key) is worded alike in every contract
DUPLICATE_KEY_DETAIL = "'repeated key: ' || duplicate_key(doc)"


@dataclass(frozen=True)
class Details:
    """How a contract words its quarantine details: SQL over `doc` (the line) and `doc_type`.

    One per line reason; `missing`/`invalid`: of a field's reasons, given the field's name
    (`{name}`), and for `invalid` its JSON kind (`{type}`) and its text as written (`{text}`);
    `None`: no detail.
    """

    invalid_json: str | None
    torn_last_line: str | None
    not_an_object: str
    missing: str | None
    invalid: str


# revisions: every reason explained; a bad value is shown (its JSON, cut to 200 characters)
EXPLAINED = Details(
    invalid_json="'line is not valid JSON'",
    torn_last_line="'last line of the file is not valid JSON (cut off while being written?)'",
    not_an_object="'JSON ' || lower(doc_type) || ' where an object was expected'",
    missing="'{name} is absent, null or blank'",
    invalid="'{name} = ' || left(json_extract(doc, '$.{name}')::VARCHAR, 200)",
)
# escalations: only what is wrong with an object is shown (its JSON, the whole detail cut to 200)
TERSE = Details(
    invalid_json=None,
    torn_last_line=None,
    not_an_object="'json ' || lower(doc_type)",
    missing=None,
    invalid="left('{name} = ' || coalesce(CAST(json(doc) -> '{name}' AS VARCHAR), 'null'), 200)",
)


@dataclass(frozen=True)
class _Check:
    """One reason of the chain: its code, its SQL test and its detail (SQL)."""

    reason: str
    test: str
    detail: str | None


def columns(model: type[BaseModel]) -> dict[str, Column]:
    """Return each field of `model`, in order, as a `Column` (its `JsonField` from its metadata)."""
    fields = {}
    for name, info in model.model_fields.items():
        kinds = [m for m in info.metadata if isinstance(m, JsonField)]
        if len(kinds) != 1:
            raise TypeError(f"{model.__name__}.{name} needs exactly one JsonField in its metadata")
        fields[name] = Column(name, kinds[0], info)
    return fields


def _group(col: Column) -> str | None:
    return next((m.group for m in col.info.metadata if isinstance(m, OneOf)), None)


def _reason(col: Column) -> Reason:
    return next((m for m in col.info.metadata if isinstance(m, Reason)), Reason())


def _invalid_detail(col: Column, details: Details) -> str:
    template = _reason(col).detail or details.invalid
    return template.format(name=col.name, type=col.type, text=col.text)


def _field_checks(model: type[BaseModel], details: Details) -> list[_Check]:
    """Return the field reasons in the order they are tested, with their tests and details."""
    cols = columns(model)
    checks: list[_Check] = []
    done: set[str] = set()
    for name, col in cols.items():
        group = _group(col)
        if group is None:
            members, label, required = [col], name, col.info.is_required()
        elif group in done:
            continue
        else:
            members = [c for c in cols.values() if _group(c) == group]
            label, required = group, True
            done.add(group)
        missing = " AND ".join(f"({m.absent()})" for m in members)
        blank = members[0].kind.absent_when(members[0]) if group is None else None
        if required:
            test = f"({missing}) OR ({blank})" if blank else missing
            text = details.missing.format(name=label) if details.missing else None
            checks.append(_Check(f"missing_{label}", test, text))
        if any(m.invalid() is None for m in members):
            continue
        invalid = " OR ".join(f"({m.invalid()})" for m in members)
        shown = [(m, _invalid_detail(m, details)) for m in members]
        text = (
            shown[0][1]
            if len(shown) == 1
            else "CASE "
            + " ".join(f"WHEN {m.invalid()} THEN {d}" for m, d in shown[:-1])
            + f" ELSE {shown[-1][1]} END"
        )
        reason = _reason(members[0]).invalid or f"invalid_{label}"
        checks.append(_Check(reason, invalid, text))
    return checks


def _explained(checks: list[_Check]) -> str:
    """Return the `WHEN reason THEN detail` list of the checks' details.

    A reason that several checks give is worded by the first of them that fails.
    """
    by_reason: dict[str, list[_Check]] = {}
    for check in checks:
        if check.detail is not None:
            by_reason.setdefault(check.reason, []).append(check)
    cases = []
    for reason, given in by_reason.items():
        detail = given[-1].detail
        if len(given) > 1:
            tests = " ".join(f"WHEN {c.test} THEN {c.detail}" for c in given[:-1])
            detail = f"CASE {tests} ELSE {detail} END"
        cases.append(f"WHEN {sql_literal(reason)} THEN {detail}")
    return " ".join(cases)


def field_reasons(model: type[BaseModel]) -> tuple[str, ...]:
    """Return the reasons a record's fields can get, in the order they are tested."""
    return tuple(check.reason for check in _field_checks(model, EXPLAINED))


def fast_duplicates(cols: dict[str, Column]) -> str:
    """Return the fast parse's `duplicate_key` test: `has_duplicate_key(doc)`, for less.

    A record that fails a field check (`field_reason`, its first failing one) gets the full test
    of every value of the line. A record that passes them all holds in its known fields what their
    kinds accept, so only the fields whose kind `holds_objects` (an object, any JSON value) and
    its unknown fields can hold a nested object: its test reads the top-level keys already listed
    (`keys`), those fields' values when they are containers and the unknown fields' text
    (`extra_text`, as bronze's `extra`: the usual ones from their struct, else the whole line),
    each value's nested keys only when its text holds a second `{` (macro
    `has_nested_duplicate_key`). Either way the answer is `has_duplicate_key(doc)`'s, so the
    statement's rows are the exact statement's; only the cost differs.
    """
    containers = [
        f"(coalesce({c.type} IN ('OBJECT', 'ARRAY'), false) AND has_nested_duplicate_key({c.json}))"
        for c in cols.values()
        if c.kind.holds_objects
    ]
    extras = (
        "CASE WHEN len(extra_keys) = 0 THEN false "
        "WHEN extra_keys = $extra_sequence THEN has_nested_duplicate_key(extra_text) "
        "ELSE has_duplicate_key(doc) END"
    )
    clean = " OR ".join(["len(keys) <> len(list_distinct(keys))", *containers, extras])
    return f"CASE WHEN field_reason IS NULL THEN {clean} ELSE has_duplicate_key(doc) END"


def _with(statement: str, then: str) -> str:
    """Return `statement` (ending with its last CTE) followed by `then`'s CTEs and SELECT."""
    head, found, rest = then.partition("\nWITH ")
    if not found:
        raise ValueError("a `then` statement starts with WITH (after its comments)")
    return f"{statement},\n{head.strip()}\n{rest}"


@cache
def parse_statement(
    model: type[BaseModel],
    source: str,
    bronze: tuple[str, ...],
    *,
    key: tuple[str, ...] = (),
    details: Details = EXPLAINED,
    derived: tuple[tuple[str, str], ...] = (),
    extra_default: str | None = "{}",
    union: PayloadUnion | None = None,
    then: str | None = None,
    fast: bool = False,
) -> str:
    """Return the parse statement of `model`'s records (see the module docstring).

    `bronze`: the bronze columns in order (provenance columns, `source`, the model's fields,
    `derived` ones, `extra`); `key`: the bronze columns whose values, joined, are `dedup_key`;
    `details`: how quarantine details are worded; `derived`: (column, SQL template) pairs;
    `extra_default`: `extra` of an object without unknown fields. `union`: a field of the model
    holding a payload whose model another field's value picks (`lib.payload_sql`), checked after
    the model's fields. `then`: a statement (`WITH ...`) that reads the CTE `contract` (every
    column read and checked, `contract_reason`, `contract_detail` and `contract_extra`) and
    returns the parse's rows in its place (`bronze`, `key` and `derived` are then not used).
    `fast`: the fast parse, the same rows for less: the field checks are tested first, and the
    `duplicate_key` test of a record that passes them reads only where its repeated key can be
    (`fast_duplicates`).
    """
    cols = columns(model)
    structure = json.dumps(dict.fromkeys(cols, "JSON"), separators=(",", ":"))
    known = ", ".join(sql_literal(name) for name in cols)
    kinds = ",\n        ".join(f"json_kind({c.json}) AS {c.type}" for c in cols.values())
    values = ",\n        ".join(f"{c.kind.value(c)} AS {c.value}" for c in cols.values())
    line_checks = [
        _Check("torn_last_line", "doc IS NULL AND is_last_line", details.torn_last_line),
        _Check("invalid_json", "doc IS NULL", details.invalid_json),
        _Check("not_an_object", "doc_type <> 'OBJECT'", details.not_an_object),
    ]
    repeated = _Check("duplicate_key", "has_duplicate_key(doc)", DUPLICATE_KEY_DETAIL)
    field_checks = _field_checks(model, details)
    checks = [*line_checks, repeated, *field_checks]
    chain = "\n            ".join(f"WHEN {c.test} THEN {sql_literal(c.reason)}" for c in checks)
    fields_chain = "\n            ".join(
        f"WHEN {c.test} THEN {sql_literal(c.reason)}" for c in field_checks
    )
    explained = _explained(checks)
    checked_from, payload = "valued", ""
    if union is not None:
        payload = payload_ctes(union, cols[union.key].value, cols[union.field].value)
        checked_from = "payload_checked"
        fault = "\n            WHEN payload_fault IS NOT NULL THEN payload_fault.reason"
        chain += fault
        fields_chain += fault
        explained += (
            " ELSE CASE WHEN contract_reason = payload_fault.reason THEN payload_fault.detail END"
        )
    patch = json.dumps(dict.fromkeys(cols), separators=(",", ":"))
    default = f" WHEN doc_type = 'OBJECT' THEN {sql_literal(extra_default)}"
    extra = (
        "CASE WHEN len(extra_keys) > 0 AND extra_keys = $extra_sequence "
        "THEN CAST(to_json(json_transform(doc, $extra_structure)) AS VARCHAR) "
        "WHEN len(extra_keys) > 0 "
        f"THEN CAST(json_merge_patch(doc, {sql_literal(patch)}) AS VARCHAR)"
        f"{default if extra_default is not None else ''} END"
    )
    extras = ""
    if fast:
        # the field checks first (the unknown fields' text computed once, the fast test of repeated
        # keys reads it), then the same chain with the repeated-key test of `fast_duplicates`
        extras = f""",
extras AS (
    SELECT *, {extra} AS extra_text FROM {checked_from}
),
fielded AS (
    SELECT
        *,
        CASE WHEN doc_type = 'OBJECT' THEN CASE
            {fields_chain}
        END END AS field_reason
    FROM extras
)"""
        checked_from, extra = "fielded", "extra_text"
        tested = [*line_checks, _Check("duplicate_key", fast_duplicates(cols), None)]
        chain = "\n            ".join(f"WHEN {c.test} THEN {sql_literal(c.reason)}" for c in tested)
        chain += "\n            ELSE field_reason"
    origin = f"{model.__module__}.{model.__name__}{' (fast)' if fast else ''}"
    ctes = f"""-- generated by distill_assets.lib.contract_sql from {origin}
WITH lines AS (
    SELECT
        source_file, line_no, line, utf8_replaced, is_last_line,
        CASE WHEN json_valid(line) THEN line END AS doc
    FROM raw_lines
),
objects AS (
    SELECT *, coalesce(starts_object(doc), false) AS is_object FROM lines
),
parsed AS (
    SELECT
        *,
        CASE WHEN doc IS NULL THEN NULL WHEN is_object THEN 'OBJECT' ELSE json_type(doc) END
            AS doc_type,
        CASE WHEN is_object THEN json_transform(doc, {sql_literal(structure)}) END AS f,
        CASE WHEN is_object THEN json_keys(doc) END AS keys
    FROM objects
),
typed AS (
    SELECT
        *,
        {kinds},
        list_filter(keys, lambda k: NOT list_contains([{known}], k)) AS extra_keys
    FROM parsed
),
valued AS (
    SELECT
        *,
        {values}
    FROM typed
){payload}{extras},
checked AS (
    SELECT
        *,
        CASE
            {chain}
        END AS contract_reason
    FROM {checked_from}
)"""
    if then is not None:
        contract = f"""{ctes},
contract AS (
    SELECT
        *,
        CASE contract_reason {explained} END AS contract_detail,
        {extra} AS contract_extra
    FROM checked
)"""
        return _with(contract, then)
    outputs = {
        **_PROVENANCE,
        "source": sql_literal(source),
        **{name: col.output for name, col in cols.items()},
        **{name: template.format(**cols) for name, template in derived},
        "extra": extra,
    }
    selected = [f'{outputs[name]} AS "{name}"' for name in bronze]
    selected.append("extra_keys")
    selected.append("contract_reason AS quarantine_reason")
    selected.append(f"CASE contract_reason {explained} END AS quarantine_detail")
    if key:
        joined = " || chr(31) || ".join(f"({outputs[name]})" for name in key)
        selected.append(f"CASE WHEN contract_reason IS NULL THEN {joined} END AS dedup_key")
    listed = ",\n    ".join(selected)
    return f"""{ctes}
SELECT
    {listed}
FROM checked
"""


def _path_kind(info: object, where: str) -> PathField:
    kinds = [m for m in info.metadata if isinstance(m, PathField)]  # type: ignore[attr-defined]
    if len(kinds) != 1:
        raise TypeError(f"{where} needs exactly one PathField in its metadata")
    return kinds[0]


def _resolve(field: str, relative: str) -> str:
    """Return the JSON path of `relative` (a member, `[i]...`, `../other` or "") of a field."""
    if relative.startswith("../"):
        return f"$.{relative[3:]}"
    if not relative or relative.startswith("["):
        return f"$.{field}{relative}"
    return f"$.{field}.{relative}"


def _path(field: str) -> Callable[[str], str]:
    """Return `p`: the column of a path relative to `field` (see `lib.json_paths`)."""

    def p(relative: str) -> str:
        return f'"{_resolve(field, relative)}"'

    return p


def _path_kinds(model: type[BaseModel]) -> dict[str, PathField]:
    return {
        name: _path_kind(info, f"{model.__name__}.{name}")
        for name, info in model.model_fields.items()
    }


def _payload_paths(union: PayloadUnion) -> list[tuple[str, PathField, list[str]]]:
    """Return the payload models' path fields: (field, kind, the key values whose model has it)."""
    found: dict[tuple[str, PathField], list[str]] = {}
    for value, payload in union.models:
        for name, info in payload.model_fields.items():
            for kind in (m for m in info.metadata if isinstance(m, PathField)):
                found.setdefault((f"{union.field}.{name}", kind), []).append(value)
    return [(field, kind, values) for (field, kind), values in found.items()]


def _path_checks(model: type[BaseModel], details: Details, union: PayloadUnion) -> list[_Check]:
    """Return the checks of a contract read by path, in the order they are tested."""
    key = f'"v_{union.key}"'
    checks = [
        _Check("torn_last_line", "NOT valid AND is_last_line", details.torn_last_line),
        _Check("invalid_json", "NOT valid", details.invalid_json),
        _Check("not_an_object", "NOT is_object", details.not_an_object),
        _Check(
            "duplicate_key", "has_duplicate_key(line)", "'repeated key: ' || duplicate_key(line)"
        ),
    ]
    for name, kind in _path_kinds(model).items():
        checks += [_Check(*check) for check in kind.checks(name, _path(name))]
    for field, kind, values in _payload_paths(union):
        among = ", ".join(sql_literal(v) for v in values)
        for reason, test, detail in kind.checks(field, _path(field)):
            text = detail.format(key=key) if detail is not None else None
            checks.append(_Check(reason, f"{key} IN ({among}) AND {test}", text))
    return checks


def path_reasons(model: type[BaseModel], union: PayloadUnion) -> tuple[str, ...]:
    """Return every reason a contract read by path gives, in the order they are tested."""
    return tuple(c.reason for c in _path_checks(model, EXPLAINED, union))


@cache
def extract_statement(
    model: type[BaseModel], details: Details, union: PayloadUnion, then: str
) -> str:
    """Return the parse statement of a contract read by path (`lib.json_paths`).

    Every path the model's fields and the union's payload models name is read by one
    `json_extract` of the line (a line it cannot parse is not valid JSON), as a column named by
    its path (`"$.meta.goal"`); the union's key value is `"v_<key>"`. The reasons: the line
    reasons (`details`), the model's fields in order, then the payload models' path fields (a
    check whose field several key values' models state is one test over those values), first in
    model order. `then` (`WITH ...`) reads the CTE `contract` (those columns, `valid`,
    `is_object`, `contract_reason`, `contract_detail`, each field's value as `"v_<field>"` for an
    accepted record) and returns the rows.
    """
    kinds = _path_kinds(model)
    paths: dict[str, None] = {}
    for name, kind in kinds.items():
        paths.update((_resolve(name, r), None) for r in kind.paths())
    key = f'"v_{union.key}"'
    for field, kind, _ in _payload_paths(union):
        paths.update((_resolve(field, r), None) for r in kind.paths())
    listed = ",\n            ".join(sql_literal(p) for p in paths)
    columns = ",\n        ".join(f'f[{i}] AS "{p}"' for i, p in enumerate(paths, start=1))
    types = [
        f'{kind.type(name, _path(name))} AS "{name}_type"'
        for name, kind in kinds.items()
        if isinstance(kind, PathObject)
    ]
    key_value = kinds[union.key].value(union.key, _path(union.key))
    checks = _path_checks(model, details, union)
    chain = "\n            ".join(f"WHEN {c.test} THEN {sql_literal(c.reason)}" for c in checks)
    values = [
        f'CASE WHEN contract_reason IS NULL THEN {v} END AS "v_{name}"'
        for name, kind in kinds.items()
        if name != union.key and (v := kind.value(name, _path(name))) is not None
    ]
    typed = ",\n        ".join([*types, f"{key_value} AS {key}"])
    valued = ",\n        ".join(values)
    origin = f"{model.__module__}.{model.__name__}"
    statement = f"""-- generated by distill_assets.lib.contract_sql from {origin}
WITH fields AS (
    SELECT
        source_file, line_no, line, utf8_replaced, is_last_line,
        TRY(json_extract(line, [
            {listed}
        ])) AS f
    FROM raw_lines
),
paths AS (
    SELECT
        source_file, line_no, line, utf8_replaced, is_last_line,
        f IS NOT NULL AS valid,
        starts_object(line) AS is_object,
        {columns}
    FROM fields
),
typed AS (
    SELECT
        *,
        {typed}
    FROM paths
),
checked AS (
    SELECT
        *,
        CASE
            {chain}
        END AS contract_reason
    FROM typed
),
contract AS (
    SELECT
        *,
        {valued},
        CASE contract_reason {_explained(checks)} END AS contract_detail
    FROM checked
)"""
    return _with(statement, then)
