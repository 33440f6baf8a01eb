import polars as pl
import pytest

from distill_assets.contracts.published import published_schema
from distill_assets.defs.curation.scrub import (
    leak_counts,
    redaction_column,
    scrub,
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
    ],
)
def test_ordinary_text_and_placeholders_are_left_alone(text):
    assert scrub_text(text) == (text, {})


def test_nested_messages_metadata_and_provenance_are_scrubbed_but_id_and_source_are_not():
    schema = published_schema("sft")
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
        "private_key": 0,
        "api_key": 1,
        "jwt": 0,
        "bearer_token": 0,
        "email": 3,
        "phone": 1,
    }


def test_scrubbing_twice_changes_nothing_and_leaves_no_leak():
    schema = published_schema("dpo")
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
        "private_key": 1,
        "api_key": 1,
        "jwt": 0,
        "bearer_token": 0,
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
