"""Recall and false positives of the scrubber and the independent scan on the labelled corpus."""

import polars as pl
import pytest

from distill_assets.lib.scrub import redaction_column, scrub
from tests.unit.curation.pii_corpus import NEGATIVES, POSITIVES, measure

# the known false positive of both: `git@github.com` in an ssh URL reads as an e-mail address
EXPECTED_FALSE_POSITIVES = {"documentation": (0.25, 0.25)}


def test_every_class_is_caught_by_both_detectors_and_look_alikes_are_left_alone():
    table = measure()
    recall = table.filter(pl.col("kind") == "positive")
    assert recall.select("label", "scrubber", "scan").rows() == [
        (label, 1.0, 1.0) for label in POSITIVES
    ]
    false_positives = table.filter(pl.col("kind") == "negative")
    assert false_positives.select("label", "scrubber", "scan").rows() == [
        (label, *EXPECTED_FALSE_POSITIVES.get(label, (0.0, 0.0))) for label in NEGATIVES
    ]
    assert table["texts"].sum() == sum(map(len, POSITIVES.values())) + sum(
        map(len, NEGATIVES.values())
    )


@pytest.mark.parametrize(
    ("text", "expected", "kind"),
    [
        (
            "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key=[REDACTED_SECRET]",
            "secret_assignment",
        ),
        (
            "Authorization: Basic dXNlcjpwYXNzd29yZA==",
            "Authorization: Basic [REDACTED_TOKEN]",
            "auth_header",
        ),
        ("card 4539.1488.0343.6467.", "card [REDACTED_CARD].", "payment_card"),
        ("iban de89370400440532013000 ok", "iban [REDACTED_IBAN] ok", "iban"),
        ("to john.doe%40example.com.", "to [REDACTED_EMAIL].", "email"),
        ("password=abc123", "password=[REDACTED_SECRET]", "secret_assignment"),
        (
            "Server=db;User Id=sa;Password=Secr3t!;Database=x",
            "Server=db;User Id=sa;Password=[REDACTED_SECRET];Database=x",
            "secret_assignment",
        ),
        (
            "postgres://app:p@ss@db:5432/x",
            "postgres://[REDACTED_CREDENTIALS]@db:5432/x",
            "url_credentials",
        ),
        ("key sk_test_4eC39HqLyjWDarjtT1zdp7dc", "key [REDACTED_API_KEY]", "api_key"),
    ],
)
def test_each_published_gap_of_issue_28_is_redacted_once(text, expected, kind):
    out = scrub(pl.LazyFrame({"text": [text]}), {"text": pl.String()}).collect()
    assert out["text"][0] == expected
    assert out[redaction_column(kind)][0] == 1
