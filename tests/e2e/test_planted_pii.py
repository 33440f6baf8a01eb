"""A planted set of secrets and personal data, from raw files to the published dataset.

Five values of every kind the scrubber covers are planted into every source's raw samples (after
` the `, so they sit inside messages, tool outputs, reasoning, dialogue and responses; no value
needs JSON escaping, as some raw strings hold JSON themselves). After a
full `distill run`, no published file holds any of them, every kind was redacted, and the
independent scan passed.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from distill_assets.cli import main
from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.lib.settings import Settings
from distill_assets.rules.curation import REDACTIONS
from tests.conftest import SAMPLES

# kind → five (planted text, sensitive part that must not be published)
PLANTED: dict[str, list[tuple[str, str]]] = {
    "api_key": [
        (f"sk-proj-Zq{i}xW9vB7nM3kL5jH8gF2dS4", f"Zq{i}xW9vB7nM3kL5jH8gF2dS4") for i in range(5)
    ],
    "private_key": [
        (
            f"-----BEGIN RSA PRIVATE KEY----- MIIEpQIBAAKCAQEAq{i}Zx9Yw8Vu7Ts6 "
            "-----END RSA PRIVATE KEY-----",
            f"MIIEpQIBAAKCAQEAq{i}Zx9Yw8Vu7Ts6",
        )
        for i in range(5)
    ],
    "jwt": [
        (
            f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGF{i}udGVkIn0.Qm9ndXNTaWduYXR1cmU{i}",
            f"eyJzdWIiOiJwbGF{i}udGVkIn0",
        )
        for i in range(5)
    ],
    "email": [(f"planted.person{i}@mailhost.example.net", f"planted.person{i}@") for i in range(5)],
    "phone": [(f"+44 20 7946 09{i}{i}", f"7946 09{i}{i}") for i in range(5)],
    "ipv4": [(f"10.{i}.77.201", f"10.{i}.77.201") for i in range(1, 6)],
    "ipv6": [(f"2a00:1450:4{i}01::200e", f"2a00:1450:4{i}01::200e") for i in range(5)],
    "payment_card": [
        (card, card)
        for card in (
            "4539 1488 0343 6467",
            "5425-2334-3010-9903",
            "4716108999716531",
            "6011514433546201",
            "378734493671000",
        )
    ],
    "us_ssn": [(f"219-0{i}-1120", f"219-0{i}-1120") for i in range(1, 6)],
    "iban": [
        (iban, iban)
        for iban in (
            "DE89 3704 0044 0532 0130 00",
            "GB82WEST12345698765432",
            "FR1420041010050500013M02606",
            "NL91ABNA0417164300",
            "ES9121000418450200051332",
        )
    ],
    "url_credentials": [
        (f"postgres://svc{i}:Pw{i}dQx7@127.0.0.1:5432/db", f"Pw{i}dQx7") for i in range(5)
    ],
    "home_path": [
        (path, user)
        for path, user in (
            ("/home/zqalice/.bashrc", "zqalice"),
            ("/Users/zqbob/Documents", "zqbob"),
            ("C:/Users/zqcarol/AppData", "zqcarol"),
            ("/home/zqdan/src", "zqdan"),
            ("/Users/zqerin/.ssh/id_rsa", "zqerin"),
        )
    ],
    "secret_assignment": [(f"password={i}Kx9!mQ2zT", f"{i}Kx9!mQ2zT") for i in range(5)],
}


def plant(text: str, values: list[str]) -> tuple[str, int]:
    """Insert `values` in turn after every ` the ` of a JSON Lines text; return it and the count."""
    counter = iter(range(10**9))

    def insert(_: re.Match[str]) -> str:
        value = values[next(counter) % len(values)]
        return " the " + json.dumps(value)[1:-1] + " "

    planted, n = re.subn(" the ", insert, text)
    return planted, n


def published_text(hub: Path) -> dict[str, str]:
    """Return every published file as text (Parquet files as their rows in JSON)."""
    texts = {}
    for path in sorted(p for p in hub.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            texts[str(path)] = pl.read_parquet(path).write_ndjson()
        else:
            texts[str(path)] = path.read_text(encoding="utf-8")
    return texts


@pytest.mark.e2e
def test_planted_values_reach_no_published_file(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISTILL_ENV", "development")
    values = [text for kind in PLANTED.values() for text, _ in kind]
    planted = 0
    for sample in sorted(p for p in SAMPLES.rglob("*") if p.is_file()):
        target = Path(distill_env.raw_root) / sample.relative_to(SAMPLES)
        target.parent.mkdir(parents=True, exist_ok=True)
        gz = sample.name.endswith(".gz")
        text = (gzip.decompress(sample.read_bytes()) if gz else sample.read_bytes()).decode(
            errors="surrogateescape"
        )
        text, n = plant(text, values)
        planted += n
        data = text.encode(errors="surrogateescape")
        target.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    assert planted > 20 * len(values)

    assert main(["run", "--samples", "none"]) == 0

    hub = Path(distill_env.hub_root)
    texts = published_text(hub)
    assert any(name.endswith(".parquet") for name in texts)
    leaks = {
        (kind, needle, name)
        for kind, pairs in PLANTED.items()
        for _, needle in pairs
        for name, text in texts.items()
        if needle in text or json.dumps(needle)[1:-1] in text
    }
    assert leaks == set()
    placeholders = {re.search(r"\[REDACTED_\w+\]", r.replacement).group() for r in REDACTIONS}
    rows = "".join(text for name, text in texts.items() if name.endswith(".parquet"))
    assert {p for p in placeholders if p not in rows} == set()
    manifest = json.loads((hub / "distill" / "latest" / "release.json").read_text())
    in_card = {kind for c in manifest["configs"].values() for kind in c["redactions"]}
    assert {p.strip("[]") for p in placeholders} == in_card
    assert "## Redactions" in texts[str(hub / "distill" / "latest" / "README.md")]

    instance = dg.DagsterInstance.get()
    redacted: dict[str, int] = {}
    for config in CONFIG_FEEDS:
        event = instance.get_latest_materialization_event(dg.AssetKey(["curation", config]))
        if event is None or event.asset_materialization is None:
            continue
        table = event.asset_materialization.metadata["redactions"].value
        for kind, n in re.findall(r"\| (\w+) \| (\d+) \|", table):
            redacted[kind] = redacted.get(kind, 0) + int(n)
    assert {kind for kind, n in redacted.items() if n > 0} >= set(PLANTED)
