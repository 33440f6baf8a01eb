import polars as pl
import pytest

from distill_assets.contracts.published import INTERNAL_SCHEMA, feed_schema, published_schema
from distill_assets.lib.scrub import (
    leak_counts,
    redaction_column,
    scrub,
    scrub_candidates,
    scrubbed_columns,
)
from distill_assets.rules.curation import REDACTIONS

KINDS = [r.kind for r in REDACTIONS]
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5" * 4
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\nq9Z==\n-----END RSA PRIVATE KEY-----"
)
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"


def scrub_text(text: str) -> tuple[str, dict[str, int]]:
    columns = {"text": pl.String()}
    out = scrub(pl.LazyFrame({"text": [text]}), columns).collect()
    return out["text"][0], {
        k: out[redaction_column(k)][0] for k in KINDS if out[redaction_column(k)][0]
    }


@pytest.mark.parametrize(
    ("text", "expected", "counts"),
    [
        ("key sk-proj-abcdefghijklmnopqrstuv123 end", "key [REDACTED_API_KEY] end", {"api_key": 1}),
        (
            "ANTHROPIC=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
            "ANTHROPIC=[REDACTED_API_KEY]",
            {"api_key": 1},
        ),
        (f"token {GITHUB_TOKEN}.", "token [REDACTED_API_KEY].", {"api_key": 1}),
        ("aws AKIAIOSFODNN7EXAMPLE x", "aws [REDACTED_API_KEY] x", {"api_key": 1}),
        (
            "Authorization: Bearer abcdef0123456789abcdef==",
            "Authorization: Bearer [REDACTED_TOKEN]",
            {"bearer_token": 1},
        ),
        (
            "Authorization: Bearer sk-abcdefghijklmnopqrstuvwx",
            "Authorization: Bearer [REDACTED_API_KEY]",
            {"api_key": 1},
        ),
        (f"jwt {JWT}", "jwt [REDACTED_TOKEN]", {"jwt": 1}),
        (
            f"key:\n{PRIVATE_KEY}\nthanks",
            "key:\n[REDACTED_PRIVATE_KEY]\nthanks",
            {"private_key": 1},
        ),
        ("cut -----BEGIN PRIVATE KEY-----\nMIIE", "cut [REDACTED_PRIVATE_KEY]", {"private_key": 1}),
        (
            "mail jane.doe+x@example.co.uk or bob@corp.io",
            "mail [REDACTED_EMAIL] or [REDACTED_EMAIL]",
            {"email": 2},
        ),
        (
            "call (555) 123-4567, +1 555-123-4567 or +44 20 7946 0958",
            "call [REDACTED_PHONE], [REDACTED_PHONE] or [REDACTED_PHONE]",
            {"phone": 3},
        ),
        (
            "hosts 10.0.0.12 8.8.8.8,192.168.1.20:8080 and 172.16.5.4.",
            "hosts [REDACTED_IPV4] [REDACTED_IPV4],[REDACTED_IPV4]:8080 and [REDACTED_IPV4].",
            {"ipv4": 4},
        ),
        (
            "from 2a00:0db8:85a3:0000:0000:8a2e:0370:7334 via fe80::1ff:fe23:4567:890a",
            "from [REDACTED_IPV6] via [REDACTED_IPV6]",
            {"ipv6": 2},
        ),
        (
            "card 4539 1488 0343 6467 or 5425-2334-3010-9903 and 371449635398432",
            "card [REDACTED_CARD] or [REDACTED_CARD] and 371449635398432",
            {"payment_card": 2},
        ),
        ("ssn 078-05-1120.", "ssn [REDACTED_SSN].", {"us_ssn": 1}),
        (
            "pay DE89 3704 0044 0532 0130 00 or GB82WEST12345698765432",
            "pay [REDACTED_IBAN] or [REDACTED_IBAN]",
            {"iban": 2},
        ),
        (
            "db postgres://admin:s3cret@10.1.2.3:5432/x and http://u:p@localhost/",
            "db postgres://[REDACTED_CREDENTIALS]@[REDACTED_IPV4]:5432/x and "
            "http://[REDACTED_CREDENTIALS]@localhost/",
            {"url_credentials": 2, "ipv4": 1},
        ),
        (
            r"/home/alice/x.py /Users/bob/.ssh C:\Users\carol\a C:\\Users\\dan\\b",
            r"/home/[REDACTED_USER]/x.py /Users/[REDACTED_USER]/.ssh C:\Users\[REDACTED_USER]\a "
            r"C:\\Users\\[REDACTED_USER]\\b",
            {"home_path": 4},
        ),
        (
            'password=hunter22 token: "Zx9_kq2LmN" api_key = abc123def456',
            'password=[REDACTED_SECRET] token: "[REDACTED_SECRET]" api_key = [REDACTED_SECRET]',
            {"secret_assignment": 3},
        ),
    ],
)
def test_each_kind_is_replaced_by_its_placeholder_and_counted(text, expected, counts):
    assert scrub_text(text) == (expected, counts)


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-19 12:30:45 run 1234567890",
        "version 1.2.3, port 8080, 3.14159",
        "git remote user@host and sk-short",
        "def f(x): return x @ y",
        "see [REDACTED_EMAIL] and Bearer [REDACTED_TOKEN]",
        # versions, loopback and documentation addresses keep their meaning
        "pip install x==1.2.3.4.5 from v10.0.0.1 on 127.0.0.1 or 0.0.0.0 and 192.0.2.7",
        # published test card numbers and non-Luhn digit runs (ids, ms timestamps)
        "stripe test 4242 4242 4242 4242, card 4111111111111111, id 4539148803436468",
        "ts 1732406400000 ref 2026-11-19",
        # code: identifiers, two-group forms, letter-only and computed secrets
        "std::vector Add::Beef fe80::1 ::1 token: tokenizer password = os.environ['PW']",
        "ssh://deploy@build-host/x /home/[REDACTED_USER]/a",
    ],
)
def test_ordinary_text_and_placeholders_are_left_alone(text):
    assert scrub_text(text) == (text, {})


def feed_columns(config: str) -> pl.Schema:
    """Return a config's feed columns without the internal ones (sft: `messages`, dpo: strings)."""
    return pl.Schema({n: d for n, d in feed_schema(config).items() if n not in INTERNAL_SCHEMA})


def test_nested_messages_metadata_and_provenance_are_scrubbed_but_id_and_source_are_not():
    schema = feed_columns("sft")
    frame = pl.LazyFrame(
        {
            "id": ["a@b.co"],
            "source": ["x@y.com"],
            "source_ref": ["run:ops@corp.com/step:1"],
            "quality_score": [0.5],
            "metadata": ['{"player": "p@q.org", "phone": "555-123-4567"}'],
            "messages": [
                [
                    {"role": "system", "content": "be nice"},
                    {"role": "user", "content": "my key is sk-abcdefghijklmnopqrstuvwx, a@b.co"},
                ]
            ],
        },
        schema=schema,
    )
    out = scrub(frame, scrubbed_columns(schema)).collect()
    assert out["id"][0] == "a@b.co"
    assert out["source"][0] == "x@y.com"
    assert out["source_ref"][0] == "run:[REDACTED_EMAIL]/step:1"
    assert out["metadata"][0] == '{"player": "[REDACTED_EMAIL]", "phone": "[REDACTED_PHONE]"}'
    assert out["messages"][0].to_list() == [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "my key is [REDACTED_API_KEY], [REDACTED_EMAIL]"},
    ]
    assert {k: out[redaction_column(k)][0] for k in KINDS} == {
        **dict.fromkeys(KINDS, 0),
        "api_key": 1,
        "email": 3,
        "phone": 1,
    }


def test_scrubbing_twice_changes_nothing_and_leaves_no_leak():
    schema = feed_columns("dpo")
    frame = pl.LazyFrame(
        {
            "id": ["1", "2"],
            "source": ["revisions"] * 2,
            "source_ref": ["r:1", "r:2"],
            "quality_score": [0.1, 0.2],
            "metadata": ["{}", '{"e": "a@b.io"}'],
            "prompt": [f"use {GITHUB_TOKEN}", "plain"],
            "chosen": ["call 555.123.4567", "ok"],
            "rejected": [PRIVATE_KEY, None],
        },
        schema=schema,
    )
    columns = scrubbed_columns(schema)
    assert leak_counts(frame, columns) == {
        **dict.fromkeys(KINDS, 0),
        "private_key": 1,
        "api_key": 1,
        "email": 1,
        "phone": 1,
    }
    once = scrub(frame, columns).collect().select(schema.names())
    twice = scrub(once.lazy(), columns).collect()
    assert twice.select(schema.names()).equals(once)
    assert all(twice[redaction_column(k)].sum() == 0 for k in KINDS)
    assert leak_counts(once, columns) == dict.fromkeys(KINDS, 0)
    assert once["rejected"].to_list() == ["[REDACTED_PRIVATE_KEY]", None]


def test_scrubbed_columns_are_every_text_column_but_id_and_source():
    assert list(scrubbed_columns(published_schema("instruction"))) == [
        "source_ref",
        "metadata",
        "instruction",
        "input",
        "output",
    ]


def test_kept_addresses_are_not_leaks_but_redactable_ones_are():
    columns = {"text": pl.String()}
    kept = pl.DataFrame({"text": ["listen on 127.0.0.1 127.0.0.2 or 192.0.2.1"]})
    assert leak_counts(kept, columns)["ipv4"] == 0
    leaking = pl.DataFrame({"text": ["listen on 127.0.0.1 10.0.0.3"]})
    assert leak_counts(leaking, columns)["ipv4"] == 1
    assert scrub_text("listen on 127.0.0.1 127.0.0.2 10.0.0.3") == (
        "listen on 127.0.0.1 127.0.0.2 [REDACTED_IPV4]",
        {"ipv4": 1},
    )


def test_checked_cards_are_found_beside_null_nested_lists():
    schema = published_schema("sft_tools")
    messages = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "pay", "arguments": '{"card": "4539 1488 0343 6467"}'},
                }
            ],
            "tool_call_id": None,
        },
        {
            "role": "tool",
            "content": "charged 5425-2334-3010-9903",
            "tool_calls": None,
            "tool_call_id": "c1",
        },
    ]
    frame = pl.DataFrame(
        [
            {
                "id": "a",
                "source": "traces",
                "source_ref": "r",
                "quality_score": 0.5,
                "metadata": "{}",
                "messages": messages,
                "tools": "[]",
            }
        ],
        schema=schema,
    )
    columns = scrubbed_columns(schema)
    assert leak_counts(frame, columns)["payment_card"] == 1
    out = scrub(frame.lazy(), columns).collect()
    assert out["redacted_payment_card"][0] == 2
    scrubbed = out["messages"][0].to_list()
    assert scrubbed[0]["tool_calls"][0]["function"]["arguments"] == '{"card": "[REDACTED_CARD]"}'
    assert scrubbed[1]["content"] == "charged [REDACTED_CARD]"
    assert leak_counts(out, columns)["payment_card"] == 0


def test_candidates_of_slices_are_those_of_the_whole_frame() -> None:
    # each checked rule's candidates of several frames together: an IBAN of one slice, a card of
    # another (and only inside a longer run in a third, where it is no candidate of its own)
    texts = [
        "pay DE89 3704 0044 0532 0130 00 today",
        "card 4539 1488 0343 6467 please",
        "ref x4539 1488 0343 6467 and GB82WEST12345698765432",
        "nothing here",
    ]
    columns = {"text": pl.String()}
    whole = scrub_candidates(pl.LazyFrame({"text": texts}), columns)
    sliced = scrub_candidates([pl.LazyFrame({"text": [text]}) for text in texts], columns)
    assert (
        sliced
        == whole
        == {
            "iban": ["DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432"],
            "payment_card": ["4539 1488 0343 6467"],
        }
    )
    assert scrub_candidates([pl.LazyFrame({"text": texts[2:]})], columns) == {
        "iban": ["GB82WEST12345698765432"],
        "payment_card": [],
    }
