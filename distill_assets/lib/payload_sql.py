"""The SQL checks of a discriminated union of payload models, derived from their field types.

A raw contract whose records carry a JSON object (`PayloadUnion.field`) whose fields depend on
another field's value (`PayloadUnion.key`, e.g. telemetry's `payload` keyed by `event_type`)
states one pydantic model per value. `lib.contract_sql.parse_statement` checks such a payload
with the checks written here, as the model validates it in strict mode: every field in model
order (a nested model's fields right after it), `missing_<path>` for a required field that is
absent or null, `invalid_<path>` for a present value not of its type (path parts joined by `_`:
`invalid_observation_game_state`), worded `<value>.<path>: expected <what>, got <json kind>`.
The types read are `str`, `bool`, `int`, `float` (bounds: `ge` and `le`, or `ge` alone on an
integer), a `Literal`, `dict` (of one of those), `list` (of those, or of models whose fields are
required strings; `min_length`), a nested model and `X | None`; another type is refused. A field
marked `Essential` is checked with its own terse reasons (see there).

The types of the payload's fields are read in one parse of the payload (`json_type` with the
list of paths), or, for the values in `PayloadUnion.transformed` (frequent ones whose fields
bronze readers use), from one `json_transform` of the payload to its fields.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from functools import cached_property

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from distill_assets.lib.json_fields import sql_literal

# the JSON kinds (json_type / json_kind names) each Python type accepts, and its plural noun
_KINDS: dict[type, tuple[tuple[str, ...], str, str]] = {
    str: (("VARCHAR",), "a string", "strings"),
    bool: (("BOOLEAN",), "a boolean", "booleans"),
    int: (("BIGINT", "UBIGINT"), "an integer", "integers"),
    float: (("BIGINT", "UBIGINT", "DOUBLE"), "a number", "numbers"),
}


@dataclass(frozen=True)
class Essential:
    """Marks a payload field checked with its own terse reasons, before the rest of its model.

    A string: anything but a non-blank string is `missing_<name>` (`<name> is blank|<kind>`); a
    Literal: anything but a string is `missing_<name>` (`<name> is <kind>`), a string not among
    its values `invalid_<name>` (`<name>: <text>`); an integer: absent or null is
    `missing_<name>` (no detail), anything but an integer within its bounds `invalid_<name>`
    (`<name>: <text>`).
    """


@dataclass(frozen=True)
class PayloadUnion:
    """A JSON object field (`field`) whose model is chosen by another field's value (`key`)."""

    key: str
    field: str
    models: tuple[tuple[str, type[BaseModel]], ...]
    transformed: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Check:
    """One payload check: its reason, its SQL test and its detail (SQL, or None)."""

    reason: str
    test: str
    detail: str | None


@dataclass(frozen=True)
class _Field:
    """One field of a payload model as the checks read it (`index`: its place in `pk`)."""

    path: tuple[str, ...]
    info: FieldInfo
    index: int
    transformed: bool

    @property
    def kind(self) -> str:
        """The field's JSON kind (SQL NULL when absent, unless transformed: then 'NULL')."""
        return f"pk[{self.index}]"

    @property
    def json_path(self) -> str:
        """The field's JSON path in the payload."""
        return "$." + ".".join(self.path)

    @property
    def text(self) -> str:
        """The field's text (a string's, else its JSON text)."""
        if self.transformed:
            return f'json_value_text(d."{self.path[-1]}")'
        return f"payload_doc ->> {sql_literal(self.json_path)}"

    @cached_property
    def shape(self) -> tuple[object, bool, list[object]]:
        """The type without None, whether null is allowed, and the bounds on it."""
        annotation, bounds = _unwrap(self.info.annotation)
        args = typing.get_args(annotation)
        nullable = isinstance(annotation, types.UnionType) or (
            typing.get_origin(annotation) is typing.Union
        )
        if nullable:
            kept = [a for a in args if a is not type(None)]
            if len(kept) != 1:
                raise TypeError(f"{self.json_path}: only X | None unions are supported")
            annotation, inner = _unwrap(kept[0])
            bounds = bounds + inner
        return annotation, nullable, [*self.info.metadata, *bounds]


def _unwrap(annotation: object) -> tuple[object, list[object]]:
    """Return an Annotated type's type and metadata (a plain type and no metadata otherwise)."""
    if typing.get_origin(annotation) is typing.Annotated:
        inner, *metadata = typing.get_args(annotation)
        return inner, list(metadata)
    return annotation, []


def _bound(metadata: list[object], constraint: type) -> float | None:
    for item in metadata:
        if isinstance(item, constraint):
            return getattr(item, dataclasses.fields(item)[0].name)
    return None


def _number(value: float) -> str:
    return f"{value:g}"


def _is_model(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _literal_values(annotation: object) -> tuple[str, ...] | None:
    if typing.get_origin(annotation) is typing.Literal:
        return typing.get_args(annotation)
    return None


def _items_test(path: str, kinds: tuple[str, ...]) -> str:
    """Every item at `path` (`[*]` or `.*`) is of one of `kinds`."""
    listed = ", ".join(sql_literal(k) for k in kinds)
    return (
        f"NOT coalesce(list_bool_and(list_transform(json_type(payload_doc, "
        f"{sql_literal(path)}), lambda t: t IN ({listed}))), true)"
    )


def _type_test(field: _Field) -> tuple[tuple[str, ...], list[str], str]:
    """Return the JSON kinds a value may have, further tests of a bad value, and what it is."""
    annotation, _, metadata = field.shape
    path = field.json_path
    literal = _literal_values(annotation)
    if literal is not None:
        values = ", ".join(sql_literal(v) for v in literal)
        text = f'json_text(d."{field.path[-1]}")' if field.transformed else field.text
        return ("VARCHAR",), [f"NOT list_contains([{values}], {text})"], "one of the allowed values"
    if annotation in _KINDS:
        return _scalar_test(field, annotation, metadata)  # type: ignore[arg-type]
    if annotation is dict:
        return ("OBJECT",), [], "an object"
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is dict and args[1] in _KINDS:
        kinds, _, plural = _KINDS[args[1]]
        return ("OBJECT",), [_items_test(f"{path}.*", kinds)], f"an object of {plural}"
    if origin is list:
        return _list_test(field, args[0], _bound(metadata, annotated_types.MinLen))
    if _is_model(annotation):
        return ("OBJECT",), [], "an object"
    raise TypeError(f"{path}: unsupported type {annotation}")


def _scalar_test(
    field: _Field, annotation: type, metadata: list[object]
) -> tuple[tuple[str, ...], list[str], str]:
    """Return the test of a string, boolean, integer (`ge`) or number (`ge` and `le`)."""
    kinds, what, _ = _KINDS[annotation]
    low, high = _bound(metadata, annotated_types.Ge), _bound(metadata, annotated_types.Le)
    if annotation is int and low is not None and high is None:
        cast = f"TRY_CAST({field.text} AS BIGINT)"
        return kinds, [f"coalesce({cast} < {_number(low)}, true)"], f"{what} >= {_number(low)}"
    if annotation is float and low is not None and high is not None:
        cast = f"TRY_CAST({field.text} AS DOUBLE)"
        test = f"NOT ({cast} BETWEEN {_number(low)} AND {_number(high)})"
        return kinds, [test], f"{what} in [{_number(low)}, {_number(high)}]"
    constraints = [m for m in metadata if isinstance(m, annotated_types.BaseMetadata)]
    if constraints:
        raise TypeError(f"{field.json_path}: unsupported constraints {constraints}")
    return kinds, [], what


def _list_test(
    field: _Field, item: object, min_length: float | None
) -> tuple[tuple[str, ...], list[str], str]:
    path = field.json_path
    length = f"json_array_length(payload_doc, {sql_literal(path)})"
    tests = [f"{length} < {min_length}"] if min_length else []
    if item in _KINDS:
        kinds, _, plural = _KINDS[item]
        tests.append(_items_test(f"{path}[*]", kinds))
        what = f"an array of {plural}" if not min_length else f"a non-empty array of {plural}"
        if min_length and min_length > 1:
            what = f">= {min_length} {plural}"
        return ("ARRAY",), tests, what
    if not _is_model(item):
        raise TypeError(f"{path}: unsupported list item {item}")
    names = []
    for name, info in item.model_fields.items():  # type: ignore[attr-defined]
        if info.annotation is not str or not info.is_required():
            raise TypeError(f"{path}: the items' fields must be required strings ({name})")
        names.append(name)
    tests.append(_items_test(f"{path}[*]", ("OBJECT",)))
    for name in names:
        strings = f"list_filter(json_type(payload_doc, {sql_literal(f'{path}[*].{name}')}), "
        tests.append(f"len({strings}lambda t: t = 'VARCHAR')) <> {length}")
    count = f">= {min_length} objects" if min_length else "an array of objects"
    return ("ARRAY",), tests, f"{count} with string {' and '.join(names)}"


def _essential(field: _Field) -> list[_Check]:
    """Return the terse checks of an `Essential` field (see there)."""
    annotation = field.shape[0]
    name, kind = field.path[-1], f"coalesce({field.kind}, 'NULL')"
    literal = _literal_values(annotation)
    if literal is not None:
        values = ", ".join(sql_literal(v) for v in literal)
        return [
            _Check(f"missing_{name}", f"{kind} <> 'VARCHAR'", f"'{name} is ' || lower({kind})"),
            _Check(
                f"invalid_{name}",
                f"NOT list_contains([{values}], {field.text})",
                f"'{name}: ' || {field.text}",
            ),
        ]
    if annotation is str:
        return [
            _Check(
                f"missing_{name}",
                f"{kind} <> 'VARCHAR' OR trim({field.text}) = ''",
                f"'{name} is ' || CASE {kind} WHEN 'VARCHAR' THEN 'blank' ELSE lower({kind}) END",
            )
        ]
    if annotation is int:
        kinds, tests, _ = _type_test(field)
        listed = ", ".join(sql_literal(k) for k in kinds)
        return [
            _Check(f"missing_{name}", f"{kind} = 'NULL'", None),
            _Check(
                f"invalid_{name}",
                " OR ".join([f"{kind} NOT IN ({listed})", *tests]),
                f"'{name}: ' || {field.text}",
            ),
        ]
    raise TypeError(f"{field.json_path}: an Essential field is a string, a Literal or an int")


def _fields(
    model: type[BaseModel], transformed: bool, prefix: tuple[str, ...] = ()
) -> list[_Field]:
    """Return the model's fields in check order (a nested model's fields right after it)."""
    fields: list[_Field] = []
    for name, info in model.model_fields.items():
        field = _Field((*prefix, name), info, 0, transformed)
        fields.append(field)
        annotation, nullable, _ = field.shape
        if _is_model(annotation):
            if nullable or transformed:
                raise TypeError(f"{field.json_path}: a nested model must be required")
            fields.extend(_fields(annotation, transformed, field.path))  # type: ignore[arg-type]
    return [_Field(f.path, f.info, i, f.transformed) for i, f in enumerate(fields, start=1)]


def _checks(value: str, fields: list[_Field]) -> list[_Check]:
    """Return the checks of one model's fields, in order."""
    essential = [f for f in fields if any(isinstance(m, Essential) for m in f.info.metadata)]
    checks = [check for field in essential for check in _essential(field)]
    for field in fields:
        if field in essential:
            continue
        kinds, tests, what = _type_test(field)
        _, nullable, _ = field.shape
        required = field.info.is_required()
        got = f"' || lower(coalesce({field.kind}, 'absent'))"
        detail = f"'{value}.{'.'.join(field.path)}: expected {what}"
        # (a Literal's "one of the allowed values" is not followed by "or null")
        literal = _literal_values(field.shape[0]) is not None
        detail += f"{' or null' if nullable and not literal else ''}, got {got}"
        label = "_".join(field.path)
        if required:
            checks.append(
                _Check(f"missing_{label}", f"coalesce({field.kind}, 'NULL') = 'NULL'", detail)
            )
        if nullable:
            accepted = ("NULL", *kinds)
            guarded = [f"({field.kind} <> 'NULL' AND {t})" for t in tests]
        else:
            accepted = kinds
            guarded = tests
        kind = field.kind if required or nullable else f"coalesce({field.kind}, '{kinds[0]}')"
        listed = ", ".join(sql_literal(k) for k in accepted)
        test = " OR ".join([f"{kind} NOT IN ({listed})", *guarded])
        checks.append(_Check(f"invalid_{label}", test, detail))
    return checks


def _models(union: PayloadUnion) -> list[tuple[str, list[_Field]]]:
    return [(value, _fields(model, value in union.transformed)) for value, model in union.models]


def payload_reasons(union: PayloadUnion) -> dict[str, tuple[str, ...]]:
    """Return, per key value, the reasons its payload can get in the order they are tested."""
    return {
        value: tuple(check.reason for check in _checks(value, fields))
        for value, fields in _models(union)
    }


def payload_ctes(union: PayloadUnion, key: str, doc: str) -> str:
    """Return the CTEs (after `valued`) that check the payload (`payload_doc`): `payload_fault`.

    `key`: the SQL of the key's value; `doc`: of the payload's JSON (NULL when not an object).
    `payload_fault` is `{reason, detail}` of the payload's first failing check (NULL if none).
    """
    transforms, kinds, faults = [], [], []
    for value, fields in _models(union):
        literal = sql_literal(value)
        if value in union.transformed:
            structure = ",".join(f'"{f.path[-1]}":"JSON"' for f in fields)
            transforms.append(
                f"WHEN {key} = {literal} THEN json_transform(payload_doc, '{{{structure}}}')"
            )
            listed = ", ".join(f'json_kind(d."{f.path[-1]}")' for f in fields)
            kinds.append(f"WHEN {literal} THEN [{listed}]")
        else:
            paths = ", ".join(sql_literal(f.json_path) for f in fields)
            kinds.append(f"WHEN {literal} THEN json_type(payload_doc, [{paths}])")
        cases = " ".join(
            f"WHEN {c.test} THEN {{'reason': {sql_literal(c.reason)}, "
            f"'detail': {c.detail if c.detail is not None else 'NULL'}}}"
            for c in _checks(value, fields)
        )
        faults.append(f"WHEN {literal} THEN CASE {cases} END")
    read = f"CASE {' '.join(transforms)} END" if transforms else "NULL"
    kind_cases = "\n            ".join(kinds)
    fault_cases = "\n            ".join(faults)
    return f""",
payload_read AS (
    SELECT
        *,
        {doc} AS payload_doc,
        CASE WHEN {doc} IS NOT NULL THEN {read} END AS d
    FROM valued
),
payload_kinds AS (
    SELECT
        *,
        CASE {key}
            {kind_cases}
        END AS pk
    FROM payload_read
),
payload_checked AS (
    SELECT
        *,
        CASE {key}
            {fault_cases}
        END AS payload_fault
    FROM payload_kinds
)"""
