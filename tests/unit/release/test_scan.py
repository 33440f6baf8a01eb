import polars as pl
import pytest

from distill_assets.contracts.published import published_schema
from distill_assets.defs.release import scan
from distill_assets.defs.release.scan import (
    LineMemory,
    candidate_lines,
    detect_secrets_settings,
    is_card_number,
    is_iban,
    line_findings,
    pii_findings,
    scan_frame,
    secret_findings,
)
from distill_assets.lib.scrub import scrub, scrubbed_columns


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("mail jane.doe@example.org", ["email"]),
        ("from 8.8.8.8 and 10.1.2.3", ["ipv4", "ipv4"]),
        ("node 2a00:1450:4001::200e", ["ipv6"]),
        ("card 4539 1488 0343 6467", ["payment_card"]),
        ("ssn 078-05-1120 or 219 09 9999", ["us_ssn", "us_ssn"]),
        ("iban GB82 WEST 1234 5698 7654 32", ["iban"]),
        (r"at /home/alice/x and C:\Users\bob\y", ["home_path", "home_path"]),
        ("redis://app:pw1@127.0.0.1:6379", ["url_credentials"]),
        ("call 212-736-5000 now", ["phone"]),
    ],
)
def test_each_validator_finds_its_kind(text: str, kinds: list[str]) -> None:
    assert list(pii_findings(text)) == kinds


@pytest.mark.parametrize(
    "text",
    [
        "loopback 127.0.0.1, docs 192.0.2.4 and 2001:db8::1, link fe80::1, any 0.0.0.0",
        "versions 1.2.3.4.5 and v10.0.0.1; ts 1732406400000; test card 4242 4242 4242 4242",
        "ssn-like 000-12-3456 and 666-12-3456; hash 4539148803436468",
        "[REDACTED_EMAIL] /home/[REDACTED_USER]/x http://[REDACTED_CREDENTIALS]@[REDACTED_IPV4]",
        "GB00 WEST 1234 5698 7654 32 fails mod 97; 2026-11-19 12:30:45; std::vector",
    ],
)
def test_documented_exceptions_and_placeholders_are_not_findings(text: str) -> None:
    assert list(pii_findings(text)) == []


# lines of the 10 GB night (2026-11-27) the scan withheld: digit runs inside hex ids and hashes
# pass the card check, and bare ten-digit ids are valid US numbers
IDENTIFIER_LINES = [
    '"principle_id":"16d4655364312022","revision_id":"r1"',
    '{"player_key":"f035e4103f004471d768503544188a4982653627781f1856f7731"}',
    '{"run_id":"5296837415","t":0,"tool":"search"}',
    "run:5296837415/step:0",
    "episode:ep_glaze_bowl_112634929356",
    '{"session_id":"s_13103900","total_steps":7}',
    '{"traceId": 4155550123}',
    '{"note":"' + "long text " * 30 + '","run_id":"5296837415"}',
]


@pytest.mark.parametrize("text", IDENTIFIER_LINES)
def test_digit_runs_in_identifiers_are_not_cards_or_phones(text: str) -> None:
    assert list(pii_findings(text)) == []


def test_the_identifier_lines_hold_what_the_detectors_would_take_for_numbers() -> None:
    """The lines above are no findings because of the token rules, not by being harmless."""
    assert is_card_number("4655364312022")
    assert is_card_number("4982653627781")
    assert list(pii_findings("id 5296837415 and 112634929356")) == ["phone", "phone"]


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("card:4532015112830366", ["payment_card"]),
        ('{"card":"4532 0151 1283 0366"}', ["payment_card"]),
        ("call me at 4155550123", ["phone"]),
        ('{"phone":"4155550123"}', ["phone"]),
        ("paid:4155550123", ["phone"]),
        ('{"user_id":"+1 415 555 0123"}', ["phone"]),
        ('{"run_id":"(415) 555-0123"}', ["phone"]),
    ],
)
def test_numbers_outside_identifiers_are_still_findings(text: str, kinds: list[str]) -> None:
    assert list(pii_findings(text)) == kinds


def test_card_and_iban_validators() -> None:
    assert is_card_number("5425-2334-3010-9903")
    assert not is_card_number("5425-2334-3010-9904")  # Luhn fails
    assert not is_card_number("1234567812345670")  # Luhn passes, no card network starts with 1
    assert is_iban("DE89 3704 0044 0532 0130 00")
    assert not is_iban("DE88 3704 0044 0532 0130 00")
    # mod 97 == 1, but FF is no IBAN country (an escalation's hex example id)
    assert int("".join(str(int(c, 36)) for c in "EF4B7867C0E4FF16")) % 97 == 1
    assert not is_iban("FF16EF4B7867C0E4")
    # mod 97 == 1 in a registered country, at 25 characters where Germany's IBANs have 22
    assert int("".join(str(int(c, 36)) for c in "370400440532013000123DE51")) % 97 == 1
    assert not is_iban("DE51370400440532013000123")


def test_detect_secrets_plugins_find_secrets_line_by_line() -> None:
    text = "use ghp_" + "A1b2C3d4E5" * 4 + "\n-----BEGIN RSA PRIVATE KEY-----\nAKIAIOSFODNN7EXAMPLE"
    with detect_secrets_settings():
        assert sorted(secret_findings(text)) == [
            "secret:AWS Access Key",
            "secret:GitHub Token",
            "secret:Private Key",
        ]
        assert list(secret_findings("content hash 9f86d081884c7d659a2feaa0c55ad015")) == []


def test_scan_frame_names_row_column_and_type_and_scrubbed_rows_are_clean() -> None:
    schema = published_schema("sft")
    frame = pl.DataFrame(
        {
            "id": ["a", "b"],
            "source": ["traces", "traces"],
            "source_ref": ["r/1", "r/2"],
            "quality_score": [0.5, 0.5],
            "metadata": ['{"ip": "8.8.4.4"}', "{}"],
            "prompt": [
                [{"role": "user", "content": "hi"}, {"role": "tool", "content": "078-05-1120"}],
                [{"role": "user", "content": "nothing here"}],
            ],
            "completion": [
                [{"role": "assistant", "content": "ok"}],
                [{"role": "assistant", "content": "fine"}],
            ],
        },
        schema=schema,
    )
    columns = scrubbed_columns(schema)
    assert scan_frame(frame, columns).sort("column").rows() == [
        ("a", "metadata", "ipv4"),
        ("a", "prompt", "us_ssn"),
    ]
    assert scan_frame(scrub(frame.lazy(), columns).collect(), columns).height == 0


LINES = [
    "mail jane.doe@example.org and 8.8.8.8 and 8.8.4.4",
    "ssn 078-05-1120 or 219 09 9999",
    "use ghp_" + "A1b2C3d4E5" * 4,
    "call 212-736-5000 now",
    "redis://app:pw1@127.0.0.1:6379",
    "nothing to see at 127.0.0.1",
    "plain words",
]


def instruction_frame(texts: list[str]) -> pl.DataFrame:
    schema = published_schema("instruction")
    rows = {
        name: [f"{name}{i}" if dtype == pl.String() else None for i in range(len(texts))]
        for name, dtype in schema.items()
    }
    rows.update(
        id=[f"r{i}" for i in range(len(texts))],
        quality_score=[0.5] * len(texts),
        metadata=["{}"] * len(texts),
        instruction=texts,
        output=["\n".join(reversed(texts[: i + 1])) for i in range(len(texts))],
    )
    return pl.DataFrame(rows, schema=schema)


def test_a_line_memory_gives_the_detectors_findings_and_reads_only_lines_it_does_not_know(
    monkeypatch,
) -> None:
    columns = scrubbed_columns(published_schema("instruction"))
    frame = instruction_frame(LINES)
    candidates = candidate_lines(pl.Series(LINES))
    expected = line_findings(candidates)
    assert expected.get_column("type").to_list() == [
        "phone",
        "email",
        "ipv4",
        "ipv4",
        "url_credentials",
        "secret:Basic Auth Credentials",
        "us_ssn",
        "us_ssn",
        "secret:GitHub Token",
    ]
    read: list[str] = []

    def counted(lines: pl.DataFrame) -> pl.DataFrame:
        read.extend(lines.get_column("text"))
        return line_findings(lines)

    monkeypatch.setattr(scan, "line_findings", counted)
    # a memory of half the lines: the same findings, in the same order, only the rest read
    half = LineMemory()
    half.findings(candidates.head(3))
    assert half.entries().height == 3
    memory = LineMemory(half.entries())
    read.clear()
    assert memory.findings(candidates).equals(expected)
    assert read == candidates.get_column("text").tail(candidates.height - 3).to_list()
    assert scan_frame(frame, columns, memory).equals(scan_frame(frame, columns))
    # everything known: nothing read, the same rows
    read.clear()
    assert scan_frame(frame, columns, LineMemory(memory.entries())).equals(
        scan_frame(frame, columns)
    )
    assert read == candidates.get_column("text").to_list()  # by the call without a memory
    # the memory holds digests and kinds, never a line's text
    assert not any(line in str(memory.entries().rows()) for line in LINES)
