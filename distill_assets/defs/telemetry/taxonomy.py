"""Data taxonomy: class each telemetry feed row into the seed's five value classes.

See docs/sources/telemetry.md#taxonomy; the rules are `rules/telemetry_taxonomy.py`. Each
product has one classifying expression over its feed columns and metadata JSON; `with_value_class`
adds the class to `metadata` as `value_class`.
"""

from __future__ import annotations

import polars as pl

from distill_assets.rules import telemetry_taxonomy as rules

AMBIGUITY, NOVEL, SOCIAL, LONG_HORIZON, FAILURE = rules.VALUE_CLASSES
# the metadata key of a row's class (counted per config and split in the release card)
VALUE_CLASS_KEY = "value_class"


def _meta(path: str) -> pl.Expr:
    return pl.col("metadata").str.json_path_match(f"$.{path}")


def _innovative(column: pl.Expr) -> pl.Expr:
    return column.str.starts_with(rules.INNOVATION_PREFIX).fill_null(False)


def value_class(table: str) -> pl.Expr:
    """Return the value-class expression of a telemetry feed table's rows (see the rules)."""
    if table == "dialogues":
        return pl.lit(SOCIAL)
    if table == "decision_pairs":
        ambiguous = _meta("ambiguity_score").cast(pl.Float64) > rules.AMBIGUITY_ABOVE
        return (
            pl.when(ambiguous.fill_null(False))
            .then(pl.lit(AMBIGUITY))
            .otherwise(pl.lit(LONG_HORIZON))
        )
    if table == "episode_pairs":
        return pl.lit(FAILURE)
    if table == "episodes":
        failed = (_meta("truncated") == "false") & ~pl.col("success")
        return (
            pl.when(_innovative(pl.col("episode_id")))
            .then(pl.lit(NOVEL))
            .when(failed.fill_null(False))
            .then(pl.lit(FAILURE))
            .otherwise(pl.lit(LONG_HORIZON))
        )
    if table == "reasoning":
        return (
            pl.when(_innovative(_meta("scenario_id")))
            .then(pl.lit(NOVEL))
            .otherwise(pl.lit(LONG_HORIZON))
        )
    raise ValueError(f"no value-class rule for telemetry/{table}")


def decision_value_class(ambiguity: pl.Expr) -> pl.Expr:
    """Return the value class of a paid decision from its ambiguity_score (as its pairs)."""
    return (
        pl.when((ambiguity > rules.AMBIGUITY_ABOVE).fill_null(False))
        .then(pl.lit(AMBIGUITY))
        .otherwise(pl.lit(LONG_HORIZON))
        .alias(VALUE_CLASS_KEY)
    )


def episode_value_class(episode_id: pl.Expr, success: pl.Expr) -> pl.Expr:
    """Return the value class of a paid (ended) episode from its id and success (as its row)."""
    return (
        pl.when(_innovative(episode_id))
        .then(pl.lit(NOVEL))
        .when(success.not_().fill_null(False))
        .then(pl.lit(FAILURE))
        .otherwise(pl.lit(LONG_HORIZON))
        .alias(VALUE_CLASS_KEY)
    )


def with_value_class(rows: pl.DataFrame, table: str) -> pl.DataFrame:
    """Add `value_class` to each row's metadata JSON (the rows' other columns unchanged)."""
    return rows.with_columns(
        (
            pl.col("metadata").str.strip_suffix("}")
            + pl.lit(f',"{VALUE_CLASS_KEY}":"')
            + value_class(table)
            + pl.lit('"}')
        ).alias("metadata")
    )


def class_counts(rows: pl.DataFrame) -> dict[str, int]:
    """Return the rows per value class (every class, zero included), for asset metadata."""
    found = rows.get_column("metadata").str.json_path_match(f"$.{VALUE_CLASS_KEY}").value_counts()
    counts = dict(found.iter_rows())
    return {name: int(counts.get(name, 0)) for name in rules.VALUE_CLASSES}
