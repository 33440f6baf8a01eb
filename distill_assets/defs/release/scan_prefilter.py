r"""Which lines the independent scan's detectors need to see: a vectorized candidate prefilter.

The scan's detectors (`scan.py`: the `detect-secrets` plugins, the PII validators, `phonenumbers`)
run in Python, one line at a time. Most lines of a release hold nothing any of them can find, so a
line reaches them only when a *relaxation* of their own patterns matches it, evaluated in Polars
(Rust `regex`) over all distinct lines at once; every relaxation matches every line the detector
can find something in (tests pin it on a labelled corpus and on planted lines):

- each detector pattern with its zero-width assertions removed (lookarounds, `\b`, `^`, `$`, ...),
  which can only widen what it matches, except a one-character negative lookbehind opening the
  pattern (lookahead closing it), which becomes "the start (end), or a character outside the class's
  ASCII members" (`_fence`), and a one-character positive lookbehind opening it (alone or or'ed with
  the start), which becomes "the start, or any character but the ASCII ones outside the class"
  (`_opening_fence`: `(?<=\W)` keeps `player_key` from reading as IBM Cloud's `key`); the classes
  where Python's and Rust's Unicode definitions differ widened to both (`\w` also takes every
  number, `\s` the information separators, `\W` the marks); a counted repetition of such a wide
  class made `+` or `*` (cheap to compile);
- the `KeywordDetector`, which has no pattern list of its own: one of its keywords with, after
  it, what each of its patterns needs there (`keyword_pattern`: an assignment or comparison sign,
  a call's parenthesis, or a quote with a `;` later), or a comparison sign before it: a keyword in
  prose ("your secret is safe") is no candidate;
- phone numbers: `phonenumbers`' matcher only parses substrings of its candidates (digit blocks
  joined by at most four of its punctuation characters), and without a plus sign a valid number's
  national digits are a run of one such *digit chain*'s digits matching one of the type patterns
  of the region's country code (`phone_digit_patterns`: for the US the 25 NANPA regions; a
  timestamp's `31.066-05` is a candidate only as CA's 310-xxxx); what may read digits the chain
  does not show is a candidate outright (`phone_flags`: a plus sign, other scripts' digits, an
  extension, three `x`s);
- the PII validators and the phone matcher read the decoded line (`scan.decoded`): lines holding a
  URL escape, an HTML entity or `\u0040` are decoded (in Python, only those) before their
  prefilters.

Each pattern runs first on blocks of lines joined by newlines, then only on the lines of the
blocks it matched (`block_matches`). A detector class with no pattern the prefilter can relax makes
every line a candidate for its group (never a miss); a test keeps the list of those empty.
"""

from __future__ import annotations

import array
import functools
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

import phonenumbers
import polars as pl
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.plugins.keyword import DENYLIST
from phonenumbers.phonenumbermatcher import _LEAD_CLASS
from phonenumbers.phonenumberutil import (
    _EXTN_PATTERNS_FOR_MATCHING,
    _PLUS_CHARS,
    _REGEX_FLAGS,
    _VALID_PUNCTUATION,
)

# zero-width assertions outside a class: dropping them only widens a pattern
_ASSERTION_ESCAPES = frozenset("bBAZ")
_LOOKAROUNDS = ("(?=", "(?!", "(?<=", "(?<!")
# a counted repetition (`{n}`, `{n,}`, `{n,m}`, lazy or not): of a wide atom it becomes `+` (`*`)
_COUNT = re.compile(r"\{(\d+)(?:,\d*)?\}\??")
_WIDE_CLASSES = ("\\w", "\\W", "\\s", "\\S", "\\D", "\\p{")
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


def rust_class(points: Iterable[int], *, negated: bool = False) -> str:
    """Return the Rust class of `points` (code points), as ranges of hexadecimal escapes."""
    runs: list[list[int]] = []
    for point in sorted(set(points)):
        if runs and runs[-1][1] == point - 1:
            runs[-1][1] = point
        else:
            runs.append([point, point])
    body = "".join(f"\\x{{{a:X}}}" + (f"-\\x{{{b:X}}}" if b > a else "") for a, b in runs)
    return f"[{'^' if negated else ''}{body}]"


def _one_character(body: str) -> bool:
    """Whether `body` is one class, one escaped character class or character, or one character."""
    if body.startswith("["):
        return _class_end(body, 0) == len(body)
    if body.startswith("\\"):
        return len(body) == 2 and (body[1] in "wWdDsS" or not body[1].isalnum())
    return len(body) == 1 and body not in ".^$*+?{}[]|()"


def _fence(pattern: str, start: int, end: int, flags: int) -> str | None:
    """Return a consuming stand-in for the one-character negative lookaround `pattern[start:end]`.

    `(?<!C)` opening a pattern becomes "the start, or a character outside C", `(?!C)` closing it
    "the end, or a character outside C": for a search anywhere in the text they hold where the
    lookaround holds. C is narrowed to its ASCII members (where Python's and Rust's classes agree)
    but the newline, so that "outside C" only grows; None when C has no such member or is not
    one character.
    """
    behind = pattern.startswith("(?<!", start)
    body = pattern[start + (4 if behind else 3) : end - 1]
    if not _one_character(body):
        return None
    members = [c for c in map(chr, range(128)) if c != "\n" and re.fullmatch(body, c, flags)]
    if not members:
        return None
    outside = f"(?-i:{rust_class(map(ord, members), negated=True)})"
    return f"(?:^|{outside})" if behind else f"(?:$|{outside})"


# a positive one-character lookbehind opening a pattern, alone or or'ed with the start
_OPENING_BEHIND = re.compile(
    r"\(\?:\(\?<=(?P<either>[^()]+)\)\|\(\?<=\^\)\)|\(\?<=(?P<only>[^()]+)\)"
)


def _opening_fence(group: str, flags: int) -> str | None:
    """Return a consuming stand-in for a positive lookbehind `group` opening a pattern, or None.

    `(?<=C)` or `(?:(?<=C)|(?<=^))` becomes "the start, or a character C may be": every
    character but the ASCII ones outside C (and never the newline, which a line in a block of
    lines has before it), so that it only grows. None when `group` is not one of these forms.
    """
    opening = _OPENING_BEHIND.fullmatch(group)
    body = opening and (opening.group("either") or opening.group("only"))
    if not body or not _one_character(body):
        return None
    outside = [c for c in map(chr, range(128)) if c != "\n" and not re.fullmatch(body, c, flags)]
    if not outside:
        return "(?:^|[\\s\\S])"
    return f"(?:^|(?-i:{rust_class(map(ord, outside), negated=True)}))"


def _is_wide(atom: str) -> bool:
    """Whether a Rust atom (class, escape, `.`) spans Unicode categories (costly to repeat)."""
    return atom == "." or atom.startswith("[^") or any(w in atom for w in _WIDE_CLASSES)


def relaxed(pattern: str, *, verbose: bool = False, flags: int = 0) -> str:
    """Return `pattern` (Python `re` syntax, `flags`) relaxed for Rust `regex`: module docstring."""
    verbose = verbose or bool(flags & re.VERBOSE)
    out: list[str] = []
    index = 0
    wide = False  # whether the last atom is wide (`_is_wide`)
    while index < len(pattern):
        char = pattern[index]
        count = _COUNT.match(pattern, index)
        atom = ""
        if count and wide:
            out.append("+" if int(count.group(1)) else "*")
            index = count.end()
        elif char == "\\" and index + 1 < len(pattern):
            escape = pattern[index + 1]
            if escape in _WIDENED:
                atom = f"[{_WIDENED[escape]}]"
            elif escape not in _ASSERTION_ESCAPES:
                atom = pattern[index : index + 2]
            index += 2
        elif char == "[":
            end = _class_end(pattern, index)
            atom = _widen_class(pattern[index:end])
            index = end
        elif verbose and char == "#":
            index = _skip_comment(pattern, index)
        elif pattern.startswith("(?#", index):
            index = pattern.index(")", index) + 1
        elif (
            index == 0
            and pattern.startswith(("(?<=", "(?:(?<="))
            and (fence := _opening_fence(pattern[: _group_end(pattern, 0, verbose)], flags))
        ):
            out.append(fence)
            index = _group_end(pattern, 0, verbose)
        elif pattern.startswith(_LOOKAROUNDS, index):
            end = _group_end(pattern, index, verbose)
            edge = (index == 0 and pattern.startswith("(?<!", index)) or (
                end == len(pattern) and pattern.startswith("(?!", index)
            )
            out.append((_fence(pattern, index, end, flags) if edge else None) or "")
            index = end
        elif char in "^$":
            index += 1
        else:
            atom = char
            index += 1
        out.append(atom)
        wide = _is_wide(atom) if atom else wide and verbose and char.isspace()
    return "".join(out)


def rust_pattern(compiled: re.Pattern[str]) -> str:
    """Return the relaxation of a compiled Python pattern, its flags as Rust inline flags."""
    flags = "".join(
        letter
        for flag, letter in ((re.IGNORECASE, "i"), (re.VERBOSE, "x"), (re.DOTALL, "s"))
        if compiled.flags & flag
    )
    body = relaxed(compiled.pattern, flags=compiled.flags)
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


@functools.cache
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


def python_class(pattern: str, flags: int = 0, last: int = 0xFFFF) -> str:
    """Return a Rust class of the code points up to `last` that the Python class `pattern` matches.

    Found by matching it against each code point, so flags such as `re.IGNORECASE` count. The
    phone classes hold BMP characters only: a test finds the same class over every code point.
    """
    points = array.array("I", range(0xD800))
    points.extend(range(0xE000, last + 1))
    everything = points.tobytes().decode(f"utf-32-{sys.byteorder[0]}e")
    return rust_class({ord(c) for c in re.findall(pattern, everything, flags)})


@functools.cache
def phone_classes() -> tuple[str, str]:
    """Return the Rust classes of the matcher's punctuation and lead characters (its flags)."""
    return (
        python_class(f"[{_VALID_PUNCTUATION}]", _REGEX_FLAGS),
        python_class(_LEAD_CLASS, _REGEX_FLAGS),
    )


def phone_chain() -> str:
    """Return the Rust pattern of a digit chain: ASCII digits joined by 0-4 punctuation characters.

    The matcher's candidate pattern (`_PATTERN`) is digit blocks joined by at most four of its
    punctuation characters, after at most two lead characters and before an optional extension;
    every substring it parses lies in one candidate, so its digits lie in one chain.
    """
    punctuation, _ = phone_classes()
    return f"[0-9](?:{punctuation}{{0,4}}[0-9])*"


def _country_regions(region: str) -> list[phonenumbers.PhoneMetadata]:
    country_code = phonenumbers.country_code_for_region(region)
    return [
        phonenumbers.PhoneMetadata.metadata_for_region(code)
        for code in phonenumbers.COUNTRY_CODE_TO_REGION_CODE[country_code]
    ]


def national_number_patterns(region: str) -> dict[str, int]:
    """Return the number-type patterns of every region sharing `region`'s country code.

    Each with the fewest digits a number matching it can have to be valid: `is_valid_number`
    holds only for a national significant number matching one of its region's type patterns in
    full, with one of the type's `possible_length` (the general description's when the type has
    none).
    """
    fewest: dict[str, int] = {}
    for metadata in _country_regions(region):
        general = metadata.general_desc.possible_length or (1,)
        for name, desc in vars(metadata).items():
            if (
                isinstance(desc, phonenumbers.PhoneNumberDesc)
                and name != "general_desc"
                and desc.national_number_pattern
            ):
                digits = min(desc.possible_length or general)
                pattern = desc.national_number_pattern
                fewest[pattern] = min(digits, fewest.get(pattern, digits))
    return dict(sorted(fewest.items()))


@functools.cache
def phone_digit_patterns(region: str) -> tuple[tuple[int, str], ...]:
    """Return (digits, Rust pattern) pairs, fewest digits first: what a chain's digits must hold.

    Read without a plus sign, a candidate's national number is a run of its digits once an
    extension, the region's international prefix with a country code, or its national prefix is
    taken off the ends: a number of the region's country code matches one of
    `national_number_patterns`; one dialled with the international prefix has the prefix and
    `min_phone_digits()` digits more. A pair's pattern holds the numbers of at least its digits
    (and fewer than the next pair's), so a chain needs only the pairs up to its digits. The region
    must not rewrite its national prefix (`national_prefix_transform_rule`), which adds digits.
    """
    metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
    if metadata.national_prefix_transform_rule:
        raise ValueError(f"{region} rewrites its national prefix: no digit-run prefilter")
    tiers: dict[int, list[str]] = {}
    for pattern, digits in national_number_patterns(region).items():
        tiers.setdefault(digits, []).append(f"(?:{pattern})")
    prefix = metadata.international_prefix
    if prefix:
        prefix_digits = len(prefix) if prefix.isdigit() else 1
        tiers.setdefault(prefix_digits + min_phone_digits(), []).append(
            f"(?:{prefix})[0-9]{{{min_phone_digits()}}}"
        )
    return tuple((digits, "|".join(tiers[digits])) for digits in sorted(tiers))


@functools.cache
def phone_flags() -> Mapping[str, str]:
    """Return the Rust patterns that make a line a phone candidate whatever its digits are.

    - `plus`: a plus sign, at most nine lead or punctuation characters (two lead characters, four
      punctuation characters after each), then `min_phone_digits()` digits of a chain;
    - `non_ascii_digit`: a decimal digit outside 0-9 (the matcher reads every script's digits);
    - `extension`: a digit followed by an extension the matcher accepts (`ext. 12`, `x12`,
      `;ext=12`, `- 12#`): its label and separators need not be chain punctuation;
    - `letters`: a run of a plus sign or digit, digits, plus signs and punctuation holding three
      `x`s (parsing reads a number with three letters as letters on a keypad).
    """
    punctuation, lead = phone_classes()
    plus = "[" + "".join(f"\\x{{{ord(c):X}}}" for c in _PLUS_CHARS) + "]"
    digits = f"[0-9](?:{punctuation}{{0,4}}[0-9]){{{min_phone_digits() - 1}}}"
    run = punctuation[:-1] + plus[1:-1] + "0-9]"
    return MappingProxyType(
        {
            "plus": f"{plus}(?:{punctuation}|{lead}){{0,9}}{digits}",
            "non_ascii_digit": r"[\d--0-9]",
            "extension": rust_pattern(
                re.compile(rf"\d(?:{_EXTN_PATTERNS_FOR_MATCHING})", _REGEX_FLAGS)
            ),
            "letters": f"[0-9{plus[1:-1]}](?:{run}*[xX]){{3}}",
        }
    )


def phone_digit_candidates(texts: pl.Series, region: str) -> pl.Series:
    """Return whether a digit chain of each text has digits matching `phone_digit_patterns`.

    Each chain is matched alone against the patterns of numbers no longer than its digits
    (chains too short for any are not read): the whole union is slow on runs of digits, and the
    timestamps' 7-digit chains need only the 7-digit patterns.
    """
    tiers = phone_digit_patterns(region)
    long_chain = f"{phone_chain()[:-1]}{{{tiers[0][0] - 1},}}"
    chains = (
        texts.to_frame("text")
        .with_row_index("row")
        .select("row", pl.col("text").str.extract_all(long_chain))
        .explode("text")
        .drop_nulls("text")
        .select("row", pl.col("text").str.replace_all("[^0-9]", ""))
        .with_columns(digits=pl.col("text").str.len_bytes())
    )
    bounds = [digits for digits, _ in tiers[1:]] + [None]
    found = pl.concat(
        chains.filter(pl.col("digits") >= digits, pl.col("digits") < (bound or sys.maxsize)).filter(
            pl.col("text").str.contains("|".join(pattern for _, pattern in tiers[: n + 1]))
        )
        for n, ((digits, _), bound) in enumerate(zip(tiers, bounds, strict=True))
    )
    return (
        texts.to_frame("text")
        .with_row_index("row")
        .select(pl.col("row").is_in(found["row"].implode()))
        .to_series()
    )


# Python's `\s` also takes the information separators (`str.isspace`), Rust's does not
_SPACE = r"[\s\x1c-\x1f]*"


def keyword_pattern() -> str:
    r"""Return the Rust relaxation of every pattern of detect-secrets' `KeywordDetector`.

    Each of them is a keyword (`DENYLIST`, then `\w*`), then closing quotes or brackets and
    spaces, then: `:` or `:=`; `=`, `==`, `===`, `=>`, `!=` or `!==`; `[!=]{1,2}` then `@"` or
    `"` (`!"`); `(` or `.assign(`; or a quote whose value is followed by `;` — or, the one
    pattern with the keyword last, a quoted value, `==`/`!=`/`===`, spaces and the keyword. What
    comes between keyword and sign is non-space characters then spaces (`\S*` holds Python's
    `\w`, the closing characters and the brackets), and what the pattern asks after the sign is
    left out, so every line a pattern matches, this matches.
    """
    words = "(?:" + "|".join(DENYLIST) + ")"
    after = "(?:[:=(]|!=|!" + _SPACE + '@?"|assign\\(|[\'"`][^\\n]*;)'
    return rf"(?i)(?:{words}\S*{_SPACE}{after}|[!=]{{2}}\S*{_SPACE}\S*{words})"


def secret_plugin_patterns(excluded: Iterable[str]) -> tuple[list[str], list[str]]:
    """Return (Rust patterns of the enabled detect-secrets plugins, plugins with no pattern)."""
    patterns, unrelaxed = [], []
    for cls in get_mapping_from_secret_type_to_class().values():
        name = cls.__name__
        if name in excluded:
            continue
        denylist = getattr(cls, "denylist", None)
        if name == "KeywordDetector":
            patterns.append(keyword_pattern())
        elif isinstance(denylist, list | tuple) and denylist:
            patterns.extend(rust_pattern(compiled) for compiled in denylist)
        else:
            unrelaxed.append(name)
    return patterns, unrelaxed


def union(patterns: Iterable[str]) -> str:
    """Return one alternation of `patterns`: a line matches it if it matches one of them."""
    return "|".join(f"(?:{pattern})" for pattern in patterns)


def unions(patterns: Sequence[str], size: int) -> list[str]:
    """Return `patterns` joined `size` at a time (`union`).

    Polars keeps a few compiled patterns per thread, and compiling a pattern again costs more
    than searching all blocks with it: fewer, larger patterns are cheaper, up to a few patterns
    per union (the lazy DFA of larger unions of the secret plugins' patterns thrashes).
    """
    return [union(patterns[i : i + size]) for i in range(0, len(patterns), size)]


BLOCK_ROWS = 32


def block_matches(frame: pl.DataFrame, tests: Sequence[tuple[str, str, str]]) -> pl.DataFrame:
    """Return one boolean column per group of `tests`: whether a row matches one of its patterns.

    A test is `(group, column, pattern)`, `pattern` a Rust pattern with no anchor but in the
    fences of `_fence`, whose "character outside the class" takes a newline. Each pattern runs
    first on blocks of `BLOCK_ROWS` values of its column joined by newlines, then only on the
    rows of the blocks it matched: a block holding a matching row matches. Few blocks match most
    patterns, and a pattern costs per value it is run on, whatever its length.
    """
    groups = list(dict.fromkeys(group for group, _, _ in tests))
    rows = frame.with_row_index("row").with_columns(block=pl.col("row") // BLOCK_ROWS)
    blocks = rows.group_by("block").agg(pl.col(c).str.join("\n") for c in frame.columns)
    names = [f"test{i}" for i in range(len(tests))]
    hits = (
        blocks.select(
            "block",
            *(
                pl.col(column).str.contains(pattern).alias(name)
                for name, (_, column, pattern) in zip(names, tests, strict=True)
            ),
        )
        .unpivot(index="block", variable_name="test", value_name="hit")
        .filter("hit")
        .join(
            pl.DataFrame(
                [(name, *test) for name, test in zip(names, tests, strict=True)],
                schema=["test", "group", "column", "pattern"],
                orient="row",
            ),
            on="test",
        )
    )
    matched = pl.concat(
        rows.join(hits.filter(pl.col("column") == column), on="block")
        .filter(pl.col(column).str.contains(pl.col("pattern")))
        .select("row", "group")
        for column in frame.columns
    )
    return rows.select(
        pl.col("row").is_in(matched.filter(pl.col("group") == group)["row"].implode()).alias(group)
        for group in groups
    )
