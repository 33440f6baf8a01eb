"""One story per run (issue 29): a day's telemetry depends only on the days up to it.

The committed samples plus a deletion request and an sft withdrawal landed on day 2 go through the
real definitions twice, as `distill run` does: each day's telemetry steps, then the global telemetry
steps. The samples' churner (p_a91b70977e) asks for deletion at the end of each day; the landed
request deletes p_37deb0b9fe (who has day-1 events) on day 2.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from distill_assets.defs.player_ids import DEVELOPMENT_KEY, KEY_ENV, player_key
from distill_assets.lib.settings import Settings
from tests.assets.test_telemetry import GLOBAL_TABLES
from tests.conftest import SAMPLE_DATES, SAMPLES, isolate, land, materialize

DAY1, DAY2 = SAMPLE_DATES
DAILY_TABLES = (
    "events",
    "quarantine",
    "validation",
    "accepted_events",
    "triage",
    "dialogues",
    "decisions",
    "decision_pairs",
    "competence",
    "episodes",
    "episode_pairs",
    "reasoning",
)
DAILY = " or ".join(f'key:"telemetry/{t}"' for t in DAILY_TABLES)
GLOBAL = " or ".join(f'key:"telemetry/{t}"' for t in GLOBAL_TABLES)
# deletion requests: the samples' churner on day 1 (and again on day 2), and one landed on day 2
# by a player seen on day 1
DELETED_DAY1 = "p_a91b70977e"
DELETED_DAY2 = "p_37deb0b9fe"
# a day-1 speaker (conv_269f1eea8a26) with sft consent on both days, withdrawn late on day 2
SPEAKER = "p_613a1cb159"
# 2026-11-20 23:00 UTC: after every sample event of day 2
WITHDRAWN_AT = 1795215600.0


def key(raw_id: str) -> str:
    return player_key(DEVELOPMENT_KEY.encode(), raw_id)


def event(event_id: str, event_type: str, player_id: str, payload: dict) -> str:
    line = {
        "event_id": event_id,
        "event_type": event_type,
        "schema_version": "1.4",
        "player_id": player_id,
        "session_id": "s_test",
        "server_ts": WITHDRAWN_AT,
        "payload": payload,
    }
    return json.dumps(line) + "\n"


def row_counts(result: dg.ExecuteInProcessResult) -> dict[str, int]:
    counts = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        counts[materialization.asset_key.to_user_string()] = materialization.metadata[
            "dagster/row_count"
        ].value
    return counts


def lake(settings: Settings, table: str, day: str) -> pl.DataFrame:
    return pl.read_parquet(Path(settings.lake_root) / "telemetry" / table / f"{day}.parquet")


def players_in(settings: Settings, table: str, day: str, column: str = "player_key") -> dict:
    """Rows of `table` on `day` per watched player (deleted ones and the speaker)."""
    rows = lake(settings, table, day).get_column(column)
    return {raw: int((rows == key(raw)).sum()) for raw in (DELETED_DAY1, DELETED_DAY2, SPEAKER)}


def one_run(settings: Settings) -> dict[str, object]:
    """Each day's telemetry steps, then the global ones; what each day wrote when it ran."""
    story: dict[str, object] = {}
    for day in SAMPLE_DATES:
        story[day] = row_counts(materialize(DAILY, day))
        story[f"{day} silver players"] = players_in(settings, "accepted_events", day)
        story[f"{day} dialogue players"] = players_in(settings, "dialogues", day, "split_group")
    story["global"] = row_counts(materialize(GLOBAL))
    story["after release"] = {
        day: {
            "silver": players_in(settings, "accepted_events", day),
            "dialogues": players_in(settings, "dialogues", day, "split_group"),
        }
        for day in SAMPLE_DATES
    }
    return story


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Settings, dict, dict]]:
    """The samples with the landed deletion and withdrawal, run twice (an isolated data folder)."""
    root = tmp_path_factory.mktemp("one_story")
    with pytest.MonkeyPatch.context() as patch:
        settings = isolate(root, patch, KEY_ENV)
        shutil.copytree(SAMPLES, settings.raw_root)
        withdrawal = {"granted": False, "scopes": ["sft"]}
        deletion = {"request_id": "del_test", "scope": "all"}
        requests = event("evt_drop", "consent", SPEAKER, withdrawal) + event(
            "evt_delete", "deletion_request", DELETED_DAY2, deletion
        )
        land(settings, "telemetry", DAY2, "requests.jsonl", requests)
        first = one_run(settings)
        second = one_run(settings)
        yield settings, first, second


def test_a_second_run_writes_every_table_with_the_same_rows(two_runs) -> None:
    _, first, second = two_runs
    assert second == first
    assert first[DAY1]["telemetry/accepted_events"] == 282
    assert first[DAY2]["telemetry/accepted_events"] == 313
    assert (first[DAY1]["telemetry/dialogues"], first[DAY2]["telemetry/dialogues"]) == (11, 12)
    # the churner's request of each day and the landed one
    assert first["global"]["telemetry/deletions"] == 3


def test_a_deletion_takes_effect_on_its_own_day_in_the_first_run(two_runs) -> None:
    _, first, _ = two_runs
    # no release ran before: the day-1 request keeps the player out of day 1's silver already
    assert first[f"{DAY1} silver players"][DELETED_DAY1] == 0
    assert first[f"{DAY2} silver players"][DELETED_DAY1] == 0
    assert first[f"{DAY2} silver players"][DELETED_DAY2] == 0


def test_a_later_deletion_removes_earlier_days_in_the_run_that_ingests_it(two_runs) -> None:
    settings, first, _ = two_runs
    # day 1 was built with the state of day 1: the player's consent-free events were in it
    assert first[f"{DAY1} silver players"][DELETED_DAY2] == 13
    # the release of the same run erased them from day 1 (the deletion log's retroactive rewrite)
    assert first["after release"][DAY1]["silver"][DELETED_DAY2] == 0
    log = pl.read_parquet(Path(settings.lake_root) / "telemetry" / "deletion_log.parquet")
    logged = log.filter(pl.col("player_key") == key(DELETED_DAY2))
    # 13 by each run: the second run re-ingested day 1 from raw and built it as of day 1 again
    assert json.loads(logged.item(0, "rows_removed"))["telemetry/accepted_events"] == 13 + 13


def test_a_consent_withdrawal_takes_effect_in_the_run_that_ingests_it(two_runs) -> None:
    settings, first, second = two_runs
    # day 1 had the speaker's sft consent: their two conversations were built on day 1 ...
    assert first[f"{DAY1} dialogue players"][SPEAKER] == 2
    assert first[f"{DAY1} silver players"][SPEAKER] == 28
    # ... and the day-2 withdrawal removed them in the same run, from the feed and from silver
    # (the 18 dialogue turns; the speaker's 10 events of other types need no sft consent)
    assert first["after release"][DAY1]["dialogues"][SPEAKER] == 0
    assert first["after release"][DAY1]["silver"][SPEAKER] == 10
    # the speaker's 19 day-2 events are no dialogue: the withdrawal leaves them in silver
    assert first["after release"][DAY2]["silver"][SPEAKER] == 19
    exclusions = pl.read_parquet(Path(settings.lake_root) / "telemetry" / "exclusions.parquet")
    assert exclusions.filter(pl.col("subject") == f"sft:{key(SPEAKER)}").get_column(
        "reason"
    ).to_list() == ["no_consent"]
    # a rerun of day 1 does not read day 2's withdrawal: the same conversations, removed again
    assert second[f"{DAY1} dialogue players"][SPEAKER] == 2
    assert second["after release"][DAY1]["dialogues"][SPEAKER] == 0
