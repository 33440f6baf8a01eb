"""Scrub secrets, e-mail addresses and phone numbers from every published text field.

The redaction rules, their order and their placeholders are `distill_assets.rules.curation`.
Everything is one lazy Polars plan: per rule, count the matches in each row (all text leaves of
all columns), then replace them. The per-row counts are kept as `redacted_<kind>` columns so the
caller can total them without a second pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from distill_assets.defs.curation.text import StringFn, map_text, sum_columns, text_columns
from distill_assets.rules.curation import REDACTIONS, UNSCRUBBED_COLUMNS, Redaction

REDACTED_PREFIX = "redacted_"


def scrubbed_columns(schema: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """Return the scrubbed columns of a published schema: every text field but id and source."""
    return text_columns(schema, UNSCRUBBED_COLUMNS)


def redaction_column(kind: str) -> str:
    """Return the name of the per-row count column of one redaction kind."""
    return f"{REDACTED_PREFIX}{kind}"


def _counter(redaction: Redaction) -> StringFn:
    return lambda text: text.str.count_matches(redaction.pattern)


def _replacer(redaction: Redaction) -> StringFn:
    return lambda text: text.str.replace_all(redaction.pattern, redaction.replacement)


def _matcher(redaction: Redaction) -> StringFn:
    return lambda text: text.str.contains(redaction.pattern)


def scrub(
    frame: pl.LazyFrame,
    columns: Mapping[str, pl.DataType],
    redactions: Sequence[Redaction] = REDACTIONS,
) -> pl.LazyFrame:
    """Redact `columns` of `frame` rule by rule; add a `redacted_<kind>` match count per rule."""
    for redaction in redactions:
        frame = frame.with_columns(
            sum_columns(columns, _counter(redaction)).alias(redaction_column(redaction.kind))
        ).with_columns(
            map_text(pl.col(name), dtype, _replacer(redaction)).alias(name)
            for name, dtype in columns.items()
        )
    return frame


def leak_counts(
    frame: pl.LazyFrame | pl.DataFrame,
    columns: Mapping[str, pl.DataType],
    redactions: Sequence[Redaction] = REDACTIONS,
) -> dict[str, int]:
    """Return, per redaction kind, how many rows of `frame` still hold a match in `columns`."""
    lazy = frame.lazy()
    counts = lazy.select(
        (sum_columns(columns, _matcher(redaction)) > 0).sum().alias(redaction.kind)
        for redaction in redactions
    ).collect()
    return {kind: int(counts.get_column(kind).item() or 0) for kind in counts.columns}
