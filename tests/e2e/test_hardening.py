"""One night with everything that can go wrong, from raw files to the published dataset.

The committed samples are landed with a planted set (five values of every kind the scrubber
covers, inserted after every ` the `, so they sit inside messages, tool outputs, reasoning,
dialogue and responses; no value needs JSON escaping, as some raw strings hold JSON themselves)
and the corrupt-file matrix: every source gets a plain-text file named `.jsonl.gz`, gzip bytes
named `.jsonl`, a `.json` and a `.bz2` file; telemetry gets a 50 MB record; and there are folders
named `2026-13-45`, `2026_11_21` and a future date. One `distill run` must publish; no published
file holds a planted value; every raw record is counted in bronze or quarantine with its reason.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from distill_assets.cli import main
from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.defs.ingest import count_raw_records
from distill_assets.lib.lake import partition_path
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.lib.settings import SOURCES, Settings
from distill_assets.rules.curation import REDACTIONS
from tests.conftest import SAMPLES, land

pytestmark = pytest.mark.e2e
DAY = "2026-11-19"
BRONZE = {
    "traces": "events",
    "escalations": "records",
    "revisions": "validations",
    "telemetry": "events",
}
HUGE_BYTES = 50 << 20

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
    """Return every published file as text (Parquet files as their rows in JSON).

    Binary extras (the `rlds/tfds/` shards) are decoded leniently: their string fields are raw
    UTF-8 bytes, so a planted value that leaked would still appear verbatim.
    """
    texts = {}
    for path in sorted(p for p in hub.rglob("*") if p.is_file()):
        if path.suffix == ".parquet":
            texts[str(path)] = pl.read_parquet(path).write_ndjson()
        else:
            texts[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    return texts


@dataclass
class Night:
    """What one `distill run` over the planted, corrupt raw data left behind."""

    settings: Settings
    exit_code: int
    out: str
    scratch: Path
    redactions: dict[str, int]
    skipped_folders: dict[str, str]


def land_planted_samples(settings: Settings) -> int:
    """Copy the samples into the raw root with the planted values; return how many were planted."""
    values = [text for kind in PLANTED.values() for text, _ in kind]
    planted = 0
    for sample in sorted(p for p in SAMPLES.rglob("*") if p.is_file()):
        target = Path(settings.raw_root) / sample.relative_to(SAMPLES)
        target.parent.mkdir(parents=True, exist_ok=True)
        gz = sample.name.endswith(".gz")
        text = (gzip.decompress(sample.read_bytes()) if gz else sample.read_bytes()).decode(
            errors="surrogateescape"
        )
        text, n = plant(text, values)
        planted += n
        data = text.encode(errors="surrogateescape")
        target.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return planted


def land_corrupt_files(settings: Settings) -> None:
    """Land the corrupt-file matrix beside the samples."""
    for source in SOURCES:
        land(settings, source, DAY, "plain-named-gz.jsonl.gz", '{"a": 1}\n')
        land(settings, source, DAY, "gzip-named-plain.jsonl", gzip.compress(b'{"a": 1}\n'))
        land(settings, source, DAY, "export.json", '[{"a": 1}]')
        land(settings, source, DAY, "old.jsonl.bz2", b"BZh91AY&SY")
    for folder in ("2026-13-45", "2026_11_21", "2099-01-01"):
        land(settings, "revisions", folder, "a.jsonl", '{"turn_id": "x"}\n')
    huge = '{"event_id": "huge", "payload": {"text": "' + "z" * HUGE_BYTES + '"}}\n'
    land(settings, "telemetry", "2026-11-20", "huge.jsonl", huge)


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Night]:
    """Land planted samples and the corrupt files, run `distill run` once."""
    tmp = tmp_path_factory.mktemp("night")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DISTILL_DATA_DIR", str(tmp / "data"))
        env.setenv("DAGSTER_HOME", str(tmp / "dagster_home"))
        env.setenv("DISTILL_ENV", "development")
        for name in ("DISTILL_RAW_ROOT", "DISTILL_LAKE_ROOT", "DISTILL_HUB_ROOT"):
            env.delenv(name, raising=False)
        (tmp / "dagster_home").mkdir()
        scratch = tmp / "tmp"
        scratch.mkdir()
        env.setattr("tempfile.tempdir", str(scratch))
        settings = Settings.resolve()
        assert land_planted_samples(settings) > 20 * sum(len(v) for v in PLANTED.values())
        land_corrupt_files(settings)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["run", "--samples", "none"])
        instance = dg.DagsterInstance.get()
        redacted: dict[str, int] = {}
        for config in CONFIG_FEEDS:
            event = instance.get_latest_materialization_event(dg.AssetKey(["curation", config]))
            if event is None or event.asset_materialization is None:
                continue
            table = event.asset_materialization.metadata["redactions"].value
            for kind, n in re.findall(r"\| (\w+) \| (\d+) \|", table):
                redacted[kind] = redacted.get(kind, 0) + int(n)
        candidate = instance.get_latest_materialization_event(dg.AssetKey(["release", "candidate"]))
        skipped = (
            candidate.asset_materialization.metadata["skipped_raw_folders"].value
            if candidate is not None and candidate.asset_materialization is not None
            else {}
        )
        yield Night(settings, code, out.getvalue(), scratch, redacted, skipped)


def test_planted_values_reach_no_published_file(night: Night) -> None:
    assert night.exit_code == 0, night.out
    hub = Path(night.settings.hub_root)
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
    # `latest` is a link to the version folder (rglob does not follow it)
    assert "## Redactions" in texts[str((hub / "distill" / "latest").resolve() / "README.md")]
    assert {kind for kind, n in night.redactions.items() if n > 0} >= set(PLANTED)


def test_corrupt_files_and_folders_do_not_stop_the_release(night: Night) -> None:
    assert night.exit_code == 0, night.out
    assert "skipped raw folder revisions/2026-13-45: not a valid date" in night.out
    assert "skipped raw folder revisions/2026_11_21: not a valid date" in night.out
    assert (
        "skipped raw folder revisions/2099-01-01: a date after the last complete day" in night.out
    )
    assert "published at" in night.out
    assert list(night.scratch.iterdir()) == []  # every working folder was removed
    assert night.skipped_folders == {
        "revisions/2026-13-45": "not_a_date",
        "revisions/2026_11_21": "not_a_date",
        "revisions/2099-01-01": "future_date",
    }
    distill_env = night.settings
    lake = distill_env.lake_root
    for source, table in BRONZE.items():
        # the telemetry deletion log erased the deleted players' bronze and quarantine rows (of
        # both days): they reconcile over the days, with what the log says it removed
        unaccounted = 0
        for day in ("2026-11-19", "2026-11-20"):
            raw = count_raw_records(list_raw_files(distill_env.raw_root, source, day)).records
            bronze = pl.read_parquet(partition_path(lake, source, table, day)).height
            quarantine = pl.read_parquet(partition_path(lake, source, "quarantine", day))
            unaccounted += raw - bronze - quarantine.height
            if source != "telemetry":
                assert raw == bronze + quarantine.height, (source, day)
        erased = 0
        if source == "telemetry":
            log = pl.read_parquet(Path(lake) / "telemetry" / "deletion_log.parquet")
            for removed in log.get_column("rows_removed"):
                counts = json.loads(removed)
                erased += counts.get("telemetry/events", 0) + counts.get("telemetry/quarantine", 0)
            assert erased > 0
        assert unaccounted == erased, source
        reasons = dict(
            quarantine_of(lake, source, DAY)
            .filter(pl.col("reason").is_in(["undecodable_file", "unsupported_file"]))
            .group_by("reason")
            .len()
            .iter_rows()
        )
        assert reasons == {"undecodable_file": 2, "unsupported_file": 2}, source
    too_large = quarantine_of(lake, "telemetry", "2026-11-20").filter(
        pl.col("reason") == "too_large"
    )
    assert too_large.select("source_file", "line_no").rows() == [
        ("telemetry/2026-11-20/huge.jsonl", 1)
    ]
    assert len(too_large["raw_line"][0]) == 1024
    undecodable = quarantine_of(lake, "traces", DAY).filter(pl.col("reason") == "undecodable_file")
    assert sorted(undecodable["source_file"]) == [
        "traces/2026-11-19/gzip-named-plain.jsonl",
        "traces/2026-11-19/plain-named-gz.jsonl.gz",
    ]


def quarantine_of(lake: str, source: str, day: str) -> pl.DataFrame:
    return pl.read_parquet(Path(str(partition_path(lake, source, "quarantine", day))))
