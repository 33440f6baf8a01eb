"""Scrub secrets and personal data from every published text field.

The redaction rules, their order and their placeholders are `distill_assets.rules.curation`.
Everything is one lazy Polars plan: per rule, count the matches in each row (all text leaves of
all columns), then replace them. The per-row counts are kept as `redacted_<kind>` columns so the
caller can total them without a second pass.

Two rule options need more than one regex replacement, still without per-row Python:
- `keep`: matches of the keep pattern get a private-use marker (U+E000) between its head and tail,
  so the rule's pattern cannot match them; the marker is removed after the rule (a U+E000 already
  in the input is removed with it);
- `check="luhn"` / `check="iban"`: the distinct matches of the pattern over all texts are
  collected first (one extra pass), the check of each is computed with one expression per
  character position (the Luhn sum; the country's IBAN length and the ISO 13616 mod-97
  remainder), and those that pass (and are not a published test card number) are replaced as
  literal strings (Aho-Corasick), so the check runs once per distinct candidate, never per row.
  A valid number is also replaced where it appears inside a longer run (over-redaction, never a
  leak).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import polars as pl

from distill_assets.lib.text import (
    StringFn,
    map_text,
    sum_columns,
    text_columns,
    text_leaves,
)
from distill_assets.rules.curation import (
    IBAN_LENGTHS,
    REDACTIONS,
    TEST_CARD_NUMBERS,
    UNSCRUBBED_COLUMNS,
    Redaction,
)

REDACTED_PREFIX = "redacted_"
PROTECT_MARKER = "\ue000"
_LUHN_MAX_DIGITS = 19
_IBAN_MAX_CHARS = 34


def scrubbed_columns(schema: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """Return the scrubbed columns of a published schema: every text field but id and source."""
    return text_columns(schema, UNSCRUBBED_COLUMNS)


def redaction_column(kind: str) -> str:
    """Return the name of the per-row count column of one redaction kind."""
    return f"{REDACTED_PREFIX}{kind}"


def luhn_valid(candidate: pl.Expr) -> pl.Expr:
    """Return whether each string's digits (separators ignored) pass the Luhn check."""
    digits = candidate.str.replace_all(r"\D", "")
    total = pl.lit(0, dtype=pl.Int64)
    for position in range(_LUHN_MAX_DIGITS):
        digit = (
            digits.str.slice(-(position + 1), 1)
            .str.to_integer(strict=False)
            .cast(pl.Int64)
            .fill_null(0)
        )
        if position % 2:
            digit = pl.when(digit * 2 > 9).then(digit * 2 - 9).otherwise(digit * 2)
        total = total + pl.when(pl.lit(position) < digits.str.len_chars()).then(digit).otherwise(0)
    return (total % 10 == 0) & ~digits.is_in(list(TEST_CARD_NUMBERS))


def iban_valid(candidate: pl.Expr) -> pl.Expr:
    """Return whether each string (separators ignored, any case) is an IBAN.

    It must have its country's length (`IBAN_LENGTHS`) and, with the first four characters
    moved to the end and letters read as 10-35, leave remainder 1 modulo 97 (ISO 13616).
    """
    compact = candidate.str.replace_all(r"[ .-]", "").str.to_uppercase()
    length = compact.str.len_chars()
    expected = compact.str.slice(0, 2).replace_strict(
        IBAN_LENGTHS, default=0, return_dtype=pl.UInt32
    )
    # leading zeros leave the remainder unchanged: padding makes every position a character,
    # so each step refers to the previous remainder once (the expression grows linearly)
    moved = (compact.str.slice(4) + compact.str.slice(0, 4)).str.pad_start(_IBAN_MAX_CHARS, "0")
    remainder = pl.lit(0, dtype=pl.Int64)
    for position in range(_IBAN_MAX_CHARS):
        code = moved.str.slice(position, 1).str.encode("hex").str.to_integer(base=16, strict=False)
        value = pl.when(code < ord("A")).then(code - ord("0")).otherwise(code - ord("A") + 10)
        remainder = (remainder * pl.when(value > 9).then(100).otherwise(10) + value) % 97
    return (length == expected) & (remainder == 1)


CHECKS = {"luhn": luhn_valid, "iban": iban_valid}


def checked_candidates(
    frame: pl.LazyFrame, columns: Mapping[str, pl.DataType], redaction: Redaction
) -> list[str]:
    """Return the distinct matches of a checked rule in `columns` that pass its check."""
    if not columns:
        return []
    leaves = pl.concat_list([text_leaves(pl.col(n), dtype) for n, dtype in columns.items()])
    found = (
        frame.select(leaves.alias("text"))
        .explode("text")
        .select(pl.col("text").str.extract_all(redaction.pattern).alias("candidate"))
        .explode("candidate")
        .drop_nulls()
        .unique()
        .filter(CHECKS[redaction.check](pl.col("candidate")))
        .collect(engine="streaming")
    )
    return sorted(found.get_column("candidate").to_list())


def _counter(redaction: Redaction, found: Sequence[str] = ()) -> StringFn:
    if redaction.check:
        return lambda text: text.str.extract_many(list(found)).list.len()
    return lambda text: text.str.count_matches(redaction.pattern)


def _replacer(redaction: Redaction, found: Sequence[str] = ()) -> StringFn:
    if redaction.check:
        return lambda text: text.str.replace_many(list(found), [redaction.replacement] * len(found))
    return lambda text: text.str.replace_all(redaction.pattern, redaction.replacement)


def _matcher(redaction: Redaction, found: Sequence[str] = ()) -> StringFn:
    if redaction.check:
        return lambda text: text.str.contains_any(list(found))
    if redaction.keep:
        return lambda text: _protect(redaction)(text).str.contains(redaction.pattern)
    return lambda text: text.str.contains(redaction.pattern)


def _protect(redaction: Redaction) -> StringFn:
    return lambda text: text.str.replace_all(redaction.keep, f"${{1}}${{2}}{PROTECT_MARKER}${{3}}")


def _unprotect(text: pl.Expr) -> pl.Expr:
    return text.str.replace_all(PROTECT_MARKER, "", literal=True)


def _map_columns(
    frame: pl.LazyFrame, columns: Mapping[str, pl.DataType], fn: StringFn
) -> pl.LazyFrame:
    return frame.with_columns(
        map_text(pl.col(name), dtype, fn).alias(name) for name, dtype in columns.items()
    )


def scrub(
    frame: pl.LazyFrame,
    columns: Mapping[str, pl.DataType],
    redactions: Sequence[Redaction] = REDACTIONS,
    found: Mapping[str, Sequence[str]] | None = None,
) -> pl.LazyFrame:
    """Redact `columns` of `frame` rule by rule; add a `redacted_<kind>` match count per rule.

    `found` holds, per checked rule, the valid matches to replace (`scrub_candidates`); without
    it they are collected from `frame` itself. A frame scrubbed in slices gets the candidates of
    all its rows, so every slice is scrubbed as the whole frame would be (a valid number of one
    row is also replaced inside a longer run of another).
    """
    return _scrubbed(frame, columns, redactions, found)[0]


def scrub_candidates(
    frame: pl.LazyFrame | Sequence[pl.LazyFrame],
    columns: Mapping[str, pl.DataType],
    redactions: Sequence[Redaction] = REDACTIONS,
) -> dict[str, list[str]]:
    """Return, per checked rule, the distinct valid matches `scrub` replaces in `frame`.

    `frame` may be several frames (slices of one): their candidates together, as those of their
    concatenation. Each rule's are collected as the rules before it left the text (with the
    candidates of all frames of the checked rules before it), one pass per checked rule and
    frame; only the candidates are held, never the text.
    """
    frames = [frame] if isinstance(frame, pl.LazyFrame) else list(frame)
    found: dict[str, list[str]] = {}
    for index, redaction in enumerate(redactions):
        if redaction.check:
            found[redaction.kind] = rule_candidates(frames, columns, index, found, redactions)
    return found


def rule_candidates(
    frames: Sequence[pl.LazyFrame],
    columns: Mapping[str, pl.DataType],
    index: int,
    found: Mapping[str, Sequence[str]],
    redactions: Sequence[Redaction] = REDACTIONS,
) -> list[str]:
    """Return the distinct valid matches of the checked rule `redactions[index]` in `frames`.

    Collected on the text as the rules before it leave it, the checked ones among them
    replacing their candidates `found` (of the whole day, not only of `frames`): one pass per
    frame. The candidates of frames together are the union of each frame's, so the rule's
    candidates of a day are the union of any of its pieces' with the same `found`.
    """
    hits: set[str] = set()
    for part in frames:
        scrubbed = _scrubbed(part, columns, redactions[:index], found)[0]
        hits.update(checked_candidates(scrubbed, columns, redactions[index]))
    return sorted(hits)


def _scrubbed(
    frame: pl.LazyFrame,
    columns: Mapping[str, pl.DataType],
    redactions: Sequence[Redaction],
    found: Mapping[str, Sequence[str]] | None,
) -> tuple[pl.LazyFrame, dict[str, list[str]]]:
    """Return the scrubbed plan of `frame` and the checked rules' candidates it replaces."""
    candidates: dict[str, list[str]] = {}
    for redaction in redactions:
        count = redaction_column(redaction.kind)
        frame = frame.with_columns(pl.lit(0, dtype=pl.Int64).alias(count))
        if redaction.check:
            candidates[redaction.kind] = (
                list(found.get(redaction.kind, ()))
                if found is not None
                else checked_candidates(frame, columns, redaction)
            )
        hits = candidates.get(redaction.kind, [])
        if redaction.check and not hits:
            continue
        if redaction.keep:
            frame = _map_columns(frame, columns, _protect(redaction))
        for _ in range(redaction.passes):
            frame = frame.with_columns(
                (pl.col(count) + sum_columns(columns, _counter(redaction, hits))).alias(count)
            )
            frame = _map_columns(frame, columns, _replacer(redaction, hits))
        if redaction.keep:
            frame = _map_columns(frame, columns, _unprotect)
    return frame, candidates


def leak_counts(
    frame: pl.LazyFrame | pl.DataFrame,
    columns: Mapping[str, pl.DataType],
    redactions: Sequence[Redaction] = REDACTIONS,
) -> dict[str, int]:
    """Return, per redaction kind, how many rows of `frame` still hold a match in `columns`."""
    lazy = frame.lazy()
    found = {r.kind: checked_candidates(lazy, columns, r) for r in redactions if r.check}
    counts = lazy.select(
        (
            pl.lit(0)
            if r.check and not found[r.kind]
            else (sum_columns(columns, _matcher(r, found.get(r.kind, ()))) > 0).sum()
        ).alias(r.kind)
        for r in redactions
    ).collect()
    return {kind: int(counts.get_column(kind).item() or 0) for kind in counts.columns}


def placeholders() -> list[str]:
    """Return the distinct placeholders of `REDACTIONS` without brackets, in rule order."""
    found = (re.search(r"\[(REDACTED_\w+)\]", r.replacement) for r in REDACTIONS)
    return list(dict.fromkeys(m.group(1) for m in found if m))


def placeholder_counts(
    frame: pl.LazyFrame | pl.DataFrame, columns: Mapping[str, pl.DataType]
) -> dict[str, int]:
    """Return, per placeholder, how many times it occurs in `columns` (zero counts left out)."""
    counts = (
        frame.lazy()
        .select(
            sum_columns(
                columns, lambda text, p=name: text.str.count_matches(f"[{p}]", literal=True)
            )
            .sum()
            .alias(name)
            for name in placeholders()
        )
        .collect()
    )
    return {
        name: int(counts.get_column(name).item() or 0)
        for name in counts.columns
        if counts.get_column(name).item()
    }
