"""Curation rules applied to every config before release (DESIGN.md "Curation").

Scrubbing: each `Redaction` is applied in the order listed, to every published text field (string
columns other than `id` and `source`, message contents and roles, strings nested in lists and
structs, and the `metadata` JSON string). A match is replaced by a typed placeholder and counted
under its kind; a later rule only sees what earlier rules left, so every secret is counted once
(e.g. `Bearer sk-…` counts as one `api_key`, not also as a `bearer_token`). Patterns use the
Rust `regex` syntax of Polars (no look-around). Placeholders contain none of the patterns'
characters in a matching position, so scrubbing twice changes nothing.

Exact dedup: the content key of a row is the JSON encoding of its core columns (the config's
columns besides `id, source, source_ref, quality_score, metadata`) after every string in them is
lowercased, runs of whitespace are collapsed to one space and ends are trimmed; the key's hash is
`sha256(key)[:16]` (hex), computed in DuckDB. Rows with the same hash form a cluster across all
partitions; the representative is the highest `quality_score`, then the earliest `event_time`,
then the smallest `id`, then the smallest `source_ref`.

Splits: a row's group key is its `split_group` (its `id` when the group is empty); bucket =
int(first 16 hex digits of sha256(group key)) mod `SPLIT_BUCKETS` (the same function as
`distill_assets.lib.hashing.split_bucket`); buckets below `buckets_in_test()`
(= `TEST_FRACTION * SPLIT_BUCKETS`) are `test`, the rest `train`. A group therefore never spans
splits, and a row's split never depends on which other rows exist or the order partitions were
processed in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Redaction:
    """One kind of sensitive text: a pattern and the placeholder that replaces each match.

    `replacement` may refer to capture groups (`${1}`) to keep a non-sensitive prefix.
    """

    kind: str
    pattern: str
    replacement: str


PRIVATE_KEY = Redaction(
    "private_key",
    # A block cut off before its END line is redacted to the end of the text.
    r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
    "[REDACTED_PRIVATE_KEY]",
)
API_KEY = Redaction(
    "api_key",
    r"\bsk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}"
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{22,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{35}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
    r"|\bhf_[A-Za-z0-9]{30,}"
    r"|\b[rs]k_live_[A-Za-z0-9]{20,}",
    "[REDACTED_API_KEY]",
)
JWT = Redaction(
    "jwt",
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "[REDACTED_TOKEN]",
)
BEARER_TOKEN = Redaction(
    "bearer_token",
    r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/-]{16,}=*",
    "${1}[REDACTED_TOKEN]",
)
EMAIL = Redaction(
    "email",
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    "[REDACTED_EMAIL]",
)
PHONE = Redaction(
    "phone",
    # International numbers need a leading +; North American ones need separators, so plain
    # digit runs (ids, timestamps, counts) are left alone.
    r"\+\d{1,3}[ .-]?\d{1,4}(?:[ .-]?\d{2,4}){2,4}\b"
    r"|(?:\+?1[ .-]?)?(?:\(\d{3}\)|\b\d{3})[ .-]\d{3}[ .-]\d{4}\b",
    "[REDACTED_PHONE]",
)

REDACTIONS: tuple[Redaction, ...] = (PRIVATE_KEY, API_KEY, JWT, BEARER_TOKEN, EMAIL, PHONE)

# Columns that are never scrubbed: a content hash and the source name (an enum).
UNSCRUBBED_COLUMNS: frozenset[str] = frozenset({"id", "source"})

# Dedup normalization (see module docstring).
WHITESPACE_PATTERN = r"\s+"
CONTENT_HASH_HEX_DIGITS = 16

TEST_FRACTION = 0.1
SPLIT_BUCKETS = 10_000
TRAIN_SPLIT = "train"
TEST_SPLIT = "test"
SPLITS: tuple[str, ...] = (TRAIN_SPLIT, TEST_SPLIT)


def buckets_in_test() -> int:
    """Return how many of the `SPLIT_BUCKETS` buckets belong to the test split."""
    return round(TEST_FRACTION * SPLIT_BUCKETS)
