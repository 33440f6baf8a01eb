r"""Curation rules applied to every config before release (docs/curation-and-release.md#the-funnel).

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

Near duplicates (issue 13, docs/curation-and-release.md#dedup): the near-duplicate text of a
row is every string of its core columns except `NEAR_DUPLICATE_SKIPPED_FIELDS` and messages whose
role is in `NEAR_DUPLICATE_SKIPPED_ROLES` (shared boilerplate such as tool schemas and system
prompts would make unrelated rows look alike), joined by newlines. Its words (`\w+` runs,
lowercased) form `SHINGLE_WORDS`-word shingles; MinHash (`distill_assets.lib.minhash`,
one-permutation hashing with `MINHASH_BINS` bins) with `LSH_BANDS` bands of `LSH_ROWS` bins proposes
candidates: a pair with Jaccard 0.8 shares a band with probability 1 - (1 - 0.8^4)^32 > 0.9999999,
one with Jaccard 0.3 with probability 0.23. A candidate is kept when its estimated Jaccard (equal
bins / bins, standard deviation about 0.035 at 0.8) reaches `NEAR_DUPLICATE_MIN_ESTIMATE`, a margin
below the 0.8 target so that true pairs at 0.8 survive the estimate's noise while pairs at or below
0.5 never do. Kept links form clusters (connected components) over all history; the representative
is ranked as for exact duplicates.

Semantic duplicates (docs/curation-and-release.md#dedup, cosine > 0.99 is a duplicate): rows left
after near-dedup whose embeddings (the project's embedder, over the near-duplicate text) have
cosine > `SEMANTIC_DUPLICATE_COSINE` are clustered the same way. Up to `SEMANTIC_EXACT_LIMIT` rows
all pairs are compared exactly (blocked matrix products); above it candidates come from
random-hyperplane LSH (`SEMANTIC_LSH_BANDS` bands of `SEMANTIC_LSH_BITS` sign bits), always
verified by the exact cosine.

Decontamination: every string field of every row of every evaluation set (`DISTILL_EVAL_SETS`,
`*.jsonl` and `*.parquet`) is eval text; a row sharing a `CONTAMINATION_NGRAM_WORDS`-word n-gram
(same words as near-dup shingles) with any eval text is removed as `contaminated`, naming the first
eval file (by name) it matched. A text shorter than the n-gram is one n-gram of all its words, so
a short eval question contaminates a row only when the row's whole text is that question.

Quality gates: `QUALITY_GATES` gives per config the minimum `quality_score` and the keys of the
row's `metadata` JSON that must be `true`; a row failing either is removed as `below_threshold`.

Splits: a row's group key is its `split_group` (its `id` when the group is empty). In a config of
at least `MIN_ROWS_FOR_BOTH_SPLITS` published rows, a group holding more than `MAX_GROUP_SHARE` of
them (e.g. every escalation of one capture session) is split by a finer key instead,
`group + "/" + id`, and its rows record `split_by = "row"`. bucket = int(first 16 hex digits of
sha256(key)) mod `SPLIT_BUCKETS` (the same function as `distill_assets.lib.hashing.split_bucket`);
buckets below `buckets_in_test()`
(= `TEST_FRACTION * SPLIT_BUCKETS`) are `test`, the rest `train`. A config with at least
`MIN_ROWS_FOR_BOTH_SPLITS` rows and an empty split moves the key with the lowest bucket (test
empty) or the highest bucket (train empty) across, recorded as `split_by = "moved"`. Except for
these two documented cases, a group never spans splits and a row's split depends only on its key.
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
    # matches of `keep` (three capture groups: prefix, head, tail) are protected from `pattern`:
    # they stay as they are
    keep: str = ""
    # how many times the rule is applied; a pattern that consumes a delimiter on both sides
    # misses every second item of a list like `a b c` in one pass, never in two
    passes: int = 1
    # a validator a match must pass to be redacted (`luhn`), computed only on the candidates
    check: str = ""


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

URL_CREDENTIALS = Redaction(
    "url_credentials",
    # `scheme://user:password@host` with any host (a name, an IP address, localhost): the user
    # and password go, the scheme and host stay. `scheme://user@host` (ssh://git@…) is kept.
    r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/:@\[\]]+:[^\s/@]+@",
    "${1}[REDACTED_CREDENTIALS]@",
)
SECRET_ASSIGNMENT = Redaction(
    "secret_assignment",
    # `password=…`, `token: …`, `"api_key": "…"`: a value of 7+ characters holding at least one
    # digit or symbol (a high-entropy proxy). Values made of letters only (`token: tokenizer`) and
    # code (`password = os.environ["PW"]`, `secret=get_secret()`) carry training value and stay.
    r"(?i)\b((?:password|passwd|pwd|passphrase|secret|client_secret|token|access_token|"
    r"refresh_token|auth_token|api[_-]?key|access[_-]?key|private[_-]?key)[\"']?\s*[:=]\s*[\"']?)"
    r"(?:[A-Za-z_-]*[0-9+/=!#$%^&*~][A-Za-z0-9+/=_!#$%^&*~-]{6,}"
    r"|[A-Za-z_-]{6,}[0-9+/=!#$%^&*~][A-Za-z0-9+/=_!#$%^&*~-]*)",
    "${1}[REDACTED_SECRET]",
)
HOME_PATH = Redaction(
    "home_path",
    # The user name of `/home/<u>/`, `/Users/<u>/`, `C:/Users/<u>/` and `C:\Users\<u>\` (one or two
    # backslashes, as in JSON text); the rest of the path keeps its training value.
    r"(/home/|/Users/|(?i:[a-z]:(?:\\{1,2}|/)users(?:\\{1,2}|/)))[^/\\\s\"'\[<>:|*?`$]+",
    "${1}[REDACTED_USER]",
)
IBAN = Redaction(
    "iban",
    # A country code of the IBAN registry, two check digits, then 11-30 alphanumerics, plain or
    # in groups of four (`DE89 3704 0044 0532 0130 00`). Checked before cards and phones, whose
    # patterns would otherwise take its digits.
    r"\b(?:AD|AE|AL|AT|AZ|BA|BE|BG|BH|BR|BY|CH|CR|CY|CZ|DE|DK|DO|EE|EG|ES|FI|FO|FR|GB|GE|GI|GL|"
    r"GR|GT|HR|HU|IE|IL|IQ|IS|IT|JO|KW|KZ|LB|LC|LI|LT|LU|LV|MC|MD|ME|MK|MR|MT|MU|NL|NO|PK|PL|PS|"
    r"PT|QA|RO|RS|SA|SC|SE|SI|SK|SM|ST|SV|TL|TN|TR|UA|VA|VG|XK)\d{2}"
    r"(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,3})?\b",
    "[REDACTED_IBAN]",
)
PAYMENT_CARD = Redaction(
    "payment_card",
    # 13-19 digits starting 2-6 (the card networks' ranges), plain or in the printed groupings
    # (4-4-4-4[-3], 4-6-4/5), and only if the Luhn check passes. The networks' published test
    # numbers (`TEST_CARD_NUMBERS`) are no one's card: code and docs that print them keep them.
    r"\b[2-6]\d{3}(?:[ -]?\d{4}){3}(?:[ -]?\d{3})?\b|\b[2-6]\d{3}[ -]?\d{6}[ -]?\d{4,5}\b"
    r"|\b[2-6]\d{12,18}\b",
    "[REDACTED_CARD]",
    check="luhn",
)
US_SSN = Redaction(
    "us_ssn",
    # Dashed only: nine plain digits are too often an id or a count.
    r"\b\d{3}-\d{2}-\d{4}\b",
    "[REDACTED_SSN]",
)
IPV6 = Redaction(
    "ipv6",
    # The full form (8 groups) or a compressed form with `::` and at least three groups.
    # Loopback `::1` and two-group forms (`fe80::1`, indistinguishable from code like
    # `Add::Beef`) are not treated as addresses.
    r"(?i)\b(?:(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}"
    r"|(?:[0-9a-f]{1,4}:){2,6}(?::[0-9a-f]{1,4}){1,5}"
    r"|(?:[0-9a-f]{1,4}:){1,5}(?::[0-9a-f]{1,4}){2,6}"
    r"|(?:[0-9a-f]{1,4}:){3,7}:)(?:\b|$)",
    "[REDACTED_IPV6]",
)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
IPV4 = Redaction(
    "ipv4",
    # Public and private addresses. Kept (`keep`): loopback 127.0.0.0/8, 0.0.0.0/8 and the
    # documentation ranges 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 (they identify no one
    # and carry meaning in code). A dotted quad inside a longer dotted run (`1.2.3.4.5`) or
    # glued to a word (`v1.2.3.4`) is a version number and stays.
    rf"(^|[^\w.]){_OCTET}(?:\.{_OCTET}){{3}}(\.?(?:[^\w.]|$))",
    "${1}[REDACTED_IPV4]${2}",
    keep=r"(^|[^\w.])(127|0|192\.0\.2|198\.51\.100|203\.0\.113)((?:\.\d{1,3}){1,3})\b",
    passes=2,
)

REDACTIONS: tuple[Redaction, ...] = (
    PRIVATE_KEY,
    API_KEY,
    JWT,
    BEARER_TOKEN,
    URL_CREDENTIALS,
    SECRET_ASSIGNMENT,
    EMAIL,
    HOME_PATH,
    IBAN,
    PAYMENT_CARD,
    US_SSN,
    IPV6,
    IPV4,
    PHONE,
)

# Card numbers the networks publish for testing (digits only): never redacted.
TEST_CARD_NUMBERS: frozenset[str] = frozenset(
    {
        "4111111111111111",
        "4242424242424242",
        "4012888888881881",
        "4000056655665556",
        "5555555555554444",
        "5105105105105100",
        "2223003122003222",
        "378282246310005",
        "371449635398431",
        "6011111111111117",
        "6011000990139424",
        "3566002020360505",
    }
)

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


# Near duplicates (see module docstring).
# columns and struct fields left out of the near-duplicate text: shared tool schemas, message
# roles, tool-call ids and types (boilerplate or random, not content)
NEAR_DUPLICATE_SKIPPED_FIELDS: frozenset[str] = frozenset(
    {"tools", "role", "type", "id", "tool_call_id"}
)
NEAR_DUPLICATE_SKIPPED_ROLES: tuple[str, ...] = ("system",)
# configs that get exact dedup only: a preference pair's signal is its rejected side and an
# episode's is its rewards, terminal flags and actions, so two rows whose text is nearly the same
# (the same prompt and choice against another alternative; the same task played to a different
# outcome) are distinct training data, not near or semantic duplicates
EXACT_DEDUP_ONLY: frozenset[str] = frozenset({"dpo", "rlds"})
SHINGLE_WORDS = 3
MINHASH_BINS = 128
LSH_BANDS = 32
LSH_ROWS = 4
NEAR_DUPLICATE_JACCARD = 0.8
NEAR_DUPLICATE_MIN_ESTIMATE = 0.75

# Semantic duplicates (docs/curation-and-release.md#dedup).
SEMANTIC_DUPLICATE_COSINE = 0.99
# above this many rows, random-hyperplane LSH (bands of bits; a pair at cosine 0.99 shares a band
# with probability > 0.999) replaces exact search; candidates are verified exactly either way
SEMANTIC_EXACT_LIMIT = 10_000
SEMANTIC_LSH_BANDS = 12
SEMANTIC_LSH_BITS = 16

# Decontamination.
CONTAMINATION_NGRAM_WORDS = 13
EVAL_SET_SUFFIXES: tuple[str, ...] = (".jsonl", ".parquet")


@dataclass(frozen=True)
class QualityGate:
    """The minimum quality score of a config and the metadata flags its rows must have true."""

    min_score: float = 0.0
    required_flags: tuple[str, ...] = ()


# The source rooms already apply their seeds' thresholds; these gates are the release's floor.
QUALITY_GATES: dict[str, QualityGate] = {
    "sft": QualityGate(min_score=0.0),
    "dpo": QualityGate(min_score=0.0),
    "instruction": QualityGate(min_score=0.0),
    "sft_tools": QualityGate(min_score=0.0),
}

# Splits (see module docstring).
MAX_GROUP_SHARE = 0.2
MIN_ROWS_FOR_BOTH_SPLITS = 20
SPLIT_BY_GROUP = "group"
SPLIT_BY_ROW = "row"
SPLIT_BY_MOVED = "moved"

# Removal reasons, in funnel order.
EXACT_DUPLICATE = "exact_duplicate"
NEAR_DUPLICATE = "near_duplicate"
SEMANTIC_DUPLICATE = "semantic_duplicate"
CONTAMINATED = "contaminated"
BELOW_THRESHOLD = "below_threshold"
DUPLICATE_REASONS: tuple[str, ...] = (EXACT_DUPLICATE, NEAR_DUPLICATE, SEMANTIC_DUPLICATE)
REMOVAL_REASONS: tuple[str, ...] = (
    EXACT_DUPLICATE,
    NEAR_DUPLICATE,
    SEMANTIC_DUPLICATE,
    CONTAMINATED,
    BELOW_THRESHOLD,
)


def buckets_in_test() -> int:
    """Return how many of the `SPLIT_BUCKETS` buckets belong to the test split."""
    return round(TEST_FRACTION * SPLIT_BUCKETS)
