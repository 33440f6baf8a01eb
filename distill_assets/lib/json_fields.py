"""The kinds of JSON field a raw contract's fields are read as, and their SQL.

A raw contract's pydantic field carries one `JsonField` in its `Annotated` metadata: how the
field's JSON value is read and normalised (`value`), when a present value is of the contract
(`ok`), when a present value counts as absent (`absent_when`), and its bronze column (`output`),
each as DuckDB SQL over the field's `Column` (its JSON text `f."<name>"`, its JSON kind from the
`json_kind` macro, its value). `lib.contract_sql` puts them together into the parse statement.
The kinds state the same normalisations as the contracts' pydantic validators.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass
from enum import Enum

import annotated_types
from pydantic.fields import FieldInfo


def sql_literal(value: str | float) -> str:
    """Return `value` as a DuckDB literal (a string quoted, a number as Python writes it)."""
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


@dataclass(frozen=True)
class Column:
    """One contract field in the statement: its JSON text, JSON kind, value and bronze column."""

    name: str
    kind: JsonField
    info: FieldInfo

    @property
    def json(self) -> str:
        """The field's JSON text (`f` is the line's `json_transform` to the contract's fields)."""
        return f'f."{self.name}"'

    @property
    def type(self) -> str:
        """The field's JSON kind (`json_kind`: VARCHAR, BIGINT, ..., 'NULL' when absent/null)."""
        return f'"t_{self.name}"'

    @property
    def value(self) -> str:
        """The field's normalised value (NULL when the JSON value is not of the contract)."""
        return f'"v_{self.name}"'

    @property
    def output(self) -> str:
        """The field's bronze column (only read for an accepted record)."""
        return self.kind.output(self)

    def absent(self) -> str:
        """Whether the field is absent or JSON null."""
        return f"coalesce({self.type}, 'NULL') = 'NULL'"

    @property
    def text(self) -> str:
        """The field's text as written (a string's text, else its JSON text; NULL for null)."""
        return f"json_value_text({self.json})"

    def invalid(self) -> str | None:
        """Whether the field is present, not null, and not of the contract (None: never)."""
        ok = self.kind.ok(self)
        if ok is None:
            return None
        return f"NOT {self.absent()} AND NOT coalesce({ok}, false)"

    def bounds(self) -> str:
        """Return the value's test of the field's bounds (`ge`, `gt`, `le`, `lt`), if it has any."""
        tests = [f"{self.value} IS NOT NULL"]
        operators = {
            annotated_types.Ge: (">=", "ge"),
            annotated_types.Gt: (">", "gt"),
            annotated_types.Le: ("<=", "le"),
            annotated_types.Lt: ("<", "lt"),
        }
        for constraint in self.info.metadata:
            if type(constraint) in operators:
                operator, attribute = operators[type(constraint)]
                bound = sql_literal(getattr(constraint, attribute))
                tests.append(f"{self.value} {operator} {bound}")
        return " AND ".join(tests[1:] or tests)


class JsonField:
    """How a contract field's JSON value is read: its value, its test and its bronze column.

    `holds_objects`: whether a value the field accepts may contain a JSON object (an object, or
    any JSON value); the fast parse checks only such fields' values for repeated keys.
    """

    holds_objects = False

    def value(self, col: Column) -> str:
        """Return the SQL of the normalised value (NULL when it is not of the contract)."""
        raise NotImplementedError

    def ok(self, col: Column) -> str | None:
        """Return the SQL test of a present value that is of the contract (NULL counts as not).

        None: every present value is (the field has no `invalid_` reason).
        """
        raise NotImplementedError

    def absent_when(self, col: Column) -> str | None:
        """Return the SQL test of a present value that counts as absent (None: none does)."""
        return None

    def output(self, col: Column) -> str:
        """Return the SQL of the bronze column (only read for an accepted record)."""
        return col.value


@dataclass(frozen=True)
class Reason:
    """Overrides how a field's `invalid_<name>` reason is named and worded.

    `invalid`: the reason code (fields may share one: the detail is that of the first failing);
    `detail`: the detail's SQL, a template over `{name}`, `{type}` (the JSON kind) and `{text}`
    (the value as written), in place of the contract's `Details.invalid`.
    """

    invalid: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class OneOf:
    """Marks an optional field of a group of which at least one is required, checked as one."""

    group: str


@dataclass(frozen=True)
class Text(JsonField):
    """A JSON string.

    `trim`: stored trimmed; `blank`: what a blank (all spaces) value is: `missing` (a required
    value counts as absent), `invalid`, `none` (stored as NULL) or `keep`.
    """

    trim: bool = False
    blank: typing.Literal["missing", "invalid", "none", "keep"] = "keep"

    def value(self, col: Column) -> str:  # noqa: D102
        text = f"json_text({col.json})"
        text = f"trim({text})" if self.trim else text
        text = f"nullif({text}, '')" if self.blank == "none" else text
        return f"CASE WHEN {col.type} = 'VARCHAR' THEN {text} END"

    def ok(self, col: Column) -> str:  # noqa: D102
        if self.blank == "invalid":
            return f"{col.type} = 'VARCHAR' AND NOT is_blank({col.value})"
        return f"{col.type} = 'VARCHAR'"

    def absent_when(self, col: Column) -> str | None:  # noqa: D102
        if self.blank != "missing":
            return None
        return f"{col.type} = 'VARCHAR' AND is_blank({col.value})"


@dataclass(frozen=True)
class TextOrInteger(JsonField):
    """An identifier: a non-blank JSON string (stored trimmed) or an integer (its decimal text)."""

    def value(self, col: Column) -> str:  # noqa: D102
        text = f"json_value_text({col.json})"
        return (
            f"CASE WHEN {col.type} = 'VARCHAR' THEN nullif(trim({text}), '') "
            f"WHEN {col.type} IN ('UBIGINT', 'BIGINT') THEN {text} END"
        )

    def ok(self, col: Column) -> str:  # noqa: D102
        return f"{col.value} IS NOT NULL"

    def absent_when(self, col: Column) -> str | None:  # noqa: D102
        return f"{col.type} = 'VARCHAR' AND {col.value} IS NULL"


@dataclass(frozen=True)
class Integer(JsonField):
    """A JSON integer, within the field's bounds."""

    def value(self, col: Column) -> str:  # noqa: D102
        integer = f"TRY_CAST({col.json} AS BIGINT)"
        return f"CASE WHEN {col.type} IN ('UBIGINT', 'BIGINT') THEN {integer} END"

    def ok(self, col: Column) -> str:  # noqa: D102
        return col.bounds()


@dataclass(frozen=True)
class Number(JsonField):
    """A JSON number (integer or not) as a DOUBLE, within the field's bounds."""

    def value(self, col: Column) -> str:  # noqa: D102
        kinds = "('BIGINT', 'UBIGINT', 'HUGEINT', 'DOUBLE')"
        return f"CASE WHEN {col.type} IN {kinds} THEN CAST({col.json} AS DOUBLE) END"

    def ok(self, col: Column) -> str:  # noqa: D102
        return col.bounds()


@dataclass(frozen=True)
class Choice(JsonField):
    """A JSON string, one of the values of the field's enum or Literal.

    `upper`: compared trimmed and upper-cased (and stored so); `blank_missing`: a blank string
    counts as absent.
    """

    upper: bool = False
    blank_missing: bool = False

    def value(self, col: Column) -> str:  # noqa: D102
        text = f"json_text({col.json})"
        text = f"upper(trim({text}))" if self.upper else text
        return f"CASE WHEN {col.type} = 'VARCHAR' THEN {text} END"

    def ok(self, col: Column) -> str:  # noqa: D102
        values = ", ".join(sql_literal(v) for v in _choices(col.info.annotation))
        return f"{col.value} IN ({values})"

    def absent_when(self, col: Column) -> str | None:  # noqa: D102
        if not self.blank_missing:
            return None
        return f"{col.type} = 'VARCHAR' AND is_blank({col.value})"


@dataclass(frozen=True)
class UnixOrIsoSeconds(JsonField):
    """Unix seconds in [`lower`, `upper`).

    A JSON number, or an ISO-8601 string (read as UTC unless it matches `offset_pattern`).
    """

    upper: float
    offset_pattern: str
    lower: float = 0.0

    def value(self, col: Column) -> str:  # noqa: D102
        text = f"json_value_text({col.json})"
        return (
            f"CASE WHEN {col.type} IN ('UBIGINT', 'BIGINT', 'DOUBLE') "
            f"THEN TRY_CAST({text} AS DOUBLE) "
            f"WHEN {col.type} = 'VARCHAR' AND regexp_matches({text}, "
            f"{sql_literal(self.offset_pattern)}) THEN epoch(TRY_CAST({text} AS TIMESTAMPTZ)) "
            f"WHEN {col.type} = 'VARCHAR' THEN epoch(TRY_CAST({text} AS TIMESTAMP)) END"
        )

    def ok(self, col: Column) -> str:  # noqa: D102
        v = col.value
        low = "0" if self.lower == 0 else sql_literal(self.lower)
        return f"isfinite({v}) AND {v} >= {low} AND {v} < {sql_literal(self.upper)}"


@dataclass(frozen=True)
class IsoSeconds(JsonField):
    """An ISO-8601 string matching `pattern` (UTC unless it matches `offset_pattern`).

    The value is its unix seconds; bronze keeps the text as written.
    """

    pattern: str
    offset_pattern: str

    def value(self, col: Column) -> str:  # noqa: D102
        text = self.output(col)
        utc = (
            f"CASE WHEN regexp_matches({text}, {sql_literal(self.offset_pattern)}) THEN {text} "
            f"ELSE {text} || '+00:00' END"
        )
        return (
            f"CASE WHEN regexp_matches({text}, {sql_literal(self.pattern)}) "
            f"THEN epoch(try_cast({utc} AS TIMESTAMPTZ)) END"
        )

    def ok(self, col: Column) -> str:  # noqa: D102
        return f"{col.value} IS NOT NULL"

    def output(self, col: Column) -> str:  # noqa: D102
        return f"CASE WHEN {col.type} = 'VARCHAR' THEN json_text({col.json}) END"


@dataclass(frozen=True)
class Object(JsonField):
    """A JSON object, kept as its JSON text."""

    holds_objects = True

    def value(self, col: Column) -> str:  # noqa: D102
        return f"CASE WHEN {col.type} = 'OBJECT' THEN {col.json} END"

    def ok(self, col: Column) -> str:  # noqa: D102
        return f"{col.type} = 'OBJECT'"


@dataclass(frozen=True)
class JsonText(JsonField):
    """Any JSON value, kept as written (a string's text, else its JSON text); never invalid."""

    holds_objects = True

    def value(self, col: Column) -> str:  # noqa: D102
        return col.text

    def ok(self, col: Column) -> None:  # noqa: D102
        return None


@dataclass(frozen=True)
class TextList(JsonField):
    """A JSON array of strings, or a single string (one item).

    Items are stored trimmed and blank ones dropped; absent or null is the empty list.
    """

    def value(self, col: Column) -> str:  # noqa: D102
        return (
            f"CASE WHEN {col.type} = 'VARCHAR' THEN [trim(json_text({col.json}))] "
            f"WHEN {col.type} = 'ARRAY' THEN list_transform("
            f"json_extract_string({col.json}, '$[*]'), lambda h: trim(h)) ELSE [] END"
        )

    def ok(self, col: Column) -> str:  # noqa: D102
        items = f"json_type({col.json}, '$[*]')"
        every = f"list_bool_and(list_transform({items}, lambda t: t = 'VARCHAR'))"
        return f"{col.type} = 'VARCHAR' OR ({col.type} = 'ARRAY' AND coalesce({every}, true))"

    def output(self, col: Column) -> str:  # noqa: D102
        return f"list_filter({col.value}, lambda h: h <> '')"


def _choices(annotation: object) -> list[str]:
    """Return the values of an enum or Literal annotation (or of an Optional one)."""
    values = _values(annotation)
    if not values:
        raise TypeError(f"a Choice field needs an enum or Literal annotation, not {annotation}")
    return values


def _values(annotation: object) -> list[str]:
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [member.value for member in annotation]
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return [v for arg in typing.get_args(annotation) for v in _values(arg)]
