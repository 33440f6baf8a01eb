"""Rules for revision pairs (docs/sources/revisions.md#pairs), as Polars expressions.

A turn yields a preference pair when its loop ends in APPROVE after at least one REVISE
(`revision_count > 0`) and the REVISE verdicts left non-empty hints (the three trigger
conditions). Turns that do not qualify are kept with one of `UNPAIRED_REASONS`, tested in that
order (the first that applies wins):

- `incomplete_turn`: the iterations up to the loop's end are not exactly 1, 2, …, n in this
  partition (a line was quarantined, or the turn started on an earlier ingest date);
- `revise_without_approve`: only REVISE verdicts, the loop never ended (in this partition);
- `failed`: the loop ended in FAIL;
- `approved_without_revision`: the first APPROVE came before any REVISE;
- `missing_query`: no iteration logged the query, so the pair would have no prompt;
- `empty_revision_hints`: REVISE → APPROVE but no REVISE verdict gave a hint (seed trigger 3);
- `unchanged_response`: the approved response equals the original one (after `normalized_text`),
  so there is no preference to learn.

`quality_score` is a deterministic heuristic in [0, 1], the weighted sum of three components:
- `hint_specificity`: mean words per hint / `HINT_WORDS_FOR_FULL_SPECIFICITY` (capped at 1):
  "Use a table with Product, Price and Retailer columns" says what good looks like; "improve" does
  not, and a pair whose hints are vague teaches a vaguer preference;
- `revision_economy`: 1 for one revision, minus `REVISION_PENALTY` per further revision (at least
  `MIN_REVISION_ECONOMY`): after many rounds the original is far from the approved answer and the
  pair mixes several fixes;
- `length_balance`: 1 when chosen and rejected have the same length, falling linearly with
  |log(len chosen / len rejected)| to 0 at a ratio of `LENGTH_RATIO_FOR_ZERO_BALANCE`, which keeps
  pairs that mostly teach "be longer" (DPO's verbosity bias) low in the ranking.
"""

from __future__ import annotations

import math

import polars as pl

UNPAIRED_REASONS: tuple[str, ...] = (
    "incomplete_turn",
    "revise_without_approve",
    "failed",
    "approved_without_revision",
    "missing_query",
    "empty_revision_hints",
    "unchanged_response",
)
PAIRED = "paired"

HINT_WORDS_FOR_FULL_SPECIFICITY = 8
REVISION_PENALTY = 0.25
MIN_REVISION_ECONOMY = 0.25
LENGTH_RATIO_FOR_ZERO_BALANCE = 4.0
SCORE_WEIGHTS: dict[str, float] = {
    "hint_specificity": 0.4,
    "revision_economy": 0.3,
    "length_balance": 0.3,
}
SCORE_DECIMALS = 4
# Pairs are split by their normalized query, so a query asked in several turns never lands in
# both train and test.
SPLIT_GROUP_PREFIX = "query:"


def normalized_text(text: pl.Expr) -> pl.Expr:
    """Lower-case, collapse whitespace runs to one space, trim (comparisons and split groups)."""
    return text.str.to_lowercase().str.replace_all(r"\s+", " ").str.strip_chars()


def hint_specificity(hints: pl.Expr) -> pl.Expr:
    """Mean words per hint, relative to `HINT_WORDS_FOR_FULL_SPECIFICITY`, in [0, 1]."""
    words = hints.list.eval(pl.element().str.count_matches(r"\S+")).list.sum()
    count = hints.list.len()
    mean = pl.when(count > 0).then(words / count).otherwise(0.0)
    return (mean / HINT_WORDS_FOR_FULL_SPECIFICITY).clip(0.0, 1.0)


def revision_economy(revision_count: pl.Expr) -> pl.Expr:
    """1 for a single revision, `REVISION_PENALTY` less per further one, floored."""
    return (1.0 - (revision_count - 1) * REVISION_PENALTY).clip(MIN_REVISION_ECONOMY, 1.0)


def length_balance(chosen: pl.Expr, rejected: pl.Expr) -> pl.Expr:
    """1 for equal lengths, 0 at a length ratio of `LENGTH_RATIO_FOR_ZERO_BALANCE` or more."""
    ratio = chosen.str.len_chars().clip(1).cast(pl.Float64) / rejected.str.len_chars().clip(1)
    return (1.0 - ratio.log().abs() / math.log(LENGTH_RATIO_FOR_ZERO_BALANCE)).clip(0.0, 1.0)


def score_components(
    hints: pl.Expr, revision_count: pl.Expr, chosen: pl.Expr, rejected: pl.Expr
) -> dict[str, pl.Expr]:
    """Return each named score component (rounded), keyed as in `SCORE_WEIGHTS`."""
    parts = {
        "hint_specificity": hint_specificity(hints),
        "revision_economy": revision_economy(revision_count),
        "length_balance": length_balance(chosen, rejected),
    }
    return {name: expr.round(SCORE_DECIMALS) for name, expr in parts.items()}


def quality_score(components: dict[str, pl.Expr]) -> pl.Expr:
    """Weighted sum of the components, rounded to `SCORE_DECIMALS`."""
    weighted = [components[name] * weight for name, weight in SCORE_WEIGHTS.items()]
    return pl.sum_horizontal(weighted).round(SCORE_DECIMALS)


def unpaired_reason() -> pl.Expr:
    """Why a turn yields no pair (null when it does), over the columns of a turn summary.

    Needs `loop_complete`, `end_decision`, `revision_count`, `query`, `revision_hints`,
    `original`, `approved` (see `defs/revisions/pairing.summarize_turns`); tests the reasons in the
    order of `UNPAIRED_REASONS`.
    """
    return (
        pl.when(~pl.col("loop_complete"))
        .then(pl.lit("incomplete_turn"))
        .when(pl.col("end_decision").is_null())
        .then(pl.lit("revise_without_approve"))
        .when(pl.col("end_decision") == "FAIL")
        .then(pl.lit("failed"))
        .when(pl.col("revision_count") == 0)
        .then(pl.lit("approved_without_revision"))
        .when(pl.col("query").is_null())
        .then(pl.lit("missing_query"))
        .when(pl.col("revision_hints").list.len() == 0)
        .then(pl.lit("empty_revision_hints"))
        .when(normalized_text(pl.col("original")) == normalized_text(pl.col("approved")))
        .then(pl.lit("unchanged_response"))
    )
