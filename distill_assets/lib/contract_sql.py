"""Generate a raw contract's bulk parse statement from its pydantic model.

A contract states each field once, on the model: its name, type, whether it is required, its
constraints (an enum's values, `ge`), and, as `Annotated` metadata, the `JsonField` kind that says
how a JSON value of that field is read and normalised (`Text`, `TextOrInteger`, `Integer`,
`Choice`, `UnixOrIsoSeconds`, `TextList`: the same normalisations as the model's validators).
`parse_statement` walks the model's fields in order and writes the DuckDB statement the ingest
runs (`lib.rawcontract.RawContract.parse`): one `json_transform` of each line to the contract's
fields, a type (`json_kind`) and a value per field, and the reason chain: the line-level reasons
(`LINE_REASONS`), then, field by field in model order, `missing_<field>` (a required field
absent, null, or blank where blank means absent) and `invalid_<field>` (present but not of the
contract). The first failing test is the record's `quarantine_reason`; the model's field order
is therefore the order the reasons are tested in. The statement also returns the bronze columns
(in the order of the contract's bronze schema), the unknown fields as `extra` (with
`extra_keys`, see `defs.ingest.UsualExtras`), `quarantine_detail` and, for a contract with a
key unique within a partition, `dedup_key`.

The statement is built once per process on first use (cached): there is no SQL file to go stale.
The contract's constants (an enum's values, a bound, a pattern) are part of the statement, as SQL
literals quoted here; no record value is ever put in it.
"""

from __future__ import annotations

import json
import typing
from dataclasses import dataclass
from enum import Enum
from functools import cache

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

# reasons every line can get before its fields are looked at, in the order they are tested
LINE_REASONS: tuple[str, ...] = ("invalid_json", "torn_last_line", "not_an_object")
# the columns every bronze table starts with that no contract field gives
_PROVENANCE = {
    "id": "left(sha256(source_file || chr(31) || line_no), 16)",
    "source_ref": "source_file || ':' || line_no",
    "source_file": "source_file",
    "line_no": "line_no",
    "utf8_replaced": "utf8_replaced",
}


def sql_literal(value: str | float) -> str:
    """Return `value` as a DuckDB literal (a string quoted, a number as Python writes it)."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


@dataclass(frozen=True)
class Column:
    """The SQL names of one contract field: its JSON text, its kind and its value."""

    name: str

    @property
    def json(self) -> str:
        """The field's JSON text (`f` is the line's `json_transform` to the contract's fields)."""
        return f'f."{self.name}"'

    @property
    def kind(self) -> str:
        """The field's JSON kind (`json_kind`: VARCHAR, BIGINT, ..., 'NULL' for JSON null)."""
        return f'"t_{self.name}"'

    @property
    def value(self) -> str:
        """The field's normalised value (NULL when the JSON value is not of the contract)."""
        return f'"v_{self.name}"'

    def absent(self) -> str:
        """Whether the field is absent or JSON null."""
        return f"coalesce({self.kind}, 'NULL') = 'NULL'"

    def kind_not_in(self, kinds: tuple[str, ...]) -> str:
        """Whether the field is present, not null, and of none of `kinds`."""
        listed = ", ".join(sql_literal(k) for k in ("NULL", *kinds))
        return f"coalesce({self.kind}, 'NULL') NOT IN ({listed})"


class JsonField:
    """How a contract field's JSON value is read: its value, its checks and its bronze column."""

    def value(self, col: Column, info: FieldInfo) -> str:
        """Return the SQL of the normalised value (NULL when it is not of the contract)."""
        raise NotImplementedError

    def missing(self, col: Column) -> str:
        """Return the SQL test of a required field that counts as absent."""
        return col.absent()

    def invalid(self, col: Column, info: FieldInfo, required: bool) -> str:
        """Return the SQL test of a field that is present but not of the contract."""
        raise NotImplementedError

    def output(self, col: Column) -> str:
        """Return the SQL of the bronze column (only read for an accepted record)."""
        return col.value


@dataclass(frozen=True)
class Text(JsonField):
    """A JSON string.

    `trim`: stored trimmed; `blank`: `missing` (a blank required value is absent), `none` (stored
    as NULL) or `keep`.
    """

    trim: bool = False
    blank: typing.Literal["missing", "none", "keep"] = "keep"

    def value(self, col: Column, info: FieldInfo) -> str:  # noqa: D102
        text = f"json_text({col.json})"
        text = f"trim({text})" if self.trim else text
        text = f"nullif({text}, '')" if self.blank == "none" else text
        return f"CASE WHEN {col.kind} = 'VARCHAR' THEN {text} END"

    def missing(self, col: Column) -> str:  # noqa: D102
        if self.blank != "missing":
            return col.absent()
        return f"{col.absent()} OR ({col.kind} = 'VARCHAR' AND trim({col.value}) = '')"

    def invalid(self, col: Column, info: FieldInfo, required: bool) -> str:  # noqa: D102
        return f"{col.value} IS NULL" if required else col.kind_not_in(("VARCHAR",))


@dataclass(frozen=True)
class TextOrInteger(JsonField):
    """An identifier: a non-blank JSON string (stored trimmed) or an integer (its decimal text)."""

    def value(self, col: Column, info: FieldInfo) -> str:  # noqa: D102
        text = f"json_value_text({col.json})"
        return (
            f"CASE WHEN {col.kind} = 'VARCHAR' THEN nullif(trim({text}), '') "
            f"WHEN {col.kind} IN ('UBIGINT', 'BIGINT') THEN {text} END"
        )

    def missing(self, col: Column) -> str:  # noqa: D102
        return f"{col.absent()} OR ({col.kind} = 'VARCHAR' AND {col.value} IS NULL)"

    def invalid(self, col: Column, info: FieldInfo, required: bool) -> str:  # noqa: D102
        return f"{col.value} IS NULL"


@dataclass(frozen=True)
class Integer(JsonField):
    """A JSON integer, at least the field's `ge` constraint if it has one."""

    def value(self, col: Column, info: FieldInfo) -> str:  # noqa: D102
        return (
            f"CASE WHEN {col.kind} IN ('UBIGINT', 'BIGINT') THEN TRY_CAST({col.json} AS BIGINT) END"
        )

    def invalid(self, col: Column, info: FieldInfo, required: bool) -> str:  # noqa: D102
        test = f"{col.value} IS NULL"
        for bound in info.metadata:
            if isinstance(bound, annotated_types.Ge):
                test += f" OR {col.value} < {sql_literal(bound.ge)}"
        return test


@dataclass(frozen=True)
class Choice(JsonField):
    """A JSON string, one of the values of the field's enum.

    `upper`: compared trimmed and upper-cased (and stored so).
    """

    upper: bool = False

    def value(self, col: Column, info: FieldInfo) -> str:  # noqa: D102
        text = f"json_text({col.json})"
        text = f"upper(trim({text}))" if self.upper else text
        return f"CASE WHEN {col.kind} = 'VARCHAR' THEN {text} END"

    def invalid(self, col: Column, info: FieldInfo, required: bool) -> str:  # noqa: D102
        enum = info.annotation
        assert isinstance(enum, type) and issubclass(enum, Enum), "a Choice field is an enum"
        values = ", ".join(sql_literal(member.value) for member in enum)
        return f"{col.value} IS NULL OR {col.value} NOT IN ({values})"


@dataclass(frozen=True)
class UnixOrIsoSeconds(JsonField):
    """Unix seconds in [0, `upper`).

    A JSON number, or an ISO-8601 string (read as UTC unless it matches `offset_pattern`).
    """

    upper: float
    offset_pattern: str

    def value(self, col: Column, info: FieldInfo) -> str:  # noqa: D102
        text = f"json_value_text({col.json})"
        return (
            f"CASE WHEN {col.kind} IN ('UBIGINT', 'BIGINT', 'DOUBLE') "
            f"THEN TRY_CAST({text} AS DOUBLE) "
            f"WHEN {col.kind} = 'VARCHAR' AND regexp_matches({text}, "
            f"{sql_literal(self.offset_pattern)}) THEN epoch(TRY_CAST({text} AS TIMESTAMPTZ)) "
            f"WHEN {col.kind} = 'VARCHAR' THEN epoch(TRY_CAST({text} AS TIMESTAMP)) END"
        )

    def invalid(self, col: Column, info: FieldInfo, required: bool) -> str:  # noqa: D102
        v = col.value
        return f"{v} IS NULL OR NOT isfinite({v}) OR {v} < 0 OR {v} >= {sql_literal(self.upper)}"


@dataclass(frozen=True)
class TextList(JsonField):
    """A JSON array of strings, or a single string (one item).

    Items are stored trimmed and blank ones dropped; absent or null is the empty list.
    """

    def value(self, col: Column, info: FieldInfo) -> str:  # noqa: D102
        return (
            f"CASE WHEN {col.kind} = 'VARCHAR' THEN [trim(json_text({col.json}))] "
            f"WHEN {col.kind} = 'ARRAY' THEN list_transform("
            f"json_extract_string({col.json}, '$[*]'), lambda h: trim(h)) ELSE [] END"
        )

    def invalid(self, col: Column, info: FieldInfo, required: bool) -> str:  # noqa: D102
        items = f"json_type({col.json}, '$[*]')"
        return (
            f"{col.kind_not_in(('VARCHAR', 'ARRAY'))} OR ({col.kind} = 'ARRAY' AND NOT "
            f"list_bool_and(list_transform({items}, lambda t: t = 'VARCHAR')))"
        )

    def output(self, col: Column) -> str:  # noqa: D102
        return f"list_filter({col.value}, lambda h: h <> '')"


def json_fields(model: type[BaseModel]) -> dict[str, tuple[JsonField, FieldInfo]]:
    """Return each field of `model`, in order, with its `JsonField` kind (its metadata)."""
    fields = {}
    for name, info in model.model_fields.items():
        kinds = [m for m in info.metadata if isinstance(m, JsonField)]
        if len(kinds) != 1:
            raise TypeError(f"{model.__name__}.{name} needs exactly one JsonField in its metadata")
        fields[name] = (kinds[0], info)
    return fields


def field_reasons(model: type[BaseModel]) -> tuple[str, ...]:
    """Return the reasons a record's fields can get, in the order they are tested."""
    reasons: list[str] = []
    for name, (_, info) in json_fields(model).items():
        if info.is_required():
            reasons.append(f"missing_{name}")
        reasons.append(f"invalid_{name}")
    return tuple(reasons)


@cache
def parse_statement(
    model: type[BaseModel], source: str, bronze: tuple[str, ...], key: tuple[str, ...] = ()
) -> str:
    """Return the parse statement of `model`'s records (see the module docstring).

    `bronze`: the bronze columns in order (provenance columns, `source`, the model's fields,
    `extra`); `key`: the fields whose values, joined, are `dedup_key`.
    """
    fields = json_fields(model)
    columns = {name: Column(name) for name in fields}
    structure = json.dumps(dict.fromkeys(fields, "JSON"), separators=(",", ":"))
    known = ", ".join(sql_literal(name) for name in fields)
    kinds = ",\n        ".join(f"json_kind({c.json}) AS {c.kind}" for c in columns.values())
    values = ",\n        ".join(
        f"{kind.value(columns[name], info)} AS {columns[name].value}"
        for name, (kind, info) in fields.items()
    )
    checks = []
    for name, (kind, info) in fields.items():
        col, required = columns[name], info.is_required()
        if required:
            checks.append(f"WHEN {kind.missing(col)} THEN 'missing_{name}'")
        checks.append(f"WHEN {kind.invalid(col, info, required)} THEN 'invalid_{name}'")
    chain = "\n            ".join(checks)
    patch = json.dumps(dict.fromkeys(fields), separators=(",", ":"))
    generic = {
        **_PROVENANCE,
        "source": sql_literal(source),
        "extra": (
            "CASE WHEN len(extra_keys) > 0 AND extra_keys = $extra_sequence "
            "THEN CAST(to_json(json_transform(doc, $extra_structure)) AS VARCHAR) "
            "WHEN len(extra_keys) > 0 "
            f"THEN CAST(json_merge_patch(doc, {sql_literal(patch)}) AS VARCHAR) "
            "WHEN doc_type = 'OBJECT' THEN '{}' END"
        ),
    }
    outputs = [
        f"{generic[name] if name in generic else fields[name][0].output(columns[name])} AS {name}"
        for name in bronze
    ]
    outputs.append("extra_keys")
    outputs.append("contract_reason AS quarantine_reason")
    outputs.append(
        "CASE WHEN contract_reason = 'invalid_json' THEN 'line is not valid JSON' "
        "WHEN contract_reason = 'torn_last_line' "
        "THEN 'last line of the file is not valid JSON (cut off while being written?)' "
        "WHEN contract_reason = 'not_an_object' "
        "THEN 'JSON ' || lower(doc_type) || ' where an object was expected' "
        "WHEN contract_reason LIKE 'missing_%' "
        "THEN substr(contract_reason, 9) || ' is absent, null or blank' "
        "WHEN contract_reason LIKE 'invalid_%' THEN substr(contract_reason, 9) || ' = ' "
        "|| left(json_extract(doc, '$.' || substr(contract_reason, 9))::VARCHAR, 200) "
        "END AS quarantine_detail"
    )
    if key:
        joined = " || chr(31) || ".join(columns[name].value for name in key)
        outputs.append(f"CASE WHEN contract_reason IS NULL THEN {joined} END AS dedup_key")
    selected = ",\n    ".join(outputs)
    origin = f"{model.__module__}.{model.__name__}"
    return f"""-- generated by distill_assets.lib.contract_sql from {origin}
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
),
checked AS (
    SELECT
        *,
        CASE
            WHEN doc IS NULL AND is_last_line THEN 'torn_last_line'
            WHEN doc IS NULL THEN 'invalid_json'
            WHEN doc_type <> 'OBJECT' THEN 'not_an_object'
            {chain}
        END AS contract_reason
    FROM valued
)
SELECT
    {selected}
FROM checked
"""
