"""The scan's candidate prefilter: relaxations that compile in Polars and never miss a finding."""

from __future__ import annotations

import itertools
import re
import sys

import polars as pl
import pytest
from phonenumbers.phonenumbermatcher import _LEAD_CLASS
from phonenumbers.phonenumberutil import _REGEX_FLAGS, _VALID_PUNCTUATION

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
    "ts 2026-11-20T01:12:31.066-05:00",  # phonenumbers reads 31.066-05 as CA's UAN 310-6605
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
        (
            r"(?<![\w.])\d{3}(?!\d)",
            0,
            r"(?:^|(?-i:[^\x{2E}\x{30}-\x{39}\x{41}-\x{5A}\x{5F}\x{61}-\x{7A}]))\d{3}"
            r"(?:$|(?-i:[^\x{30}-\x{39}]))",
        ),
        (r"(?<!k)ey(?!s)", re.I, r"(?i)(?:^|(?-i:[^\x{4B}\x{6B}]))ey(?:$|(?-i:[^\x{53}\x{73}]))"),
        # inside, or not one character: dropped
        (r"a(?<!b)c(?![\w]|\.\d)", 0, "ac"),
        (r"(?<!\s)x", 0, r"(?:^|(?-i:[^\x{9}\x{B}-\x{D}\x{1C}-\x{20}]))x"),
        (r"\bkey\b=(?=\S)", re.I, r"(?i)key="),
        ("(?x) a (?# c) # comment (with parens)\n b", re.X, "(?x)(?x) a  \n b"),
        (r"^[^\s@]+\s$", 0, r"[^\s@]+[\s\x{1C}-\x{1F}]"),
        (
            r"(?:(?<=\W)|(?<=^))x",
            0,
            r"(?:^|(?-i:[^\x{30}-\x{39}\x{41}-\x{5A}\x{5F}\x{61}-\x{7A}]))x",
        ),
        (r"(?<=[ab])x", 0, r"(?:^|(?-i:[^\x{0}-\x{9}\x{B}-\x{60}\x{63}-\x{7F}]))x"),
    ],
)
def test_relaxation_drops_assertions_and_widens_classes(
    pattern: str, flags: int, expected: str
) -> None:
    assert prefilter.rust_pattern(re.compile(pattern, flags)) == expected


def test_a_fenced_lookaround_matches_at_line_edges_inside_a_block() -> None:
    fenced = prefilter.rust_pattern(re.compile(r"(?<![\w.])\d{3}(?![\d])"))
    lines = pl.Series(["123", "x 123.", "a123", "1234", "é123"])
    assert lines.str.contains(fenced).to_list() == [True, True, False, False, True]
    # a block joins lines by newlines: a line's edges stay edges
    assert pl.Series(["a\n123\nb"]).str.contains(fenced).item()


def test_a_negated_word_class_is_refused_not_narrowed() -> None:
    with pytest.raises(ValueError, match="negated class"):
        prefilter.relaxed(r"[^\w]+")


def test_phone_classes_are_the_matchers_own_over_every_code_point() -> None:
    punctuation, lead = prefilter.phone_classes()
    assert punctuation == prefilter.python_class(
        f"[{_VALID_PUNCTUATION}]", _REGEX_FLAGS, sys.maxunicode
    )
    assert lead == prefilter.python_class(_LEAD_CLASS, _REGEX_FLAGS, sys.maxunicode)
    # ranges of the source class and its case-insensitive `x` (the old per-character copy lost them)
    assert r"\x{2010}-\x{2015}" in punctuation
    assert r"\x{58}" in punctuation
    assert r"\x{FF0D}-\x{FF0F}" in punctuation


def test_phone_digits_come_from_the_metadata() -> None:
    # the shortest number of any type, local-only ones included, with its country code
    assert prefilter.min_phone_digits() == 4
    (seven, short), (ten, _) = prefilter.phone_digit_patterns("US")
    assert (seven, ten) == (7, 10)  # CA's 7-digit UAN numbers and 011 + 4 digits; the rest
    assert short == "(?:310\\d{4})|(?:011)[0-9]{4}"
    patterns = prefilter.national_number_patterns("US")  # the 25 NANPA regions' types
    assert (len(patterns), sorted(set(patterns.values()))) == (64, [7, 10])
    digits = pl.Series(["3106605", "3116605", "2127365000", "1127365000", "0114420794", "20261120"])
    union = "|".join(pattern for _, pattern in prefilter.phone_digit_patterns("US"))
    assert digits.str.contains(union).to_list() == [True, False, True, False, True, False]
    with pytest.raises(ValueError, match="rewrites its national prefix"):
        prefilter.phone_digit_patterns("AR")


# (line, a phone candidate, phone findings): timestamps and dates, numbers of several formats
# and regions, numbers next to timestamps, look-alikes
PHONE_LINES = (
    ("ts 2026-11-20T01:12:31.066-05:00", True, 1),  # 310-6605: CA's UAN
    ("ts 2026-11-20T01:12:31.166-05:00", False, 0),
    ("ts 2026-11-20T01:12:31.066Z", False, 0),
    ("at 2026-11-20 12:30:45 and 20/11/2026 01:08:56", True, 0),
    ("epoch 1732406400000 ms", True, 0),
    ("call 212-736-5000 now", True, 1),
    ("call (212) 736-5000", True, 1),
    ("call +1 212 736 5000", True, 1),
    ("call +44 20 7946 0958", True, 1),
    ("call 011 44 20 7946 0958", True, 1),
    ("call +49 30 901820", True, 1),
    ("call ２１２-７３６-５０００", True, 1),
    ("call 212\u2011736\u20115000", True, 1),  # a non-breaking hyphen
    ("call 212\uff0e736\uff0e5000", True, 1),  # a fullwidth full stop
    ("call 2127365000", True, 1),
    ("call 212.736.5000 ext. 12", True, 1),
    ("call 1-800-555-0199", True, 1),
    ("call 212 736 5000 x 12", True, 1),
    ("dial 310-1234", True, 1),
    ("2026-11-20T01:12:31.166-05:00 call 212-736-5000", True, 1),
    ("2026-11-20T01:12:31.166-05:00 caller 415 555 2671 ok", True, 1),
    ("hash 2018828308f4639c and id evt_173240640000", True, 0),
    ("hex 0x7f3a, 1920x1080", True, 0),  # an extension label after a digit
    ("build 1.2.3, 42 passed in 0.05s", False, 0),
)


@pytest.mark.parametrize(("line", "candidate", "phones"), PHONE_LINES)
def test_phone_candidates_on_planted_lines(line: str, candidate: bool, phones: int) -> None:
    assert len(list(scan.phone_findings(line))) == phones
    found = scan.candidate_lines(pl.Series([line]))
    assert bool(found.height and found["phone"].item()) is candidate


def test_timestamp_offsets_are_phone_candidates_only_when_their_digits_can_be_a_number() -> None:
    # every second of a minute and ten millisecond values, with an offset: phonenumbers finds a
    # number only in 31.0mm-05 (CA 310-xxxx); the prefilter keeps those and 01.123-05, which
    # dialled from the US starts with the international prefix 011 (country code and number
    # unknown to a digit pattern)
    stamps = [
        f"2026-11-20T01:12:{second:02d}.{ms:03d}-05:00"
        for second in range(60)
        for ms in (0, 5, 66, 99, 123, 310, 500, 766, 901, 999)
    ]
    with_phone = sorted(s for s in stamps if list(scan.phone_findings(s)))
    candidates = scan.candidate_lines(pl.Series(stamps)).filter("phone")["text"].to_list()
    assert [s[17:26] for s in with_phone] == ["31.000-05", "31.005-05", "31.066-05", "31.099-05"]
    assert candidates == ["2026-11-20T01:12:01.123-05:00", *with_phone]


def _any_match(column: str, patterns: list[str]) -> pl.Expr:
    return pl.any_horizontal(pl.col(column).str.contains(pattern) for pattern in patterns)


def test_block_matches_equal_matching_each_line() -> None:
    lines = pl.Series(_lines() * 3)  # more than one block, matches at block edges
    frame = pl.DataFrame({"text": lines, "view": scan.decoded_lines(lines)})
    tests = [
        *(("validators", "view", p) for p in scan.PREFILTERS["validators"]),
        *(("secret", "text", p) for p in scan.PREFILTERS["secret"]),
    ]
    blocked = prefilter.block_matches(frame, tests)
    assert lines.len() > 3 * prefilter.BLOCK_ROWS
    assert (
        blocked["validators"].to_list()
        == frame.select(_any_match("view", scan.PREFILTERS["validators"])).to_series().to_list()
    )
    assert (
        blocked["secret"].to_list()
        == frame.select(_any_match("text", scan.PREFILTERS["secret"])).to_series().to_list()
    )
    assert blocked["secret"].sum() > 0


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


def test_every_line_the_matcher_finds_a_number_in_is_a_phone_candidate() -> None:
    # numbers and look-alikes with the prefixes, separators and suffixes the matcher treats apart
    prefixes = ("", "+", "011 ", "1-", "(", "ts 2026-11-20T01:12:", "x")
    bodies = (
        "212-736-5000",
        "212 736 5000",
        "31.066",
        "2127365000",
        "20 7946 0958",
        "310\u20111234",
    )
    suffixes = ("", " ext 12", "-05:00", "f4a", ";ext=7", "/x2", "%")
    lines = [p + b + s for p, b, s in itertools.product(prefixes, bodies, suffixes)]
    found = {line for line in lines if list(scan.phone_findings(line))}
    candidates = set(scan.candidate_lines(pl.Series(lines)).filter("phone")["text"])
    assert found <= candidates
    assert (len(lines), len(found), len(candidates)) == (294, 97, 274)


# every form the `KeywordDetector`'s patterns name (their comments), with other keywords and spaces
KEYWORD_FORMS = [
    'my_password := "bar"',
    "api_key: foo",
    'api_key: "foo"',
    'my_password = "bar"',
    'my_password = @"bar"',
    'my_password[] = "bar";',
    'char my_password[25] = "bar";',
    'std::string secret("bar");',
    'secret.assign("bar",17);',
    "my_password = bar",
    'my_password == "bar"',
    'my_password != "bar"',
    "my_password !== 'bar'",
    "my_password === 'bar'",
    '"bar" == my_password',
    "'bar' !== db_pass",
    'private_key "something";',
    'my_password => "bar"',
    'PASSWORD !"bar1"',
    'contraseña\t=\x1f"zz9"',
    'db_pass\u3000=\u3000"hunter22"',
]
KEYWORD_PROSE = [
    "Your secret is safe.",
    "Your secret is safe! Here are two shekels of silver for your trouble.",
    "The secret, it is safe with me; go.",
    "Keep the password in mind",
    "the secret's safe",
]


def test_every_keyword_form_the_detector_finds_is_a_candidate_and_prose_is_not() -> None:
    """The 10 GB night's dialogue ("Your secret is safe.") made 400,000 secret candidates."""
    with scan.detect_secrets_settings():
        found = [
            [kind for kind in scan.secret_findings(line) if kind == "secret:Secret Keyword"]
            for line in KEYWORD_FORMS + KEYWORD_PROSE
        ]
    # the scan's quotes-required patterns find 13 of the forms (the prefilter must take all 21)
    detected = [False, False, *[True] * 2, *[False] * 6, *[True] * 8, False, True, True]
    assert [bool(kinds) for kinds in found] == detected + [False] * len(KEYWORD_PROSE)
    keyword = pl.Series(KEYWORD_FORMS + KEYWORD_PROSE).str.contains(prefilter.keyword_pattern())
    assert keyword.to_list() == [True] * len(KEYWORD_FORMS) + [False] * len(KEYWORD_PROSE)
    candidates = scan.candidate_lines(pl.Series(KEYWORD_PROSE))
    assert candidates.height == 0


def test_an_opening_lookbehind_keeps_its_word_boundary() -> None:
    """`(?:(?<=\\W)|(?<=^))` opens IBM Cloud's pattern: `player_key` holds no `key` of its own.

    Dropped, every telemetry row's metadata (`"player_key":"<64 hex>"`) was a secret candidate:
    8,149 of 8,222 candidate lines per 8,192 `sft` rows on the 10 GB night.
    """
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector

    (pattern,) = [prefilter.rust_pattern(p) for p in IbmCloudIamDetector.denylist]
    assert pattern.startswith("(?i)(?:^|(?-i:[^")
    key = "a" * 44
    lines = [
        f'{{"player_key":"{"0f" * 32}","npc":"x"}}',
        f"player_key: {key}",
        f"ibm_cloud_iam_key: {key}",
        f'{{"iam_api_key":"{key}"}}',
        f"x\u00e9key={key}",
        f"cloud-pass = {key}",
    ]
    found = pl.Series(lines).str.contains(pattern).to_list()
    assert found == [False, False, True, True, True, True]
    with scan.detect_secrets_settings():
        detected = [bool(list(scan.secret_findings(line))) for line in lines]
    assert detected == [False, False, True, True, False, True]
