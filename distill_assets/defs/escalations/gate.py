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
NOT_AN_ANSWER = "not_an_answer"


def gate_reason(export_format: str | None = None) -> pl.Expr:
    """Return the first reason (rules: export gate) the example leaves every export, or null.

    A reply the answer-ness model rejects leaves as `not_an_answer:<kind>` (its
    `answer_rejection`); a reviewer's approval (`human_reviewed` 1) overturns that and the other
    junk flags, never a refusal or the quality minimum. The minimum is exclusive: a score must be
    above `INSTRUCTION_MIN_QUALITY`. With `export_format`, an unapproved example of a format in
    `APPROVAL_REQUIRED_FORMATS` is held back as `needs_approval`.
    """
    flags = pl.col("quality_flags")
    approved = pl.col("human_reviewed") == 1
    reasons = [(pl.col("human_reviewed") == -1, pl.lit(REJECTED))]
    for flag in rules.EXPORT_EXCLUDED_FLAGS:
        flagged = flags.list.contains(flag)
        if flag in rules.REVIEWABLE_FLAGS:
            flagged = flagged & ~approved
        reason = pl.lit(f"flag_{flag}")
        if flag == NOT_AN_ANSWER:
            reason = pl.coalesce(
                pl.format("{}:{}", pl.lit(NOT_AN_ANSWER), pl.col("answer_rejection")), reason
            )
        reasons.append((flagged, reason))
    reasons.append(
        (pl.col("quality_score") <= rules.INSTRUCTION_MIN_QUALITY, pl.lit(BELOW_MIN_QUALITY))
    )
    if export_format in rules.APPROVAL_REQUIRED_FORMATS:
        reasons.append((~approved, pl.lit(NEEDS_APPROVAL)))
    (condition, reason), *rest = reasons
    chain = pl.when(condition).then(reason)
    for condition, reason in rest:
        chain = chain.when(condition).then(reason)
    return chain.otherwise(pl.lit(None, dtype=pl.String))


def training_ready() -> pl.Expr:
    """1 when the example passes the gate (so at least the instruction export takes it), else 0."""
    return gate_reason().is_null().cast(pl.Int64)
