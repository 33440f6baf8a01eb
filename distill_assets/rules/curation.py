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
partitions; the representative is the row of the most trusted contributor (`metadata.trust` of a
telemetry row, the lower of `trust_chosen` and `trust_rejected` of a telemetry pair; rows without
one rank after rows with one, and among themselves by what follows), then the highest
`quality_score`, then the earliest `event_time`, then the smallest `id`, then the smallest
`source_ref`. So when players collude, the most trusted one's row is published.

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

Parts compared together (issue 30): the configs of `NEAR_DUPLICATE_PARTS` compare each row part
by part instead of as one text: `dpo` its prompt, chosen and rejected messages; `rlds` its task
description, its action sequence (each step's action type and details; observations are not
compared) and its outcome (`success`, `failure`, or `truncated`). Each part gets its own
`MINHASH_BINS`-bin signature, interleaved bin by bin so every LSH band spans every part, and a
candidate's estimate is its least similar part's: two pairs sharing a prompt (and even the chosen
side) but not the rejected one are never near duplicates, nor are two plays of one task with other
actions or another outcome. A row with an empty part is never a near duplicate. Their embedding is
the concatenation of the parts' unit embeddings scaled by 1/sqrt(parts), so its cosine is the mean
of the parts' cosines: above 0.99 with three parts, every part is above 0.97.

Semantic duplicates (docs/curation-and-release.md#dedup, cosine > 0.99 is a duplicate): rows left
after near-dedup whose embeddings (the project's embedder, over the near-duplicate text, or its
parts) have cosine > `SEMANTIC_DUPLICATE_COSINE` are clustered the same way, in every config but
`SEMANTIC_SKIPPED_CONFIGS` (episodes: their actions are numbers, not language). Up to
`SEMANTIC_EXACT_LIMIT` rows all pairs are compared exactly (blocked matrix products); above it
candidates come from random-hyperplane LSH (`SEMANTIC_LSH_BANDS` bands of `SEMANTIC_LSH_BITS` sign
bits), always verified by the exact cosine.

Decontamination: every string field of every row of every evaluation set (`DISTILL_EVAL_SETS`,
`*.jsonl` and `*.parquet`) is eval text; a row sharing a `CONTAMINATION_NGRAM_WORDS`-word n-gram
(same words as near-dup shingles) with any eval text is removed as `contaminated`, naming the first
eval file (by name) it matched. A text shorter than the n-gram is one n-gram of all its words, so
a short eval question contaminates a row only when the row's whole text is that question.

Quality gates: `QUALITY_GATES` gives per config the minimum `quality_score` and the keys of the
row's `metadata` JSON that must be `true`; a row failing either is removed as `below_threshold`.
So is a row whose published text holds a replacement character `REPLACEMENT_CHAR` (U+FFFD: bytes
its producer or the raw reader could not decode as UTF-8; the reader counts those lines as
`utf8_replaced` in the ingest metadata): its text is not what was said, and a model trained on it
learns to emit U+FFFD.

Splits: a row's group key is its `split_group` (its `id` when the group is empty). Over the
published rows of every config at once, groups whose rows share a normalized prompt
(`SPLIT_PROMPT_COLUMNS`, normalized as dedup normalizes) or a source record (`source`,
`source_ref`) are one group, named by its smallest member (rows record `split_by = "merged"`).
bucket = int(first 16 hex digits of sha256(name)) mod `SPLIT_BUCKETS` (the same function as
`distill_assets.lib.hashing.split_bucket`); buckets below `buckets_in_test()`
(= `TEST_FRACTION * SPLIT_BUCKETS`) are `test`, the rest `train`. No exceptions (issue 26): a
group never spans splits, a source record is in one split in every config built from it, an
identical prompt is in one split in every config, and a config whose groups all hash to one side
has one split.
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
    # a validator a match must pass to be redacted (`luhn`, `iban`), computed only on the
    # distinct candidates
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
    # Vendor key formats, as a class: the prefixes of detect-secrets' vendor plugins (AWS,
    # GitHub, GitLab, Slack tokens and webhooks, Stripe live and test keys, Square, SendGrid,
    # Twilio, Mailchimp, npm, PyPI, Discord, Telegram, Artifactory, OpenAI) plus Anthropic,
    # Google and Hugging Face. Test-mode keys (`sk_test_…`) are redacted too: they open a real
    # account's sandbox.
    r"\bsk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_-]{20,}"
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{22,}"
    r"|\bgl(?:pat|dt|ptt|rt|soat|cbt|ft|imt|agent)-[A-Za-z0-9_-]{20,}"
    r"|\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"
    r"|\bAIza[0-9A-Za-z_-]{35}"
    r"|\bxox[abposre]-[A-Za-z0-9-]{10,}"
    r"|hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"
    r"|\bhf_[A-Za-z0-9]{30,}"
    r"|\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,43}"
    r"|\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"
    r"|\b(?:AC|SK)[a-f0-9]{32}\b"
    r"|\b[0-9a-f]{32}-us[0-9]{1,2}\b"
    r"|\bnpm_[A-Za-z0-9]{36}\b"
    r"|\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"
    r"|\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}"
    r"|\b\d{8,10}:AA[0-9A-Za-z_-]{33}\b"
    r"|\bAKC[A-Za-z0-9]{10,}",
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
AUTH_HEADER = Redaction(
    "auth_header",
    # The credentials of an `Authorization`/`Proxy-Authorization` header (or a `headers` entry)
    # in any scheme (`Basic <base64>`, `Digest …`, `token …`, `ApiKey …`): 6+ characters; with
    # no scheme, 6+ characters holding a digit or symbol (`Authorization: required` stays).
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?"
    r"(?:basic|bearer|digest|token|negotiate|ntlm|apikey|api-key|sso-key|key|hmac)\s+)"
    r"[A-Za-z0-9._~+/=:,-]{6,}"
    r"|\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)"
    r"[A-Za-z._~-]*[0-9+/=:][A-Za-z0-9._~+/=:,-]{5,}",
    "${1}${2}[REDACTED_TOKEN]",
)
EMAIL = Redaction(
    "email",
    # The `@` plain or encoded, as a class: URL (`%40`), HTML entities (`&#64;`, `&#x40;`,
    # `&commat;`) and JSON/JavaScript escapes (`\u0040`).
    r"[A-Za-z0-9._%+-]+(?:@|%40|&#0*64;|(?i:&#x0*40;|&commat;|\\u0040))"
    r"[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
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
    # The password may itself hold `@` (the last `@` before the path ends the user info).
    r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/:@\[\]]+:[^\s/]+@",
    "${1}[REDACTED_CREDENTIALS]@",
)
# no `&` or `;`: they end a value in query and connection strings
_SECRET_VALUE_CHARS = r"A-Za-z0-9+/=_!#$%^*~@?-"
_SECRET_SYMBOLS = r"0-9+/=!#$%^*~@?"
SECRET_ASSIGNMENT = Redaction(
    "secret_assignment",
    # `key=value` secrets, quoted or not, in code, env files, INI, YAML, headers and connection
    # strings (`Server=…;Password=…;`, `host=… password=…`, `?user=…&password=…`). The key is any
    # name ending in a secret word (`aws_secret_access_key`, `DB_PASSWORD`, `x-api-key`,
    # `AccountKey`); `max_tokens` or `token_count` end in another word and stay. The value must
    # hold a digit or symbol (a high-entropy proxy): 4+ characters for a password
    # (`password=abc123`), 7+ for other secrets. Letters-only values (`token: tokenizer`) and
    # code (`password = os.environ["PW"]`, `secret=get_secret()`) carry training value and stay.
    r"(?i)\b((?:[\w.-]*?(?:password|passwd|pwd|passphrase))[\"']?\s*[:=]\s*[\"']?)"
    rf"(?:[A-Za-z_-]*[{_SECRET_SYMBOLS}][{_SECRET_VALUE_CHARS}]{{2,}}"
    rf"|[A-Za-z_-]{{3,}}[{_SECRET_SYMBOLS}][{_SECRET_VALUE_CHARS}]*)"
    r"|\b((?:[\w.-]*?(?:secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"account[_-]?key|shared[_-]?access[_-]?key|signing[_-]?key|encryption[_-]?key|"
    r"master[_-]?key|credentials?))[\"']?\s*[:=]\s*[\"']?)"
    rf"(?:[A-Za-z_-]*[{_SECRET_SYMBOLS}][{_SECRET_VALUE_CHARS}]{{6,}}"
    rf"|[A-Za-z_-]{{6,}}[{_SECRET_SYMBOLS}][{_SECRET_VALUE_CHARS}]*)",
    "${1}${2}[REDACTED_SECRET]",
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
    # in groups of four separated by a space, dot or dash (`DE89 3704 0044 0532 0130 00`), in
    # either case (`de89370400440532013000`); a candidate must have its country's length
    # (`IBAN_LENGTHS`) and pass the ISO 13616 mod-97 check. Checked before cards and phones,
    # whose patterns would otherwise take its digits.
    r"(?i)\b(?:AD|AE|AL|AT|AZ|BA|BE|BG|BH|BR|BY|CH|CR|CY|CZ|DE|DK|DO|EE|EG|ES|FI|FO|FR|GB|GE|GI|GL|"
    r"GR|GT|HR|HU|IE|IL|IQ|IS|IT|JO|KW|KZ|LB|LC|LI|LT|LU|LV|MC|MD|ME|MK|MR|MT|MU|NL|NO|PK|PL|PS|"
    r"PT|QA|RO|RS|SA|SC|SE|SI|SK|SM|ST|SV|TL|TN|TR|UA|VA|VG|XK)\d{2}"
    r"(?:[ .-]?[A-Z0-9]{4}){2,7}(?:[ .-]?[A-Z0-9]{1,3})?\b",
    "[REDACTED_IBAN]",
    check="iban",
)
PAYMENT_CARD = Redaction(
    "payment_card",
    # 13-19 digits starting 2-6 (the card networks' ranges), plain or in the printed groupings
    # (4-4-4-4[-3], 4-6-4/5) separated by spaces, dashes or dots, and only if the Luhn check
    # passes. The networks' published test
    # numbers (`TEST_CARD_NUMBERS`) are no one's card: code and docs that print them keep them.
    r"\b[2-6]\d{3}(?:[ .-]?\d{4}){3}(?:[ .-]?\d{3})?\b|\b[2-6]\d{3}[ .-]?\d{6}[ .-]?\d{4,5}\b"
    r"|\b[2-6]\d{12,18}\b",
    "[REDACTED_CARD]",
    check="luhn",
)
US_SSN = Redaction(
    "us_ssn",
    # Dashed only: nine plain digits are too often an id or a count. Numbers the SSA never
    # issues (area 000, 666 or 9xx, group 00, serial 0000) are not SSNs.
    r"\b(?:00[1-9]|0[1-9]\d|[1-578]\d\d|6[0-57-9]\d|66[0-57-9])-(?:0[1-9]|[1-9]\d)"
    r"-(?:000[1-9]|00[1-9]\d|0[1-9]\d\d|[1-9]\d{3})\b",
    "[REDACTED_SSN]",
)
IPV6 = Redaction(
    "ipv6",
    # The full form (8 groups) or a compressed form with `::` and at least three groups.
    # Loopback `::1` and two-group forms (`fe80::1`, indistinguishable from code like
    # `Add::Beef`) are not treated as addresses; the documentation prefix 2001:db8::/32 is
    # kept (`keep`).
    r"(?i)\b(?:(?:[0-9a-f]{1,4}:){7}[0-9a-f]{1,4}"
    r"|(?:[0-9a-f]{1,4}:){2,6}(?::[0-9a-f]{1,4}){1,5}"
    r"|(?:[0-9a-f]{1,4}:){1,5}(?::[0-9a-f]{1,4}){2,6}"
    r"|(?:[0-9a-f]{1,4}:){3,7}:)(?:\b|$)",
    "[REDACTED_IPV6]",
    keep=r"(?i)(^|[^\w:])(2001:0{0,1}db8)(:[0-9a-f:]*)",
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
    AUTH_HEADER,
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

# IBAN length per country (ISO 13616 registry), the `iban` check's first test.
IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip

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

# Withheld rows (issue 28): a row in which the independent scan finds what the scrubber missed is
# left out of the release and listed; more withheld rows in one config than the larger of
# `WITHHELD_MAX_ROWS` and `WITHHELD_MAX_SHARE` of its rows (published plus withheld) mean the
# scrubber fails systematically, and the release is blocked instead. The share keeps the
# threshold meaningful at a million rows a day; the floor keeps a small release from blocking
# on one or two finds.
WITHHELD_MAX_ROWS = 20
WITHHELD_MAX_SHARE = 0.0001

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
# configs whose rows are compared part by part (see the module docstring): a preference pair's
# signal is its rejected side as much as its prompt, and an episode's is its actions and outcome,
# so two rows are near or semantic duplicates only when every part is; rows sharing a prompt (or
# a task) with another choice, alternative or outcome are distinct training data
NEAR_DUPLICATE_PARTS: dict[str, tuple[str, ...]] = {
    "dpo": ("prompt", "chosen", "rejected"),
    "rlds": ("task_description", "actions", "outcome"),
}
SHINGLE_WORDS = 3
MINHASH_BINS = 128
LSH_BANDS = 32
LSH_ROWS = 4
NEAR_DUPLICATE_JACCARD = 0.8
NEAR_DUPLICATE_MIN_ESTIMATE = 0.75

# Semantic duplicates (docs/curation-and-release.md#dedup).
SEMANTIC_DUPLICATE_COSINE = 0.99
# configs left out of semantic dedup: an `rlds` episode's actions are numbers, not language, and
# the text embedder sees two plays of one task with the same outcome as one text whatever their
# action values (cosine > 0.99 for every pair of the samples' wheel episodes); episodes are near
# duplicates by their word shingles instead, which split every number into words, so a replay of
# the same actions collapses and a play with other values does not
SEMANTIC_SKIPPED_CONFIGS: tuple[str, ...] = ("rlds",)
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


# Text holding this character fails the quality gate (see the module docstring).
REPLACEMENT_CHAR = "\ufffd"

# The source rooms already apply their seeds' thresholds; these gates are the release's floor.
QUALITY_GATES: dict[str, QualityGate] = {
    "sft": QualityGate(min_score=0.0),
    "dpo": QualityGate(min_score=0.0),
    "instruction": QualityGate(min_score=0.0),
    "sft_tools": QualityGate(min_score=0.0),
}

# Splits (see module docstring).
SPLIT_BY_GROUP = "group"
SPLIT_BY_MERGED = "merged"
# config -> the published columns holding what a model is asked (for `messages`, all but the
# last message); rows with the same normalized prompt share a split, in every config
SPLIT_PROMPT_COLUMNS: dict[str, tuple[str, ...]] = {
    "sft": ("prompt",),
    "sft_tools": ("messages",),
    "dpo": ("prompt",),
    "instruction": ("instruction", "input"),
    "cot": ("instruction", "input"),
    "correction": ("input",),
}

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
