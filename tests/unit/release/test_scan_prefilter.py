"""The scan's candidate prefilter: relaxations that compile in Polars and never miss a finding."""

from __future__ import annotations

import re

import polars as pl
import pytest

from distill_assets.defs.release import scan
from distill_assets.defs.release import scan_prefilter as prefilter
from tests.unit.curation.pii_corpus import NEGATIVES, POSITIVES

# lines where Python's and Rust's regex dialects differ, encoded forms, and every kind's shape
EDGE_LINES = (
    "½x@example.org wrote",  # Python's \w takes numbers Rust's does not
    "AKCabcdefghij1234\x1cnext",  # an information separator ends a line for Python
    "mail jane%40example.org or jane&#64;example.org or jane\\u0040example.org",
    "call ２１２-７３６-５０００ or +43 1 23456 or 011 44 20 7946 0958",
    "ip 2a00:1450:4001::200e and 1:2:3:4:5:6:7:8 and 8.8.8.8",
    "ts 2026-11-20T12:03:54.576Z id conv_9fcb9161183b hash 0006d99810307777",
    "ts 2026-11-20T01:12:31.066-05:00",  # phonenumbers reads 31.066-05 as a US local number
    "password=abc123 and Authorization: Basic dXNlcjpwYXNz and sk_test_4eC39HqLyjWDarjtT1zdp7dc",
)


def _lines() -> list[str]:
    texts = [t for group in (POSITIVES, NEGATIVES) for values in group.values() for t in values]
    frame = pl.DataFrame(
        {"id": [str(i) for i in range(len(texts) + len(EDGE_LINES))], "text": [*texts, *EDGE_LINES]}
    )
    return scan.lines_of(frame, {"text": pl.String()}).get_column("text").unique().to_list()


def test_every_detector_pattern_has_a_relaxation_polars_compiles() -> None:
    patterns, unrelaxed = prefilter.secret_plugin_patterns(scan.GENERIC_ENTROPY_PLUGINS)
    assert unrelaxed == []
    assert scan.PREFILTERS["secret"] != [prefilter.MATCH_ALL]
    probe = pl.Series(["x"])
    for group in scan.PREFILTERS.values():
        for pattern in group:
            probe.str.contains(pattern)  # raises on a pattern Rust's regex refuses
    assert len(patterns) == 47


@pytest.mark.parametrize(
    ("pattern", "flags", "expected"),
    [
        (r"(?<![\w.])\d{3}(?!\d)", 0, r"[\w\p{N}.]\d{3}".replace(r"[\w\p{N}.]", "")),
        (r"\bkey\b=(?=\S)", re.I, r"(?i)key="),
        ("(?x) a (?# c) # comment (with parens)\n b", re.X, "(?x)(?x) a  \n b"),
        (r"^[^\s@]+\s$", 0, r"[^\s@]+[\s\x{1C}-\x{1F}]"),
        (r"(?:(?<=\W)|(?<=^))x", 0, "(?:|)x"),
    ],
)
def test_relaxation_drops_assertions_and_widens_classes(
    pattern: str, flags: int, expected: str
) -> None:
    assert prefilter.rust_pattern(re.compile(pattern, flags)) == expected


def test_a_negated_word_class_is_refused_not_narrowed() -> None:
    with pytest.raises(ValueError, match="negated class"):
        prefilter.relaxed(r"[^\w]+")


def test_phone_digits_come_from_the_metadata() -> None:
    # the shortest number of any type, local-only ones included, with its country code
    assert prefilter.min_phone_digits() == 4
    international, national = prefilter.phone_patterns("US")
    assert national.endswith("{6}")  # a US local-only number has 7 digits (011 + 4 has 7 too)
    lines = pl.Series(["+43 1 2", "212-736-5000", "2026-11-20", "12345", "31.066-05"])
    assert lines.str.contains(international).to_list() == [True, False, False, False, False]
    assert lines.str.contains(national).to_list() == [False, True, True, False, True]


def test_the_prefiltered_scan_finds_exactly_what_every_detector_on_every_line_finds() -> None:
    lines = _lines()
    every = pl.DataFrame({"text": lines}).with_columns(
        pl.lit(True).alias(group) for group in scan.GROUPS
    )
    exhaustive = scan.line_findings(every).sort(pl.all())
    prefiltered = scan.line_findings(scan.candidate_lines(pl.Series(lines))).sort(pl.all())
    assert prefiltered.equals(exhaustive)
    assert exhaustive.height == 73
    assert exhaustive.get_column("type").n_unique() == 23


@pytest.mark.parametrize(
    ("line", "kinds"),
    zip(
        EDGE_LINES,
        [
            ["email"],
            ["secret:Artifactory Credentials"],
            ["email", "email", "email"],
            ["phone", "phone", "phone"],
            ["ipv4", "ipv6", "ipv6"],
            [],
            ["phone"],
            ["secret:assignment", "secret:auth_header", "secret:vendor_key"],
        ],
        strict=True,
    ),
)
def test_dialect_edges_and_encoded_forms_stay_candidates(line: str, kinds: list[str]) -> None:
    frame = pl.DataFrame({"id": ["a"], "text": [line]})
    found = scan.scan_frame(frame, {"text": pl.String()})
    assert sorted(found.get_column("type").to_list()) == kinds


def test_ordinary_text_and_code_are_not_candidates() -> None:
    lines = pl.Series(
        [
            "def add(a, b):",
            "    return a + b",
            "The answer is to cache the result and invalidate it on write.",
            "for i in range(10): print(i)",
            "Version 1.2.3 shipped on Friday, build 42.",
        ]
    )
    assert scan.candidate_lines(lines).height == 0
