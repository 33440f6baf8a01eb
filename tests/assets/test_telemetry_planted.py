"""Planted telemetry cases end in the right table with the right reason (issue 11 acceptance).

Two ingest days from `telemetry_planted.py` (here) go through the real definitions: the daily
assets per day, then the global telemetry assets, curation and the release, then the global assets
once more (the deletion log learns which release first excluded the deleted player).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest

from distill_assets import cli
from distill_assets.defs.player_ids import DEVELOPMENT_KEY, KEY_ENV, player_key
from distill_assets.defs.telemetry.deletion import ERASED_TABLES
from distill_assets.lib.hashing import split_bucket
from distill_assets.lib.settings import Settings
from distill_assets.rules import telemetry_triage
from tests.assets import telemetry_planted as planted
from tests.conftest import isolate, materialize
from tests.unit.telemetry.test_instance_erasure import storage_bytes

DAY1, DAY2 = planted.DAYS
DAILY = ("events", "quarantine", "validation", "accepted_events", "triage", "dialogues")
PAST_BRONZE = ("validation", "accepted_events", "triage", "dialogues")
GLOBAL = ("deletions", "deletion_log", "consent", "exclusions", "player_quality", "payouts")
# tables that must name a deleted player: the requests, the log and the release's exclusion list
PRIVACY_LEDGERS = ("deletions", "deletion_log", "exclusions")


def key(raw_id: str) -> str:
    return player_key(DEVELOPMENT_KEY.encode(), raw_id)


def selection(tables: tuple[str, ...]) -> str:
    return " or ".join(f'key:"telemetry/{t}"' for t in tables)


def run_days(days: tuple[str, ...], instance: dg.DagsterInstance | None = None) -> None:
    for day in days:
        materialize(selection(DAILY), day, instance)
    materialize(selection(GLOBAL), instance=instance)


def daily(settings: Settings, table: str, day: str) -> pl.DataFrame:
    return pl.read_parquet(Path(settings.lake_root) / "telemetry" / table / f"{day}.parquet")


def global_table(settings: Settings, table: str) -> pl.DataFrame:
    return pl.read_parquet(Path(settings.lake_root) / "telemetry" / f"{table}.parquet")


@pytest.fixture(autouse=True)
def no_key_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


@pytest.fixture(scope="module")
def planted_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """The planted days run once for the module (an isolated data folder, like `distill_env`)."""
    root = tmp_path_factory.mktemp("planted")
    with pytest.MonkeyPatch.context() as patch:
        settings = isolate(root, patch, KEY_ENV)
        planted.write_planted(settings.raw_root)
        # the runs go to the project's instance under DAGSTER_HOME, as `distill run`'s do; it
        # first holds what an older version might have written: carol's key in a preview
        instance = dg.DagsterInstance.get()
        instance.report_runless_asset_event(
            dg.AssetMaterialization(
                asset_key=dg.AssetKey(["telemetry", "dialogues"]),
                partition=DAY1,
                metadata={
                    "preview": dg.MetadataValue.md(f"| player_key |\n| {key(planted.CAROL)} |")
                },
            )
        )
        run_days(planted.DAYS, instance)
        materialize("group:curation or group:release", instance=instance)
        yield settings


def test_validation_quarantine_and_silver(planted_env: Settings) -> None:
    quarantine = daily(planted_env, "quarantine", DAY1)
    assert quarantine.select("reason", "detail").rows() == [
        ("missing_game_state_hash", "decision.game_state_hash: expected a string, got absent")
    ]
    validation = daily(planted_env, "validation", DAY1)
    counts = dict(validation.group_by("check").len().iter_rows())
    assert counts == planted.PLANTED_CHECKS
    decisions = dict(validation.select("check", "decision").unique().iter_rows())
    assert decisions == {c: "reject" if c == "bot_signature" else "flag" for c in counts}
    bots = validation.filter(pl.col("check") == "bot_signature")
    assert dict(bots.group_by("player_key").len().iter_rows()) == {
        key(raw): n for raw, n in planted.BOT_EVENTS.items()
    }
    reasons = set(bots.get_column("reason").str.extract(r"^([a-z_+]+) in session").to_list())
    assert reasons == {"regular_intervals", "inhuman_action_rate"}
    flagged = validation.filter(pl.col("decision") == "flag")
    assert dict(flagged.select("check", "reason").iter_rows()) == {
        "turn_out_of_order": "turn 3 is 9.8 s earlier than turn 2",
        "clock_skew": "client_ts 600.0 s before server_ts",
        "client_ts_in_future": "client_ts 120.0 s after server_ts",
        "chosen_option_not_offered": "chosen_option o9 is not an option",
        "action_out_of_range": "wheel_manipulation.hand_pressure=1.7 outside [0, 1]",
        "action_after_episode_end": "step 4 received 10.0 s after episode_end",
        "step_index_backwards": "step 1 arrived after step 2",
        "step_out_of_order": "step 2 is 2.8 s earlier than step 1",
    }
    assert daily(planted_env, "validation", DAY2).height == 0
    # rejected events never reach silver or anything built on it; flagged ones do, marked
    rejected = set(bots.get_column("event_id"))
    for table in ("accepted_events", "triage"):
        assert rejected.isdisjoint(daily(planted_env, table, DAY1).get_column("event_id"))
    silver = daily(planted_env, "accepted_events", DAY1)
    marked = silver.filter(pl.col("flagged")).select("event_id", "flag_checks")
    # consent is applied at processing: bob's turn and reasoning (no consent) and alice's
    # reasoning (no cot consent) are flagged but never reach silver
    unconsented = {f"{DAY1}-e0014", f"{DAY1}-e0023", f"{DAY1}-e0024"}
    assert dict(marked.iter_rows()) == {
        row["event_id"]: [row["check"]]
        for row in flagged.iter_rows(named=True)
        if row["event_id"] not in unconsented
    }
    bronze = daily(planted_env, "events", DAY1)
    carol_day1 = bronze.filter(pl.col("player_key") == key(planted.CAROL)).height
    bob_typed = bronze.filter(
        (pl.col("player_key") == key(planted.BOB))
        & pl.col("event_type").is_in(["dialogue_turn", "decision", "reasoning"])
    ).height
    # alice: her day-1 decision (dpo withdrawn on day 2) and her reasoning (no cot consent)
    alice_withdrawn = 2
    assert silver.height == (
        bronze.height - len(rejected) - carol_day1 - bob_typed - alice_withdrawn
    )
    # privacy past bronze: minute buckets, no client clock, no unknown envelope fields
    assert (silver.get_column("event_time") % 60 == 0).all()
    assert not {"client_ts", "server_ts", "extra"} & set(silver.columns)


def test_consent_deletion_and_release(planted_env: Settings) -> None:
    alice, bob, carol = key(planted.ALICE), key(planted.BOB), key(planted.CAROL)
    consent = global_table(planted_env, "consent")
    assert consent.filter(pl.col("player_key") == alice).select("data_type", "granted").rows() == [
        ("dpo", False),
        ("sft", True),
    ]
    assert carol not in consent.get_column("player_key").to_list()
    exclusions = global_table(planted_env, "exclusions")
    assert dict(exclusions.group_by("reason").len().iter_rows()) == {
        "no_consent": 4 * 3 + 3,  # bob, dave, erin: all; alice: dpo, rlds, cot
        "deletion_request": 4,
    }
    assert sorted(
        exclusions.filter(pl.col("subject").str.ends_with(alice)).get_column("subject")
    ) == [f"cot:{alice}", f"dpo:{alice}", f"rlds:{alice}"]
    assert sorted(
        exclusions.filter(pl.col("reason") == "deletion_request").get_column("subject")
    ) == [f"{t}:{carol}" for t in ("cot", "dpo", "rlds", "sft")]

    log = global_table(planted_env, "deletion_log")
    assert log.select("request_id", "player_key", "scope").rows() == [("del-carol", carol, "all")]
    # carol: day 1 consent + 6 turns + decision + outcome, built as of day 1 (7 triage candidates,
    # one conversation); day 2 (6 turns + decision + outcome + the request) never reached silver:
    # the request applies on its own day. Bronze: the same 17 events (the request itself stays,
    # the record deletions rebuild from)
    assert json.loads(log.item(0, "rows_removed")) == {
        "telemetry/accepted_events": 9,
        "telemetry/dialogues": 1,
        "telemetry/events": 17,
        "telemetry/triage": 7,
    }
    assert log.item(0, "rows_removed_total") == 34
    assert log.item(0, "first_excluded_in") is None
    # the proof: every store checked after the removal holds none of carol's rows
    held = json.loads(log.item(0, "rows_still_held"))
    assert set(held) == {
        "dagster/materialization_metadata",
        *(f"telemetry/{t}" for t in ERASED_TABLES),
    }
    assert set(held.values()) == {0}
    for day in planted.DAYS:
        bronze = daily(planted_env, "events", day).filter(pl.col("player_key") == carol)
        assert bronze.get_column("event_type").to_list() == (
            ["deletion_request"] if day == DAY2 else []
        )
    # the deleted player's key is gone from the instance, the older planted preview included:
    # from every materialization's metadata and from every byte of its storage files
    instance = dg.DagsterInstance.get()
    logged = instance.get_latest_materialization_event(dg.AssetKey(["telemetry", "deletion_log"]))
    assert logged is not None
    # the planted preview: its index row and its runless shard's row
    assert logged.asset_materialization.metadata["instance_rows_erased"].value == 2
    assert carol.encode() not in storage_bytes(Path(os.environ["DAGSTER_HOME"]))
    # no other player's key ever enters the Dagster instance (curation and release included)
    for asset_key in instance.get_asset_keys():
        for record in instance.fetch_materializations(asset_key, limit=1000).records:
            metadata = repr(record.asset_materialization.metadata)
            for raw_id in planted.PLAYERS:
                assert key(raw_id) not in metadata, (asset_key, raw_id)

    for table in PAST_BRONZE:
        for day in planted.DAYS:
            frame = daily(planted_env, table, day)
            mentions = frame.select(
                pl.any_horizontal(pl.col(pl.String).str.contains(carol, literal=True))
            )
            assert not mentions.to_series().any(), (table, day)
    for table in ("consent", "player_quality", "payouts"):
        assert carol not in global_table(planted_env, table).get_column("player_key").to_list()

    latest = Path(planted_env.hub_root) / planted_env.dataset_name / "latest"
    sft = pl.concat(
        pl.read_parquet(f) for f in sorted((latest / "data" / "sft").glob("*/*.parquet"))
    )
    owners = sft.get_column("metadata").str.json_path_match("$.player_key").to_list()
    # bob never consented, carol was deleted; alice's day-2 conversation repeats her day-1 one
    # (the planted turns are the same template), so curation keeps one as a near duplicate
    assert owners == [alice]
    removed = pl.read_parquet(Path(planted_env.lake_root) / "curation" / "sft_duplicates.parquet")
    assert removed.select("partition", "reason").rows() == [(planted.DAYS[1], "near_duplicate")]
    version = json.loads((latest / "release.json").read_text())["version"]

    materialize(selection(GLOBAL), instance=instance)
    log = global_table(planted_env, "deletion_log")
    assert log.select("rows_removed_total", "release_before", "first_excluded_in").rows() == [
        (34, None, version)
    ]
    assert bob not in owners


def test_no_raw_player_id_past_ingest(planted_env: Settings) -> None:
    files = sorted(Path(planted_env.lake_root).rglob("*.parquet")) + sorted(
        Path(planted_env.hub_root).rglob("*.*")
    )
    con = duckdb.connect()
    telemetry_files = 0
    for path in files:
        data = path.read_bytes()
        text = data.decode("utf-8", "replace")
        if path.suffix == ".parquet":
            text += "\n".join(
                r[0]
                for r in con.execute(
                    "SELECT t::VARCHAR FROM read_parquet($p) t", {"p": str(path)}
                ).fetchall()
            )
            telemetry_files += "telemetry" in path.as_posix()
        for raw_id in planted.PLAYERS:
            assert raw_id.encode() not in data, (path, raw_id)
            assert raw_id not in text, (path, raw_id)
    # and per day the raw_files integrity table the raw_reconciles check writes (issue 28) and
    # the mention index silver writes (`_index/telemetry/mentions`, checked above like the rest)
    assert telemetry_files == (len(DAILY) + 2) * 2 + len(GLOBAL)


def test_trust_peer_prediction_and_flags(planted_env: Settings) -> None:
    quality = {
        row["player_key"]: row for row in global_table(planted_env, "player_quality").to_dicts()
    }
    frank = quality[key(planted.FRANK)]
    assert (frank["trust_score"], frank["gold_standard_accuracy"]) == (
        planted.FRANK_TRUST[-1],
        0.25,
    )
    assert frank["flag_reasons"] == ["gold_accuracy_below_70"]
    scores = {
        raw: (quality[key(raw)]["trust_score"], quality[key(raw)]["peer_prediction_score"])
        for raw in (planted.ALICE, planted.HENRY, planted.BOB, planted.GRACE)
    }
    assert scores == {
        planted.ALICE: (0.53, 1.0),
        planted.HENRY: (0.53, 1.0),
        planted.BOB: (0.42, 0.0),  # the minority of pairing pr-1
        planted.GRACE: (0.53, 1.0),  # pr-2 is a tie (no signal), pr-3 a match
    }
    for bot in (planted.DAVE, planted.ERIN):
        assert quality[key(bot)]["flag_reasons"] == ["bot_signature"]
        assert quality[key(bot)]["total_contributions"] == 0
    assert key(planted.CAROL) not in quality


def test_payouts(planted_env: Settings) -> None:
    rows = {r["player_key"]: r for r in global_table(planted_env, "payouts").to_dicts()}
    # alice's one task was her day-1 decision: her dpo withdrawal on day 2 removed it
    assert set(rows) == {key(planted.FRANK)}
    # frank: a failed decision (U 0) and a near-miss episode (U 0.8) before his gold results
    assert rows[key(planted.FRANK)] == {
        "player_key": key(planted.FRANK),
        "partition": DAY1,
        "tasks": 2,
        "base": 35.0,
        "utility": 0.4,
        "novelty": 0.0,
        "trust": 0.5,
        "payout": 10.0,
        "zeroed_tasks": 0,
        "zero_reasons": [],
    }


def test_triage_rules_and_stable_samples(planted_env: Settings) -> None:
    rows = daily(planted_env, "triage", DAY1)
    bronze = daily(planted_env, "events", DAY1)
    decision_of = {
        e["player_key"]: e["event_id"]
        for e in bronze.filter(pl.col("event_type") == "decision").to_dicts()
    }
    verdicts = dict(
        rows.select("event_id", pl.concat_str("decision", "reason", separator=":")).iter_rows()
    )
    # alice withdrew dpo on day 2: her day-1 decision went like a deletion (high_ambiguity is
    # covered by tests/unit/telemetry/test_privacy_triage.py)
    assert decision_of[key(planted.ALICE)] not in verdicts
    assert verdicts[decision_of[key(planted.FRANK)]] == "process:innovation_quest"
    assert verdicts[decision_of[key(planted.HENRY)]] == "process:peer_flagged"
    # every candidate's sample and audit membership is the documented stable hash of its id
    buckets = int(telemetry_triage.SAMPLE_RATE * telemetry_triage.HASH_BUCKETS)
    audits = int(telemetry_triage.AUDIT_RATE * telemetry_triage.HASH_BUCKETS)
    for row in rows.iter_rows(named=True):
        in_audit = split_bucket(telemetry_triage.AUDIT_SALT + row["event_id"]) < audits
        if row["decision"] in ("skip", "audit"):
            assert (row["decision"] == "audit") == in_audit, row
        if row["reason"].endswith("high_entropy_not_sampled") or row["decision"] == "sample":
            sampled = split_bucket(telemetry_triage.SAMPLE_SALT + row["event_id"]) < buckets
            assert sampled == (row["decision"] == "sample"), row
    assert rows.filter(pl.col("decision") == "audit").height > 0


def test_triage_and_payouts_do_not_depend_on_order_or_reruns(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planted.write_planted(distill_env.raw_root)
    run_days(planted.DAYS)
    first = {
        **{f"triage/{d}": daily(distill_env, "triage", d) for d in planted.DAYS},
        "payouts": global_table(distill_env, "payouts"),
        "player_quality": global_table(distill_env, "player_quality"),
    }
    run_days(planted.DAYS)  # rerun in place
    other = tmp_path / "reversed"
    monkeypatch.setenv("DISTILL_DATA_DIR", str(other))
    reversed_env = Settings.resolve()
    planted.write_planted(reversed_env.raw_root)
    run_days(tuple(reversed(planted.DAYS)))
    # consent is applied at processing from the partitions ingested so far: day 2 ran before
    # alice's day-1 grant was ingested, so it needs the re-run docs/privacy.md prescribes
    run_days((DAY2,))
    for env in (distill_env, reversed_env):
        again = {
            **{f"triage/{d}": daily(env, "triage", d) for d in planted.DAYS},
            "payouts": global_table(env, "payouts"),
            "player_quality": global_table(env, "player_quality"),
        }
        assert again.keys() == first.keys()
        for name, frame in first.items():
            assert again[name].equals(frame), name


def test_a_day_without_telemetry_and_an_empty_history(distill_env: Settings) -> None:
    (Path(distill_env.raw_root) / "telemetry" / DAY1).mkdir(parents=True)
    assert materialize(selection(DAILY), DAY1).success
    assert materialize(selection(GLOBAL)).success
    for table in DAILY:
        assert daily(distill_env, table, DAY1).height == 0, table
    for table in GLOBAL:
        assert global_table(distill_env, table).height == 0, table


def test_player_show_and_export(
    planted_env: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alice, carol = key(planted.ALICE), key(planted.CAROL)
    assert cli.main(["player", "show", planted.CAROL, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    # erased: only the request in bronze and the privacy ledgers that prove the erasure
    assert shown == {
        "player_key": carol,
        "consent": {},
        "rows": {
            "lake/telemetry/deletion_log.parquet": 1,
            "lake/telemetry/deletions.parquet": 1,
            f"lake/telemetry/events/{DAY2}.parquet": 1,
            "lake/telemetry/exclusions.parquet": 4,
        },
    }
    assert cli.main(["player", "export", planted.ALICE, "--out", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert planted.ALICE not in json.dumps(summary)
    assert summary["consent"] == {"dpo": False, "sft": True}
    latest = Path(planted_env.hub_root) / planted_env.dataset_name / "latest"
    version = json.loads((latest / "release.json").read_text())["version"]
    # alice's day-1 decision is gone with her dpo withdrawal (triage 8 = 8 dialogue turns)
    assert summary["rows"] == {
        f"hub/versions/{version}/data/sft/train/{DAY1}-00000.parquet": 1,
        f"lake/curation/sft/{DAY1}.parquet": 1,
        f"lake/curation/sft_products/{DAY1}.parquet": 1,
        f"lake/curation/sft_products/{DAY2}.parquet": 1,
        f"lake/telemetry/accepted_events/{DAY1}.parquet": 11,
        f"lake/telemetry/accepted_events/{DAY2}.parquet": 7,
        "lake/telemetry/consent.parquet": 2,
        f"lake/telemetry/dialogues/{DAY1}.parquet": 1,
        f"lake/telemetry/dialogues/{DAY2}.parquet": 1,
        f"lake/telemetry/events/{DAY1}.parquet": 13,
        f"lake/telemetry/events/{DAY2}.parquet": 7,
        "lake/telemetry/exclusions.parquet": 3,
        "lake/telemetry/player_quality.parquet": 1,
        f"lake/telemetry/triage/{DAY1}.parquet": 8,
        f"lake/telemetry/triage/{DAY2}.parquet": 6,
        f"lake/telemetry/validation/{DAY1}.parquet": 1,
    }
    folder = tmp_path / alice
    assert json.loads((folder / "summary.json").read_text()) == summary
    for name, count in summary["rows"].items():
        assert pl.read_parquet(folder / name).height == count
