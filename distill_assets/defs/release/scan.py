r"""The independent scan of a release candidate for secrets and personal data.

It shares no pattern with the scrubber (`rules/curation.py`), so it can catch what the scrubber
misses: secrets are found by the `detect-secrets` plugins (every plugin but the two generic
high-entropy ones, which flag the hex content hashes every row carries), phone numbers by
`phonenumbers` (numbers valid for their region), and the other personal data by candidate
patterns of its own followed by a validator: `ipaddress` for IPv4/IPv6, network prefix, length and
Luhn for payment cards, the SSA rules for US SSNs, ISO 13616 mod 97 for IBANs; secrets the
plugins leave to quoted code (unquoted `key=value` secrets, connection-string passwords,
`Authorization` headers, vendor test keys) by checks of its own. Personal data is also looked for
in the decoded form of each line (URL `%xx`, HTML entities, `\u0040`). It applies the
documented keep decisions of the scrubber as policy, not as patterns: loopback, unspecified,
link-local, multicast and documentation addresses and the networks' published test card numbers
are not findings.

The text leaves of every row are gathered and split into lines in Polars; the validators and
plugins run in Python once per distinct line that a vectorized relaxation of their own patterns
marks as a candidate (`scan_prefilter.py`), so they see a small share of a release's lines.
"""

from __future__ import annotations

import html
import ipaddress
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping

import phonenumbers
import polars as pl
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import transient_settings

from distill_assets.defs.release import scan_prefilter as prefilter
from distill_assets.lib.sql import connect
from distill_assets.lib.text import text_leaves
from distill_assets.rules.curation import IBAN_LENGTHS, TEST_CARD_NUMBERS

# detect-secrets plugins left out: they flag any long hex/base64 string (ids, content hashes)
GENERIC_ENTROPY_PLUGINS = frozenset({"Base64HighEntropyString", "HexHighEntropyString"})
PHONE_REGION = "US"
FINDING_SCHEMA = {"id": pl.String(), "column": pl.String(), "type": pl.String()}
# what the detectors found in one candidate line, by the SHA-256 of the line (never its text)
LINE_MEMORY_SCHEMA = {"digest": pl.String(), "types": pl.List(pl.String())}

_EMAIL = re.compile(r"(?<![\w.+%-])[\w.+%-]+@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,}(?![\w-])")
_IPV4 = re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?![\w]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?![\w:])")
# a card number is a token of its own: a digit run glued to a letter, digit or `_` is part of
# a longer token (a hex hash, an id such as `16d4655364312022`), the scrubber's `\b` rule
_CARD = re.compile(r"(?<![\w.-])\d(?:[ .-]?\d){12,18}(?![\w])")
_SSN = re.compile(r"(?<![\d-])(\d{3})[- ](\d{2})[- ](\d{4})(?![\d-])")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
# lowercase or dotted/dashed IBANs: only compact or in groups of four (prose is not an IBAN)
_IBAN_ANY_CASE = re.compile(
    r"(?<![\w.-])[A-Za-z]{2}\d{2}(?:[ .-]?[A-Za-z0-9]{4}){2,7}(?:[ .-]?[A-Za-z0-9]{1,3})?(?![\w])"
)
# `<name ending in a secret word> = <value>`, quoted or not; the word is group 1, the value 2
_ASSIGNMENT = re.compile(
    r"(?<![\w])[\w.-]*?(password|passwd|pwd|passphrase|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|account[_-]?key|credentials?)[\"']?[ \t]*[:=][ \t]*[\"']?([^\s\"'`;&,]+)",
    re.I,
)
_PASSWORD_WORDS = frozenset({"password", "passwd", "pwd", "passphrase"})
_AUTH_HEADER = re.compile(
    r"authorization[\"']?\s*[:=]\s*[\"']?(?:([A-Za-z][\w-]*)\s+(?=\S))?([^\s\"',;]+)", re.I
)
# vendor keys the detect-secrets plugins do not know: Stripe test mode (the plugin knows live
# keys), OpenAI project and Anthropic keys, Hugging Face, Google API keys, bare npm tokens
_VENDOR_KEY = re.compile(
    r"\b(?:(?:sk|rk)_test_[0-9A-Za-z]{16,}|sk-(?:proj-|ant-)[\w-]{20,}|hf_[A-Za-z0-9]{30,}"
    r"|AIza[\w-]{35}|npm_[A-Za-z0-9]{36})"
)
_HOME = re.compile(r"(?:/home/|/Users/|\b[A-Za-z]:\\{1,2}Users\\{1,2})([^/\\\s\"'<>|]+)", re.I)
_URL_USERINFO = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://([^\s/@]+):([^\s/@]+)@")
_PLACEHOLDER = re.compile(r"^\[REDACTED_[A-Z_]+\]$")
_WORD = re.compile(r"\w")
# the end of a field name naming an identifier, then its `:`/`=` and an opening quote, right
# before a value: `run_id":"`, `"id": `, `runId=`, `run:` (a provenance ref's segment)
IDENTIFIER_LABEL = (
    r"(?:(?:^|[^A-Za-z0-9])(?i:id|ids|ref|key|run|step|line|episode|event|session|trace|turn)"
    r"|[a-z](?:Id|ID|Ref|Key))[\"']?[ \t]*[:=][ \t]*[\"']?$"
)
_IDENTIFIER_LABEL = re.compile(IDENTIFIER_LABEL)
# how far before a digit run its label is looked for (a line can hold many runs)
LABEL_WINDOW = 64
# what may follow an identifier's value: its closing quote, the next field or ref segment, the end
_VALUE_END = re.compile(r"[\"'/,;}\]+&|\s]|$")
_DOCUMENTATION = tuple(
    ipaddress.ip_network(n)
    for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)
# (first digits, lengths) of the card networks (Visa, Mastercard, Amex, Discover, JCB, Diners,
# UnionPay)
_CARD_NETWORKS = (
    (("4",), (13, 16, 19)),
    (tuple(str(n) for n in (*range(51, 56), *range(2221, 2721))), (16,)),
    (("34", "37"), (15,)),
    (("6011", "65", *(str(n) for n in range(644, 650))), (16, 19)),
    (tuple(str(n) for n in range(3528, 3590)), (16, 19)),
    (("36", "38", *(str(n) for n in range(300, 306))), (14, 16)),
    (("62",), (16, 17, 18, 19)),
)


def luhn_ok(digits: str) -> bool:
    """Return whether a digit string passes the Luhn check."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def is_card_number(candidate: str) -> bool:
    """Whether a digit run (separators allowed) is a payment card: network prefix, length, Luhn."""
    digits = re.sub(r"\D", "", candidate)
    if digits in TEST_CARD_NUMBERS:
        return False
    network = any(
        digits.startswith(prefixes) and len(digits) in lengths
        for prefixes, lengths in _CARD_NETWORKS
    )
    return network and luhn_ok(digits)


def is_ssn(area: str, group: str, serial: str) -> bool:
    """Whether the parts can be a US SSN (SSA: no area 000, 666 or 9xx; no 00 group; no 0000)."""
    return area not in {"000", "666"} and area[0] != "9" and group != "00" and serial != "0000"


def is_iban(candidate: str) -> bool:
    """Whether a candidate is an IBAN: its country's registry length, then ISO 13616 mod 97 == 1.

    Without the registry one letter-letter-digit-digit run in 97 passes by chance (a hex id such
    as `ff16ef4b7867c0e4` did), so the country code and length come first.
    """
    compact = candidate.replace(" ", "")
    if len(compact) != IBAN_LENGTHS.get(compact[:2], 0):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _is_any_case_iban(match: re.Match[str]) -> bool:
    if _IBAN.fullmatch(match.group()):
        return False  # the uppercase pattern already judged it
    candidate = re.sub(r"[ .-]", "", match.group())
    digits = sum(c.isdigit() for c in candidate[4:])
    return digits * 2 >= len(candidate) - 4 and is_iban(candidate.upper())


def is_secret_value(word: str, value: str) -> bool:
    """Whether a value assigned to a name ending in `word` is a secret, not code or a word.

    Passwords: 4+ characters, secrets and keys: 8+; with a digit or symbol; no placeholder,
    call, index, template or variable (`os.environ[`, `get()`, `${X}`, `<pw>`).
    """
    minimum = 4 if word.lower() in _PASSWORD_WORDS else 8
    return (
        len(value) >= minimum
        and not value.startswith("[REDACTED")
        and not any(c in value for c in "()[]{}<>$")
        and any(not c.isalpha() for c in value)
        and not value.replace(".", "").isdigit()
    )


def is_auth_credentials(scheme: str | None, value: str) -> bool:
    """Whether an `Authorization` header value is credentials (not a placeholder or a word)."""
    if value.startswith("[REDACTED") or len(value) < 6:
        return False
    return scheme is not None or any(not c.isalpha() for c in value)


def decoded(line: str) -> str:
    r"""Return `line` with URL escapes, HTML entities and `\u0040` decoded (for PII checks)."""
    return html.unescape(urllib.parse.unquote(line)).replace("\\u0040", "@")


def is_personal_address(candidate: str) -> bool:
    """Whether an IP address identifies a host (not loopback/documentation/link-local/...)."""
    try:
        address = ipaddress.ip_address(candidate)
    except ValueError:
        return False
    reserved = (
        address.is_loopback
        or address.is_unspecified
        or address.is_link_local
        or address.is_multicast
        or any(address in network for network in _DOCUMENTATION)
    )
    if isinstance(address, ipaddress.IPv4Address):
        reserved = reserved or candidate.startswith("0.")
    return not reserved


def _is_ipv6(match: re.Match[str]) -> bool:
    value = match.group()
    return ("::" in value or value.count(":") == 7) and is_personal_address(value)


# kind → candidate pattern and the validator a candidate must pass to be a finding
VALIDATORS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], bool]], ...] = (
    ("email", _EMAIL, lambda m: not _PLACEHOLDER.match(m.group())),
    ("ipv4", _IPV4, lambda m: is_personal_address(m.group())),
    ("ipv6", _IPV6, _is_ipv6),
    ("payment_card", _CARD, lambda m: is_card_number(m.group())),
    ("us_ssn", _SSN, lambda m: is_ssn(*m.groups())),
    ("iban", _IBAN, lambda m: is_iban(m.group())),
    ("iban", _IBAN_ANY_CASE, _is_any_case_iban),
    ("home_path", _HOME, lambda m: not m.group(1).startswith("[REDACTED")),
    ("url_credentials", _URL_USERINFO, lambda m: not _PLACEHOLDER.match(m.group(1))),
)


# secrets the detect-secrets plugins leave out, with the check a match must pass
SECRET_CHECKS: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], bool]], ...] = (
    ("secret:assignment", _ASSIGNMENT, lambda m: is_secret_value(m.group(1), m.group(2))),
    ("secret:auth_header", _AUTH_HEADER, lambda m: is_auth_credentials(m.group(1), m.group(2))),
    ("secret:vendor_key", _VENDOR_KEY, lambda _m: True),
)


def validator_findings(text: str) -> Iterator[str]:
    """Yield the kind of every personal datum the validators find in the decoded `text`."""
    text = decoded(text)
    for kind, pattern, valid in VALIDATORS:
        for match in pattern.finditer(text):
            if valid(match):
                yield kind


def is_identifier_digits(text: str, start: int, end: int) -> bool:
    """Whether the plain digit run `text[start:end]` is an identifier, not a phone number.

    It is when it is glued to a letter, digit or `_` (a part of a longer token:
    `ep_glaze_bowl_112634929356`, `s_13103900`), or when it is the whole value of a field named
    as an identifier (`IDENTIFIER_LABEL`: `"run_id":"5296837415"`, `run:5296837415/step:0`).
    A run with a `+`, a separator or parentheses is written as a phone number and stays a
    candidate, and so does a bare run in prose or under any other name (`"phone":"4155550123"`).
    """
    glued = (start > 0 and _WORD.match(text[start - 1])) or (
        end < len(text) and _WORD.match(text[end])
    )
    if glued:
        return True
    window = max(0, start - LABEL_WINDOW)
    labelled = _IDENTIFIER_LABEL.search(text, window, start) is not None
    return labelled and _VALUE_END.match(text, end) is not None


def phone_findings(text: str) -> Iterator[str]:
    """Yield `phone` per number `phonenumbers` finds valid in the decoded `text`.

    A plain digit run that is an identifier (`is_identifier_digits`) is not a number.
    """
    text = decoded(text)
    matcher = phonenumbers.PhoneNumberMatcher(text, PHONE_REGION, phonenumbers.Leniency.VALID)
    for match in matcher:
        plain = match.raw_string.isascii() and match.raw_string.isdigit()
        if not (plain and is_identifier_digits(text, match.start, match.end)):
            yield "phone"


def pii_findings(text: str) -> Iterator[str]:
    """Yield the type of every personal datum the validators and phonenumbers find in `text`.

    The validators read the decoded text (`decoded`): `jane%40example.org` is an e-mail.
    """
    yield from validator_findings(text)
    yield from phone_findings(text)


def secret_findings(text: str) -> Iterator[str]:
    """Yield the type of every secret the detect-secrets plugins find in `text`, line by line.

    Call inside `detect_secrets_settings()`.
    """
    for line in text.splitlines():
        for secret in scan_line(line):
            yield f"secret:{secret.type}"
        for kind, pattern, valid in SECRET_CHECKS:
            for match in pattern.finditer(line):
                if valid(match):
                    yield kind


def detect_secrets_settings() -> transient_settings:
    """Return the detect-secrets settings context of the scan (see `GENERIC_ENTROPY_PLUGINS`)."""
    plugins = [
        {"name": cls.__name__}
        for cls in get_mapping_from_secret_type_to_class().values()
        if cls.__name__ not in GENERIC_ENTROPY_PLUGINS
    ]
    return transient_settings({"plugins_used": plugins})


def text_cells(frame: pl.DataFrame, columns: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Return `(id, column, text)` for every non-empty string of `columns`."""
    parts = [
        frame.select(
            pl.col("id"),
            pl.lit(name).alias("column"),
            text_leaves(pl.col(name), dtype).alias("text"),
        )
        .explode("text")
        .filter(pl.col("text").str.len_bytes() > 0)
        for name, dtype in columns.items()
    ]
    if not parts:
        return pl.DataFrame(schema={"id": pl.String(), "column": pl.String(), "text": pl.String()})
    return pl.concat(parts)


# str.splitlines()' separators but `\n`, each made a `\n` (`\r\n` as one): the scan's unit is a
# line by Python's definition (a `\n` is left as it is: rewriting every one costs a copy)
LINE_BREAKS = r"\r\n?|[\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]"


def lines_of(frame: pl.DataFrame, columns: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """Return `(id, column, text)` for every non-empty line of the text `columns` of `frame`."""
    return (
        text_cells(frame, columns)
        .with_columns(pl.col("text").str.replace_all(LINE_BREAKS, "\n").str.split("\n"))
        .explode("text")
        .filter(pl.col("text").str.len_bytes() > 0)
    )


def _prefilters() -> dict[str, list[str]]:
    """Return the Rust candidate patterns of the validators and the secret checks."""
    plugins, unrelaxed = prefilter.secret_plugin_patterns(GENERIC_ENTROPY_PLUGINS)
    secrets = [*plugins, *(prefilter.rust_pattern(p) for _, p, _ in SECRET_CHECKS)]
    validators = [prefilter.rust_pattern(p) for kind, p, _ in VALIDATORS if kind != "ipv6"]
    return {
        # `_is_ipv6` wants `::` or seven colons in the match
        "validators": [*validators, IPV6_CANDIDATE],
        "secret": [prefilter.MATCH_ALL] if unrelaxed else secrets,
    }


# secret patterns per union (`prefilter.unions`); the validators and the phone flags are one each
SECRET_UNION = 4
IPV6_CANDIDATE = r"::|[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){7}"
PREFILTERS = _prefilters()
# detector group -> the function yielding the finding kinds of one line
GROUPS: dict[str, Callable[[str], Iterator[str]]] = {
    "validators": validator_findings,
    "phone": phone_findings,
    "secret": secret_findings,
}


def decoded_lines(lines: pl.Series) -> pl.Series:
    r"""Return each of `lines` as the PII detectors read it (`decoded`).

    Only a line holding a URL escape, an HTML entity or `\u0040` (`prefilter.ENCODED`) can
    decode to other text; only those are decoded, in Python.
    """
    encoded = lines.filter(lines.str.contains(prefilter.ENCODED)).unique()
    return lines.replace(encoded, [decoded(line) for line in encoded])


def candidate_lines(lines: pl.Series) -> pl.DataFrame:
    """Return the distinct `lines` some detector group may find something in, sorted.

    Columns `text` and one boolean per group of `GROUPS` (whether its detectors must read the
    line); see `scan_prefilter.py` for why a line left out cannot hold a finding. The validators
    and the phone matcher read the decoded line (`view`), so their prefilters do too.
    """
    distinct = lines.unique()
    frame = pl.DataFrame({"text": distinct, "view": decoded_lines(distinct)})
    tests = [
        ("validators", "view", prefilter.union(PREFILTERS["validators"])),
        ("phone", "view", prefilter.union(prefilter.phone_flags().values())),
        *(("secret", "text", u) for u in prefilter.unions(PREFILTERS["secret"], SECRET_UNION)),
    ]
    flags = prefilter.block_matches(frame, tests).with_columns(
        pl.col("phone") | prefilter.phone_digit_candidates(frame["view"], PHONE_REGION)
    )
    return (
        pl.concat([frame.select("text"), flags], how="horizontal")
        .filter(pl.any_horizontal(list(GROUPS)))
        .sort("text")
    )


def line_findings(candidates: pl.DataFrame) -> pl.DataFrame:
    """Return `(text, type)` per finding of the detector groups a candidate line is marked for."""
    found: list[tuple[str, str]] = []
    with detect_secrets_settings():
        for row in candidates.select("text", *GROUPS).iter_rows(named=True):
            line = row["text"]
            for group, findings in GROUPS.items():
                if row[group]:
                    found.extend((line, kind) for kind in findings(line))
    return pl.DataFrame(found, schema={"text": pl.String(), "type": pl.String()}, orient="row")


def line_digests(texts: pl.Series) -> pl.Series:
    """Return `digest`: the hex SHA-256 of each text's UTF-8 bytes, in order (in DuckDB)."""
    con = connect()
    try:
        con.register("lines", pl.DataFrame({"text": texts}).to_arrow())
        return con.sql("SELECT sha256(text) AS digest FROM lines").pl().get_column("digest")
    finally:
        con.close()


class LineMemory:
    """The detectors' findings in candidate lines already read, keyed by the line's SHA-256.

    `line_findings` is a function of the line alone (for one version of this module, the
    prefilter, the curation rules and the detector libraries: `withhold.scan_version`), so a
    line read before need not be read again: `findings` returns, for every candidate line, what
    `line_findings` returns, reading only the lines it does not know (and then knowing them).
    `known` holds earlier entries (`LINE_MEMORY_SCHEMA`, one per digest); `entries` what this
    memory answered. Lines are kept by digest only: a line with a finding never leaves the text
    it is in.
    """

    def __init__(self, known: pl.DataFrame | None = None) -> None:
        """Start from `known` entries (none when not given)."""
        self.known = known if known is not None else pl.DataFrame(schema=LINE_MEMORY_SCHEMA)
        self.answered: list[pl.DataFrame] = []

    def findings(self, candidates: pl.DataFrame) -> pl.DataFrame:
        """Return `(text, type)` of `candidates` as `line_findings(candidates)` does, same order."""
        texts = candidates.get_column("text")
        keyed = candidates.with_columns(line_digests(texts)).join(
            self.known, on="digest", how="left", maintain_order="left"
        )
        unknown = keyed.filter(pl.col("types").is_null())
        read = (
            line_findings(unknown.select(candidates.columns))
            .group_by("text", maintain_order=True)
            .agg(pl.col("type").alias("read"))
        )
        answered = keyed.join(read, on="text", how="left", maintain_order="left").select(
            "text",
            "digest",
            pl.coalesce("types", "read", pl.lit([], dtype=pl.List(pl.String()))).alias("types"),
        )
        entries = answered.select(LINE_MEMORY_SCHEMA.keys())
        self.answered.append(entries)
        self.known = pl.concat([self.known, entries.join(self.known, on="digest", how="anti")])
        return (
            answered.select("text", pl.col("types").alias("type"))
            .explode("type")
            .drop_nulls("type")
        )

    def entries(self) -> pl.DataFrame:
        """Return every line this memory answered (known or read), one row per digest, sorted."""
        if not self.answered:
            return pl.DataFrame(schema=LINE_MEMORY_SCHEMA)
        return pl.concat(self.answered).unique("digest").sort("digest")


def scan_frame(
    frame: pl.DataFrame, columns: Mapping[str, pl.DataType], memory: LineMemory | None = None
) -> pl.DataFrame:
    """Return one `(id, column, type)` row per finding in the text `columns` of `frame`.

    Texts are split into lines (no finding spans a line); the detectors read each distinct
    candidate line once (`candidate_lines`): prompts, tool descriptions and code repeat across rows.
    With a `memory`, the lines it knows are not read again (same findings, `LineMemory`).
    """
    lines = lines_of(frame, columns)
    candidates = candidate_lines(lines.get_column("text"))
    hits = line_findings(candidates) if memory is None else memory.findings(candidates)
    return lines.join(hits, on="text", how="inner").select(FINDING_SCHEMA.keys())
