"""The kinds of a contract field read by JSON path, for records too large to read whole.

A contract whose lines are large (traces: an `llm_request` carries the whole chat) has each
field read by path, in one `json_extract` of the line with every path the contract names
(`lib.contract_sql.extract_statement`): a path's value is its compact JSON text, SQL NULL when
absent and `null` when JSON null, and nothing else of the line is copied out. A field carries one
`PathField` kind in its `Annotated` metadata: the paths it reads (relative to the field:
`""` is the field itself, `"t"` its member `t`), its checks (reason, SQL test, SQL detail) and
its value, each over `p(path)`: the SQL of a path's JSON text (`line` is the raw line).
A required field is `missing_<name>` only when absent: JSON null is a value, and not of the
contract.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from distill_assets.lib.json_fields import sql_literal

# (reason, SQL test, SQL detail or None), tested in order
Check = tuple[str, str, str | None]
Path = Callable[[str], str]


class PathField:
    """How a field read by path is checked and valued."""

    def paths(self) -> tuple[str, ...]:
        """Return the paths read, relative to the field (`""`: the field itself)."""
        return ("",)

    def checks(self, name: str, p: Path) -> list[Check]:
        """Return the field's checks in the order they are tested."""
        raise NotImplementedError

    def value(self, name: str, p: Path) -> str | None:
        """Return the SQL of the field's value (read only for an accepted record; None: none)."""
        return p("")


@dataclass(frozen=True)
class PathText(PathField):
    """A JSON string that is not empty; `alias`: another field that may hold it instead.

    Both present and different (as JSON text): `conflicting_<name>`.
    """

    alias: str | None = None

    def paths(self) -> tuple[str, ...]:  # noqa: D102
        return ("",) if self.alias is None else ("", f"../{self.alias}")

    def _any(self, p: Path) -> str:
        return p("") if self.alias is None else f"coalesce({p('')}, {p(f'../{self.alias}')})"

    def checks(self, name: str, p: Path) -> list[Check]:  # noqa: D102
        text = self._any(p)
        absent = f"no {name} field" if self.alias is None else f"no {name} or {self.alias} field"
        found = [
            (f"missing_{name}", f"{text} IS NULL", sql_literal(absent)),
            (
                f"invalid_{name}",
                f"NOT starts_with({text}, '\"') OR {self.value(name, p)} = ''",
                f"'{name} is ' || {text}",
            ),
        ]
        if self.alias is not None:
            own, other = p(""), p(f"../{self.alias}")
            found.append(
                (
                    f"conflicting_{name}",
                    f"{own} IS NOT NULL AND {other} IS NOT NULL AND {own} <> {other}",
                    f"'{name} ' || {own} || ' vs {self.alias} ' || {other}",
                )
            )
        return found

    def value(self, name: str, p: Path) -> str:  # noqa: D102
        return f"json_text({self._any(p)})"


@dataclass(frozen=True)
class PathNumber(PathField):
    """A JSON number (its value a DOUBLE)."""

    def checks(self, name: str, p: Path) -> list[Check]:  # noqa: D102
        text = p("")
        # a value starting with a digit is a number: only the others are typed
        number = (
            f"CASE WHEN left({text}, 1) BETWEEN '0' AND '9' THEN false "
            f"ELSE json_type({text}) NOT IN ('DOUBLE', 'BIGINT', 'UBIGINT') END"
        )
        return [
            (f"missing_{name}", f"{text} IS NULL", sql_literal(f"no {name} field")),
            (f"invalid_{name}", number, f"'{name} is ' || {text}"),
        ]

    def value(self, name: str, p: Path) -> str:  # noqa: D102
        return f"{p('')}::DOUBLE"


@dataclass(frozen=True)
class PathObject(PathField):
    """A JSON object, typed without reading it.

    A record where one of its `members` is present holds an object there (the members are read
    anyway); only the others are typed (one more parse of the line, to the object's type).
    `required`: absent is `missing_<name>`; `nullable`: JSON null is allowed.
    """

    members: tuple[str, ...]
    required: bool = True
    nullable: bool = False

    def paths(self) -> tuple[str, ...]:  # noqa: D102
        return self.members

    def value(self, name: str, p: Path) -> None:  # noqa: D102
        return None

    def type(self, name: str, p: Path) -> str:
        """Return the SQL of the object's JSON type when no member is present (else NULL)."""
        none = " AND ".join(["valid", *(f"{p(m)} IS NULL" for m in self.members)])
        return f"CASE WHEN {none} THEN json_type(line, {sql_literal(f'$.{name}')}) END"

    def checks(self, name: str, p: Path) -> list[Check]:  # noqa: D102
        kind = f'"{name}_type"'
        accepted = "('OBJECT', 'NULL')" if self.nullable else "('OBJECT')"
        found = [(f"invalid_{name}", f"{kind} NOT IN {accepted}", f"'{name} is ' || lower({kind})")]
        if self.required:
            missing = " AND ".join([*(f"{p(m)} IS NULL" for m in self.members), f"{kind} IS NULL"])
            found.insert(0, (f"missing_{name}", missing, sql_literal(f"no {name} field")))
        return found


@dataclass(frozen=True)
class PathInteger(PathField):
    """A JSON integer (up to 18 digits read off the text; others typed).

    `reason`: its code; `detail`: its SQL (`{key}`: the SQL of the union's key value).
    """

    reason: str
    detail: str | None = None

    def checks(self, name: str, p: Path) -> list[Check]:  # noqa: D102
        text = p("")
        test = (
            f"CASE WHEN regexp_full_match({text}, '[0-9]{{1,18}}') THEN false "
            f"ELSE coalesce(json_type({text}), '') NOT IN ('BIGINT', 'UBIGINT') END"
        )
        return [(self.reason, test, self.detail)]

    def value(self, name: str, p: Path) -> str:  # noqa: D102
        return f"{p('')}::BIGINT"


@dataclass(frozen=True)
class PathFirstHas(PathField):
    """A non-empty JSON array whose first item has the member `member`.

    `reason`: its code; `detail`: its SQL.
    """

    member: str
    reason: str
    detail: str | None = None

    def paths(self) -> tuple[str, ...]:  # noqa: D102
        return (f"[0].{self.member}",)

    def checks(self, name: str, p: Path) -> list[Check]:  # noqa: D102
        return [(self.reason, f"{p(f'[0].{self.member}')} IS NULL", self.detail)]
