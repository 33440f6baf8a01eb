"""The rule-change loop end to end: change a rule → `distill stale` → `distill backfill --stale`.

The samples' night (`distill run` with no `DAGSTER_HOME`, so on the project's instance under
the data dir; made once per session, `tests/e2e/conftest.py`) is copied, and a temporary copy of
the package runs the real CLI on it; `MIN_EXCHANGES` is then lowered in the copy's
`rules/telemetry.py`, which keeps the 2-exchange conversations of the samples.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.lib.startup import DEVELOPMENT_KEY_WARNING
from distill_assets.rules import VERSION_HEX_DIGITS
from tests.conftest import PROJECT_ROOT, SAMPLE_DATES
from tests.e2e.conftest import Night, copy_night

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore:Use fetch_materializations")]

RULE_LINE = "MIN_EXCHANGES = 3\n"
CHANGED_RULE_LINE = "MIN_EXCHANGES = 2\n"
# every curated table reads every feed (its splits are decided over all configs); the Witness
# queue reads every telemetry feed table
DOWNSTREAM = sorted(
    [
        *(f"curation/{config}" for config in CONFIG_FEEDS),
        "curation/sft_duplicates",
        "escalations/export_history",
        "release/candidate",
        "release/dataset",
        "telemetry/deletion_log",
        "telemetry/witness_queue",
    ]
)
# downstream of telemetry/dialogues in its own day: sft's products and their line scan, made
# with the day's ingest
DOWNSTREAM_DAILY = ["curation/sft_products", "release/sft_scanned_lines"]
# not stale, but made by the same op as a stale table, so rebuilt with it: the other configs'
# duplicates tables curation writes beside the curated tables (each reads its own feeds)
COMPANIONS = sorted(f"curation/{config}_duplicates" for config in CONFIG_FEEDS if config != "sft")


def _version(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:VERSION_HEX_DIGITS]


def _distill(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "distill_assets.cli", *args]
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _job_size(job: str) -> tuple[int, int]:
    """Return how many assets and asset checks a full run of `job` executes."""
    from distill_assets.definitions import defs

    definitions = defs()
    assets = definitions.resolve_job_def(job).asset_layer.selected_asset_keys
    checks = [
        c for c in definitions.resolve_asset_graph().asset_check_keys if c.asset_key in assets
    ]
    return len(assets), len(checks)


def _materializations(home: Path, after: int) -> tuple[list[tuple[str, str | None]], int]:
    """Return (asset, partition) of every materialization after storage id `after`, newest id."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        records = instance.get_event_records(
            dg.EventRecordsFilter(
                event_type=dg.DagsterEventType.ASSET_MATERIALIZATION, after_cursor=after
            ),
            ascending=True,
        )
    built = [
        (r.asset_key.to_user_string(), r.event_log_entry.dagster_event.partition) for r in records
    ]
    return sorted(built, key=lambda kv: (kv[0], kv[1] or "")), max(
        (r.storage_id for r in records), default=after
    )


@pytest.fixture(scope="module")
def project(
    tmp_path_factory: pytest.TempPathFactory, sample_night: Night
) -> tuple[Path, dict[str, str]]:
    """A copy of the package and a data dir, ingested and released once with the sample data
    (a copy of the session's night: `distill run` without `DAGSTER_HOME`)."""
    tmp = tmp_path_factory.mktemp("rule_change")
    copy = tmp / "checkout"
    copy.mkdir()
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(PROJECT_ROOT / "distill_assets", copy / "distill_assets", ignore=ignore)
    shutil.copytree(PROJECT_ROOT / "sql", copy / "sql")
    shutil.copy2(PROJECT_ROOT / "pyproject.toml", copy / "pyproject.toml")
    copy_night(sample_night, tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILL_", "DAGSTER_"))}
    env.update(PYTHONPATH=str(copy), DISTILL_DATA_DIR=str(tmp / "data"), DISTILL_ENV="development")
    return tmp, env


def test_rule_change_is_listed_rebuilt_exactly_and_carded(
    project: tuple[Path, dict[str, str]],
) -> None:
    tmp, env = project
    home = tmp / "data" / ".dagster"
    assert (home / "history").is_dir(), "distill run must record on the project's instance"
    assert _distill(env, tmp, "stale").stdout == ""
    _, before = _materializations(home, 0)

    rules_file = tmp / "checkout" / "distill_assets" / "rules" / "telemetry.py"
    original = rules_file.read_text(encoding="utf-8")
    assert RULE_LINE in original
    changed = original.replace(RULE_LINE, CHANGED_RULE_LINE)
    rules_file.write_text(changed, encoding="utf-8")
    old, new = _version(original), _version(changed)

    listed = json.loads(_distill(env, tmp, "stale", "--json").stdout)
    roots = [
        {
            "asset": "telemetry/dialogues",
            "partition": day,
            "recorded": old,
            "current": new,
            "because": [],
        }
        for day in SAMPLE_DATES
    ]
    assert [e for e in listed if e["because"] == []] == roots
    downstream = [(asset, None) for asset in DOWNSTREAM]
    downstream += [(asset, day) for asset in DOWNSTREAM_DAILY for day in SAMPLE_DATES]
    assert [(e["asset"], e["partition"], e["because"]) for e in listed if e["because"]] == [
        (asset, day, ["telemetry/dialogues"])
        for asset, day in sorted(downstream, key=lambda e: (e[0], e[1] or ""))
    ]
    lines = _distill(env, tmp, "stale").stdout.splitlines()
    assert f"telemetry/dialogues {SAMPLE_DATES[0]}: rules {old} -> {new}" in lines
    assert "curation/sft (all): downstream of telemetry/dialogues" in lines

    dry = _distill(env, tmp, "backfill", "--stale", "--dry-run").stdout
    daily = ", ".join([*DOWNSTREAM_DAILY, "telemetry/dialogues"])
    assert f"[distill] plan {SAMPLE_DATES[1]}: {daily}" in dry.splitlines()
    assert _materializations(home, before)[0] == []

    latest = tmp / "data" / "hub" / "distill" / "latest"
    previous = json.loads((latest / "release.json").read_text())
    out = _distill(env, tmp, "backfill", "--stale").stdout
    ingested = 1 + len(DOWNSTREAM_DAILY)
    for day in SAMPLE_DATES:
        assert f"[distill] daily_ingest {day}: ok ({ingested} materializations" in out
    released = len(DOWNSTREAM) + len(COMPANIONS)
    assert f"[distill] publish_release: ok ({released} materializations" in out

    rebuilt, _ = _materializations(home, before)
    companions = [(asset, None) for asset in COMPANIONS]
    assert rebuilt == sorted(
        [(e["asset"], e["partition"]) for e in listed] + companions,
        key=lambda kv: (kv[0], kv[1] or ""),
    )
    assert _distill(env, tmp, "stale").stdout == ""

    manifest = json.loads((latest / "release.json").read_text())
    assert manifest["previous_version"] == previous["version"]
    assert manifest["rules_changed"] == {"telemetry": {"previous": old, "current": new}}
    card = (latest / "README.md").read_text()
    assert f"| `telemetry` | `{old}` | `{new}` |" in card
    for split in ("train", "test"):
        before_rows = previous["configs"]["sft"]["splits"][split]["rows"]
        now_rows = manifest["configs"]["sft"]["splits"][split]["rows"]
        assert (
            f"| `sft` | {split} | {before_rows} | {now_rows} | {now_rows - before_rows:+d} |"
            in (card)
        )
    gained = sum(manifest["changes"]["sft"][s]["delta"] for s in ("train", "test"))
    # the samples' one 2-exchange conversation a day qualifies now: both reach sft
    assert gained == 2


def test_backfill_of_a_date_range_rebuilds_those_dates_then_releases(
    project: tuple[Path, dict[str, str]],
) -> None:
    tmp, env = project
    home = tmp / "data" / ".dagster"
    _, before = _materializations(home, 0)
    latest = tmp / "data" / "hub" / "distill" / "latest" / "release.json"
    version = json.loads(latest.read_text())["version"]
    day = SAMPLE_DATES[0]
    out = _distill(env, tmp, "backfill", "--from", "2026-11-18", "--to", day)
    lines = out.stdout.splitlines()
    assert lines[:3] == [
        f"[distill] {DEVELOPMENT_KEY_WARNING}",  # checked before any work, like `distill run`
        f"[distill] plan {day}: all assets",
        "[distill] plan release: all assets",
    ]
    (ingest, ingest_checks), (release, release_checks) = map(
        _job_size, ("daily_ingest", "publish_release")
    )
    # the samples are dense in capture triggers (86.7% of the day's triage candidates pass), so
    # the pass-rate budget check warns
    done = (
        f"[distill] daily_ingest {day}: ok ({ingest} materializations, {ingest_checks} checks, "
        "warnings: telemetry/triage:pass_rate_within_budget)"
    )
    assert done in lines
    assert any(x.startswith(f"[distill] quarantine {day}: traces 15 (") for x in lines)
    assert (
        f"[distill] publish_release: ok ({release} materializations, {release_checks} checks)"
        in (lines)
    )
    rebuilt, _ = _materializations(home, before)
    assert len(rebuilt) == ingest + release
    assert {partition for _, partition in rebuilt} == {day, None}
    # same inputs, same rules: the release is the same version
    assert json.loads(latest.read_text())["version"] == version
    empty = _distill(env, tmp, "backfill", "--from", "2026-11-21", "--to", "2026-11-25")
    assert empty.stdout == f"[distill] {DEVELOPMENT_KEY_WARNING}\n[distill] nothing to backfill\n"
