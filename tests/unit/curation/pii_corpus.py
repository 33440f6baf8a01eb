"""A labelled corpus of secrets and personal data, and look-alikes that are neither.

`POSITIVES` holds, per class, texts that each contain one sensitive value (the forms the issue 28
attack published verbatim among them: unquoted `key=value` secrets, auth headers, separators in
cards and IBANs, encoded e-mails, connection strings, vendor test keys). `NEGATIVES` holds, per
category, texts that look like them but identify no one and open nothing (ids, hashes, versions,
ISBNs, timestamps, prices, code, documented keep decisions). Both detectors are measured on it:
the scrubber (a text counts as caught when scrubbing changes it) and the independent scan (when
it reports any finding).

Print the table: `.venv/bin/python -m tests.unit.curation.pii_corpus`.
"""

from __future__ import annotations

import polars as pl

from distill_assets.defs.release.scan import scan_frame
from distill_assets.lib.scrub import scrub

POSITIVES: dict[str, tuple[str, ...]] = {
    "api_key": (
        "OPENAI_API_KEY is sk-proj-abcdefghijklmnopqrstuv123",
        "use ghp_" + "A1b2C3d4E5" * 4 + " to push",
        "aws key AKIAIOSFODNN7EXAMPLE in the log",
        "stripe sk_test_4eC39HqLyjWDarjtT1zdp7dc for the sandbox",
        "stripe rk_live_51HabcdefGHIJKLmnopQRSTuv",
        "gitlab glpat-xYz12AbCdEfGhIjKlMnO token",
        "slack xoxb-123456789012-abcdefABCDEF",
        "sendgrid SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefg",
        "npm npm_abcdefghijklmnopqrstuvwxyz0123456789 publish",
        "hf hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "POST https://hooks.slack.com/services/T012ABCDE/B012ABCDE/abcdefghijklmnop1234",
        "google AIzaSyA1234567890abcdefghijklmnopqrstuv",
    ),
    "jwt": ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",),
    "private_key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7x\n-----END RSA PRIVATE KEY-----",
    ),
    "bearer_token": ("Authorization: Bearer abcdef0123456789abcdef==",),
    "auth_header": (
        "Authorization: Basic dXNlcjpwYXNzd29yZA==",
        "curl -H 'Authorization: token 0123456789abcdef0123' https://api.example.com",
        '"authorization": "Digest username=admin, response=6629fae49393a05397450978507c4ef1"',
        "Proxy-Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l",
    ),
    "url_credentials": (
        "DATABASE_URL=postgres://app:s3cretpw@db.internal:5432/app",
        "mongodb+srv://admin:p@ssw0rd@cluster0.example.net/test",
        "redis://default:hunter2@10.0.0.5:6379/0",
    ),
    "secret_assignment": (
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "password=abc123",
        "Server=db01;Database=app;User Id=sa;Password=Secr3t!;",
        "host=db port=5432 user=app password=s3cret dbname=prod",
        "jdbc:mysql://db:3306/app?user=root&password=abc12345&useSSL=true",
        "export DB_PASSWORD=hunter2!",
        'api_key: "a1b2c3d4e5f6g7h8"',
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==",
        "client_secret = 8f3kd93jd83jd8s",
    ),
    "email": (
        "mail jane.doe+x@example.co.uk today",
        "mailto:john.doe%40example.com",
        "contact: jane&#64;example.org",
        '{"to": "bob\\u0040corp.io"}',
    ),
    "home_path": ("open /home/alice/projects/x.py", r"C:\Users\bob\Desktop\notes.txt"),
    "iban": (
        "IBAN DE89 3704 0044 0532 0130 00",
        "iban de89370400440532013000 for rent",
        "pay to GB82-WEST-1234-5698-7654-32",
        "fr14.2004.1010.0505.0001.3m02.606",
    ),
    "payment_card": (
        "card 4539 1488 0343 6467",
        "card 5425-2334-3010-9903",
        "card 4539.1488.0343.6467",
        "card 4539148803436467",
    ),
    "us_ssn": ("ssn 078-05-1120",),
    "ipv4": ("from 8.8.8.8 today", "host 10.1.2.3:8080"),
    "ipv6": ("node 2a00:1450:4001:0815::200e",),
    "phone": ("call 212-736-5000 now", "call +44 20 7946 0958"),
}

NEGATIVES: dict[str, tuple[str, ...]] = {
    "uuid": ("run 550e8400-e29b-41d4-a716-446655440000", "id 6ba7b810-9dad-11d1-80b4-00c04fd430c8"),
    "git_sha": (
        "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
        "fixed in de12abcdef012345 and 4f2a9c1",
    ),
    "content_hash": (
        "id a3f5c9e1d2b4f607",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ),
    "version": ("pip install torch==2.13.0", "release v1.2.3.4 and 10.0.0.1.2", "python 3.11.14"),
    "isbn": ("ISBN 978-0-306-40615-7", "isbn 0306406152"),
    "timestamp": ("at 2026-11-19T12:30:45.123456Z", "epoch 1732406400000", "ts 1732406400.123456"),
    "price": ("total $1,234.56", "cost 4,539.14 EUR", "price 1234.5678.90"),
    "code": (
        "max_tokens=1024 temperature=0.7",
        "token: tokenizer",
        'password = os.environ["PW"]',
        "secret=get_secret()",
        "api_key = ${API_KEY}",
        "num_tokens: 123456789",
        "std::vector<int> v; a::b::c",
        "self.primary_key = user_id",
    ),
    "documentation": (
        "loopback 127.0.0.1 and 192.0.2.4 and 2001:db8::1",
        "test card 4242 4242 4242 4242",
        "ssn-like 000-12-3456",
        "ssh://git@github.com/org/repo.git",
    ),
    "prose": (
        "Authorization: required for every call",
        "Basic configuration is enough",
        "the password is at least twelve characters long",
        "at 12 noon we met in room 4521",
    ),
    "placeholders": (
        "[REDACTED_EMAIL] /home/[REDACTED_USER]/x password=[REDACTED_SECRET]",
        "Authorization: Basic [REDACTED_TOKEN]",
    ),
}


def scrubber_caught(texts: list[str]) -> list[bool]:
    """Return, per text, whether scrubbing changes it."""
    columns = {"text": pl.String()}
    out = scrub(pl.LazyFrame({"text": texts}), columns).collect()
    return [a != b for a, b in zip(texts, out.get_column("text").to_list(), strict=True)]


def scan_caught(texts: list[str]) -> list[bool]:
    """Return, per text, whether the independent scan reports a finding in it."""
    ids = [str(n) for n in range(len(texts))]
    found = scan_frame(pl.DataFrame({"id": ids, "text": texts}), {"text": pl.String()})
    hit = set(found.get_column("id").to_list())
    return [i in hit for i in ids]


def measure() -> pl.DataFrame:
    """Return one row per class (recall) and per negative category (false positives).

    Columns: `label`, `kind` (`positive` | `negative`), `texts`, `scrubber` and `scan` (the
    share of texts each caught: recall for positives, false-positive rate for negatives).
    """
    groups = [("positive", k, v) for k, v in POSITIVES.items()]
    groups += [("negative", k, v) for k, v in NEGATIVES.items()]
    texts = [t for _, _, members in groups for t in members]
    by_scrubber = iter(scrubber_caught(texts))
    by_scan = iter(scan_caught(texts))
    rows = []
    for kind, label, members in groups:
        scrubbed = sum(next(by_scrubber) for _ in members)
        scanned = sum(next(by_scan) for _ in members)
        n = len(members)
        rows.append((label, kind, n, round(scrubbed / n, 3), round(scanned / n, 3)))
    return pl.DataFrame(
        rows,
        schema={
            "label": pl.String(),
            "kind": pl.String(),
            "texts": pl.Int64(),
            "scrubber": pl.Float64(),
            "scan": pl.Float64(),
        },
        orient="row",
    )


def main() -> None:
    """Print recall per class and false-positive rate per look-alike category."""
    table = measure()
    with pl.Config(tbl_rows=-1, tbl_hide_dataframe_shape=True, tbl_hide_column_data_types=True):
        for kind, title in (("positive", "recall"), ("negative", "false positives")):
            print(f"{title} (share of texts caught)")
            print(table.filter(pl.col("kind") == kind).drop("kind"))


if __name__ == "__main__":
    main()
