"""The export gate of `distillation_examples`: why an example may not be exported (rules: gate).

One ordered list of reasons shared by every export format and by `training_ready`, so a flag or a
rejection removes an example from all four exports at once.
"""

from __future__ import annotations

import polars as pl

from distill_assets.rules import escalations as rules

REJECTED = "rejected"
BELOW_MIN_QUALITY = "below_min_quality"
NEEDS_APPROVAL = "needs_approval"


def gate_reason(export_format: str | None = None) -> pl.Expr:
    """Return the first reason (rules: export gate) the example leaves every export, or null.

    With `export_format`, an unapproved example of a format in `APPROVAL_REQUIRED_FORMATS` is
    held back as `needs_approval`.
    """
    flags = pl.col("quality_flags")
    reasons = [(pl.col("human_reviewed") == -1, REJECTED)]
    reasons += [(flags.list.contains(f), f"flag_{f}") for f in rules.EXPORT_EXCLUDED_FLAGS]
    reasons.append((pl.col("quality_score") < rules.INSTRUCTION_MIN_QUALITY, BELOW_MIN_QUALITY))
    if export_format in rules.APPROVAL_REQUIRED_FORMATS:
        reasons.append((pl.col("human_reviewed") != 1, NEEDS_APPROVAL))
    (condition, reason), *rest = reasons
    chain = pl.when(condition).then(pl.lit(reason))
    for condition, reason in rest:
        chain = chain.when(condition).then(pl.lit(reason))
    return chain.otherwise(pl.lit(None, dtype=pl.String))


def training_ready() -> pl.Expr:
    """1 when the example passes the gate (so at least the instruction export takes it), else 0."""
    return gate_reason().is_null().cast(pl.Int64)
