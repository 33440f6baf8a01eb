r"""Which lines the independent scan's detectors need to see: a vectorized candidate prefilter.

The scan's detectors (`scan.py`: the `detect-secrets` plugins, the PII validators, `phonenumbers`)
run in Python, one line at a time. Most lines of a release hold nothing any of them can find, so a
line reaches them only when a *relaxation* of their own patterns matches it, evaluated in Polars
(Rust `regex`) over all distinct lines at once:

- each detector pattern with its zero-width assertions removed (lookarounds, `\b`, `^`, `$`, ...),
  which can only widen what it matches, and the classes where Python's and Rust's Unicode
  definitions differ widened to both (`\w` also takes every number, `\s` the information
  separators, `\W` the marks), so the relaxation matches every line the original matches;
- the `KeywordDetector`, which has no pattern list of its own: its keywords;
- phone numbers (`phone_patterns`): enough digits for a valid number, joined only by the
  punctuation `phonenumbers`' matcher allows;
- for the PII validators, which read the decoded line (`scan.decoded`), any line holding a URL
  escape, an HTML entity or `\u0040` is a candidate whatever else it holds.

A detector class with no pattern the prefilter can relax makes every line a candidate for its
group (never a miss); `UNRELAXED_PLUGINS` lists them and a test keeps it empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import phonenumbers
import polars as pl
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.keyword import DENYLIST
from phonenumbers.phonenumberutil import _PLUS_CHARS, _VALID_PUNCTUATION

# zero-width assertions outside a class: dropping them only widens a pattern
_ASSERTION_ESCAPES = frozenset("bBAZ")
_LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")
# Python class escapes whose Unicode meaning is wider than Rust's, and the Rust class covering both
_WIDENED = {"w": r"\w\p{N}", "s": r"\s\x{1C}-\x{1F}", "W": r"\W\p{M}"}
ENCODED = r"%[0-9A-Fa-f]{2}|&#?[A-Za-z0-9]+;?|\\u0040"
MATCH_ALL = ""


def _skip_comment(pattern: str, at: int) -> int:
    end = pattern.find("\n", at)
    return len(pattern) if end < 0 else end


def _class_end(pattern: str, at: int) -> int:
    """Return the index just past the character class opening at `at`."""
    index = at + 1
    if pattern.startswith("^", index):
        index += 1
    if pattern.startswith("]", index):
        index += 1
    while index < len(pattern) and pattern[index] != "]":
        index += 2 if pattern[index] == "\\" else 1
    return index + 1


def _group_end(pattern: str, at: int, verbose: bool) -> int:
    """Return the index just past the group opening at `at` (classes, escapes, comments skipped)."""
    depth, index = 0, at
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "[":
            index = _class_end(pattern, index)
            continue
        if verbose and char == "#":
            index = _skip_comment(pattern, index)
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        index += 1
        if depth == 0:
            return index
    raise ValueError(f"unbalanced group in pattern {pattern!r}")


def _widen_class(body: str) -> str:
    r"""Widen `\w`, `\s`, `\W` in a class; a negated class keeps `\s` (Rust's is narrower).

    A negated class with `\w` or `\W` has no simple relaxation and is refused.
    """
    negated = body.startswith("[^")
    out, index = [], 0
    while index < len(body):
        if body[index] == "\\" and index + 1 < len(body):
            escape = body[index + 1]
            if negated and escape in "wW":
                raise ValueError(f"no relaxation for the negated class {body!r}")
            widened = None if negated else _WIDENED.get(escape)
            out.append(widened or body[index : index + 2])
            index += 2
            continue
        out.append(body[index])
        index += 1
    return "".join(out)


def relaxed(pattern: str, *, verbose: bool = False) -> str:
    """Return `pattern` (Python `re` syntax) relaxed for Rust `regex`: see the module docstring."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escape = pattern[index + 1]
            if escape in _WIDENED:
                out.append(f"[{_WIDENED[escape]}]")
            elif escape not in _ASSERTION_ESCAPES:
                out.append(pattern[index : index + 2])
            index += 2
        elif char == "[":
            end = _class_end(pattern, index)
            out.append(_widen_class(pattern[index:end]))
            index = end
        elif verbose and char == "#":
            index = _skip_comment(pattern, index)
        elif pattern.startswith("(?#", index):
            index = pattern.index(")", index) + 1
        elif pattern.startswith(_LOOKAROUNDS, index):
            index = _group_end(pattern, index, verbose)
        elif char in "^$":
            index += 1
        else:
            out.append(char)
            index += 1
    return "".join(out)


def rust_pattern(compiled: re.Pattern[str]) -> str:
    """Return the relaxation of a compiled Python pattern, its flags as Rust inline flags."""
    flags = "".join(
        letter
        for flag, letter in ((re.IGNORECASE, "i"), (re.VERBOSE, "x"), (re.DOTALL, "s"))
        if compiled.flags & flag
    )
    body = relaxed(compiled.pattern, verbose=bool(compiled.flags & re.VERBOSE))
    return f"(?{flags}){body}" if flags else body


def possible_lengths(metadata: phonenumbers.PhoneMetadata) -> list[int]:
    """Return every length a number of the region can have: any type, local-only ones too."""
    descs = [d for d in vars(metadata).values() if isinstance(d, phonenumbers.PhoneNumberDesc)]
    return [
        n
        for desc in descs
        for n in (*(desc.possible_length or ()), *(desc.possible_length_local_only or ()))
        if n > 0
    ]


def min_phone_digits() -> int:
    """Return the fewest digits a valid phone number can have (country code + shortest number)."""
    regions = [
        phonenumbers.PhoneMetadata.metadata_for_region(r) for r in phonenumbers.SUPPORTED_REGIONS
    ]
    regions += [
        phonenumbers.PhoneMetadata.metadata_for_nongeo_region(code)
        for code in phonenumbers.COUNTRY_CODES_FOR_NON_GEO_REGIONS
    ]
    return min(
        len(str(metadata.country_code)) + min(lengths)
        for metadata in regions
        if (lengths := possible_lengths(metadata))
    )


def phone_patterns(region: str) -> list[str]:
    """Return Rust patterns a line holding a valid phone number of `region`'s reading must match.

    The matcher's candidates are digit blocks joined by at most four punctuation characters. A
    number with a plus sign (at most six lead or punctuation characters before its first digit)
    has `min_phone_digits()` digits or more; one without is either dialled with the region's
    international prefix (the prefix's digits more) or a national number of the region.
    """
    joiners = _VALID_PUNCTUATION + _PLUS_CHARS + "([（［"
    punctuation = "".join(f"\\x{{{ord(c):X}}}" for c in _VALID_PUNCTUATION)
    lead = "".join(f"\\x{{{ord(c):X}}}" for c in joiners)
    plus = "".join(f"\\x{{{ord(c):X}}}" for c in _PLUS_CHARS)
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    prefix = metadata.international_prefix or ""
    prefix_digits = len(prefix) if prefix.isdigit() else 1
    national = min(possible_lengths(metadata))
    without_plus = min(prefix_digits + min_phone_digits(), national)

    def digits(count: int) -> str:
        return rf"\d(?:[{punctuation}]{{0,4}}\d){{{count - 1}}}"

    return [f"[{plus}][{lead}]{{0,6}}{digits(min_phone_digits())}", digits(without_plus)]


def secret_plugin_patterns(excluded: Iterable[str]) -> tuple[list[str], list[str]]:
    """Return (Rust patterns of the enabled detect-secrets plugins, plugins with no pattern)."""
    patterns, unrelaxed = [], []
    for cls in get_mapping_from_secret_type_to_class().values():
        name = cls.__name__
        if name in excluded:
            continue
        denylist = getattr(cls, "denylist", None)
        if name == "KeywordDetector":
            patterns.append("(?i)(?:" + "|".join(DENYLIST) + ")")
        elif isinstance(denylist, list | tuple) and denylist:
            patterns.extend(rust_pattern(compiled) for compiled in denylist)
        else:
            unrelaxed.append(name)
    return patterns, unrelaxed


def any_match(column: str, patterns: Iterable[str]) -> pl.Expr:
    """Return whether `column` matches any of `patterns` (one vectorized pass each)."""
    checks = [pl.col(column).str.contains(pattern) for pattern in patterns]
    return pl.any_horizontal(checks) if checks else pl.lit(False)
