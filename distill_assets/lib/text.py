"""Apply a string expression to every text leaf of a column, however deeply it is nested.

Published configs hold text at several depths: plain strings (`prompt`), strings in lists
(`thought_process`), strings in lists of structs (`messages[].content`). These helpers build one
vectorized Polars expression per column that reaches all of them, so scrubbing, dedup keys and
leak checks stay generic over whatever `CORE_SCHEMAS` holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import polars as pl

StringFn = Callable[[pl.Expr], pl.Expr]


def has_text(dtype: pl.DataType) -> bool:
    """Return whether `dtype` is a string or contains one."""
    if dtype == pl.String:
        return True
    if isinstance(dtype, pl.List):
        return has_text(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return any(has_text(field.dtype) for field in dtype.fields)
    return False


def text_columns(
    schema: Mapping[str, pl.DataType], exclude: frozenset[str]
) -> dict[str, pl.DataType]:
    """Return the columns of `schema` holding text, minus `exclude`, in schema order."""
    return {
        name: dtype for name, dtype in schema.items() if name not in exclude and has_text(dtype)
    }


def map_text(expr: pl.Expr, dtype: pl.DataType, fn: StringFn) -> pl.Expr:
    """Return `expr` with `fn` applied to every string inside it (other values unchanged)."""
    if dtype == pl.String:
        return fn(expr)
    if isinstance(dtype, pl.List) and has_text(dtype.inner):
        return expr.list.eval(map_text(pl.element(), dtype.inner, fn))
    if isinstance(dtype, pl.Struct):
        fields = [
            map_text(pl.field(field.name), field.dtype, fn).alias(field.name)
            for field in dtype.fields
            if has_text(field.dtype)
        ]
        return expr.struct.with_fields(fields) if fields else expr
    return expr


def sum_text(expr: pl.Expr, dtype: pl.DataType, fn: StringFn) -> pl.Expr:
    """Return, per row, the sum of the integer `fn(string)` over every string inside `expr`.

    Null strings, lists and structs count 0.
    """
    if dtype == pl.String:
        return fn(expr).cast(pl.Int64).fill_null(0)
    if isinstance(dtype, pl.List) and has_text(dtype.inner):
        return expr.list.eval(sum_text(pl.element(), dtype.inner, fn)).list.sum().fill_null(0)
    if isinstance(dtype, pl.Struct) and has_text(dtype):
        return pl.sum_horizontal(
            sum_text(expr.struct.field(field.name), field.dtype, fn)
            for field in dtype.fields
            if has_text(field.dtype)
        ).fill_null(0)
    return pl.lit(0, dtype=pl.Int64)


def sum_columns(columns: Mapping[str, pl.DataType], fn: StringFn) -> pl.Expr:
    """Return, per row, the sum of `fn(string)` over every string of every column in `columns`."""
    if not columns:
        return pl.lit(0, dtype=pl.Int64)
    return pl.sum_horizontal(sum_text(pl.col(name), dtype, fn) for name, dtype in columns.items())


def joined_text(
    expr: pl.Expr,
    dtype: pl.DataType,
    skipped_roles: tuple[str, ...] = (),
    skipped_fields: frozenset[str] = frozenset(),
) -> pl.Expr:
    """Return every string inside `expr` joined by newlines (nulls are empty), one per row.

    Struct fields named in `skipped_fields` are left out, and so are list elements that are
    structs with a `role` field whose value is in `skipped_roles` (e.g. system prompts shared by
    every row of a source).
    """
    if dtype == pl.String:
        return expr.fill_null("")
    if isinstance(dtype, pl.List) and has_text(dtype.inner):
        element = pl.element()
        inner = dtype.inner
        if (
            skipped_roles
            and isinstance(inner, pl.Struct)
            and any(f.name == "role" for f in inner.fields)
        ):
            element = element.filter(
                ~element.struct.field("role").fill_null("").is_in(list(skipped_roles))
            )
        return (
            expr.list.eval(joined_text(element, inner, skipped_roles, skipped_fields))
            .list.join("\n")
            .fill_null("")
        )
    if isinstance(dtype, pl.Struct):
        fields = [f for f in dtype.fields if has_text(f.dtype) and f.name not in skipped_fields]
        if fields:
            return pl.concat_str(
                [
                    joined_text(expr.struct.field(f.name), f.dtype, skipped_roles, skipped_fields)
                    for f in fields
                ],
                separator="\n",
            )
    return pl.lit("")


def core_text(
    columns: Mapping[str, pl.DataType],
    skipped_roles: tuple[str, ...] = (),
    skipped_fields: frozenset[str] = frozenset(),
) -> pl.Expr:
    """Return the strings of `columns` (in order, minus `skipped_fields`) joined, one per row."""
    kept = {n: d for n, d in columns.items() if n not in skipped_fields and has_text(d)}
    if not kept:
        return pl.lit("")
    return pl.concat_str(
        [joined_text(pl.col(n), d, skipped_roles, skipped_fields) for n, d in kept.items()],
        separator="\n",
    )


def text_leaves(expr: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """Return every string inside `expr` as one flat list of strings per row.

    A null list or struct anywhere counts as no strings, so it never hides its siblings.
    """
    if dtype == pl.String:
        return pl.concat_list([expr])
    if isinstance(dtype, pl.List):
        if dtype.inner == pl.String:
            return _or_empty(expr)
        return _or_empty(expr.list.eval(text_leaves(pl.element(), dtype.inner).explode()))
    if isinstance(dtype, pl.Struct):
        return pl.concat_list(
            [_or_empty(text_leaves(expr.struct.field(f.name), f.dtype)) for f in dtype.fields]
        )
    return pl.lit([], dtype=pl.List(pl.String()))


def _or_empty(leaves: pl.Expr) -> pl.Expr:
    return leaves.fill_null(pl.lit([], dtype=pl.List(pl.String())))
