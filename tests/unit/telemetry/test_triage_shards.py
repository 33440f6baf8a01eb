"""A day's triage in shards: merged byte for byte into the unsharded step's file.

The day's silver is written in small row groups, so its pieces are a few rows each; the judged
batches and the triage file's row groups are made small too, so both span the shards.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from upath import UPath

from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, LakeIOManager
from distill_assets.defs.telemetry import triage, triage_shards
from distill_assets.defs.telemetry.assets import triage_assets, triage_shard_key
from distill_assets.defs.telemetry.events import SILVER_SCHEMA
from distill_assets.lib import lake
from distill_assets.lib.lake import partition_path
from tests.conftest import isolate

DAY = "2026-11-19"
T0 = 1795082400.0
FINGERPRINT = "inputs-1"
SILVER = "accepted_events.parquet"


def step(episode: str, index: int, action_type: str, moisture: float) -> dict:
    return {
        "episode_id": episode,
        "step_index": index,
        "observation": {"game_state": {"moisture": moisture}, "skill_state": {"pottery": 3}},
        "action": {"action_type": action_type, "action_details": {"hand_pressure": 0.2}},
    }


def decision(scenario: str, state_hash: str) -> dict:
    return {"scenario_id": scenario, "game_state_hash": state_hash, "ambiguity_score": 0.1}


def day_silver(count: int) -> pl.DataFrame:
    """Return `count` silver events in silver order whose context spans the whole day.

    Player q's karma is high only at the day's end, episode `ep` repeats its first action and
    state hash `h1` is decided again at the end, player r predicted `famine` at the start and
    decides it at the end; the rest are small talk, steps and non-candidate events.
    """
    rows: list[tuple[str, str, str, dict]] = [
        ("s-first", "trajectory_step", "p", step("ep", 0, "wheel_manipulation", 0.5)),
        ("d-first", "decision", "q", decision("drought", "h1")),
        ("peer", "peer_prediction", "r", {"scenario_id": "famine"}),
        ("q-turn", "dialogue_turn", "q", {"conversation_id": "c", "text": "hello"}),
    ]
    for n in range(count - 8):
        kind = ("dialogue_turn", "trajectory_step", "session_start", "decision")[n % 4]
        payload: dict[str, object] = {
            "dialogue_turn": {"conversation_id": f"c{n}", "text": "hi"},
            "trajectory_step": step(f"e{n % 5}", n, "pottery_glaze", 0.1 * n),
            "session_start": {},
            "decision": decision(f"s{n}", f"x{n % 7}"),
        }[kind]
        rows.append((f"f{n:03d}", kind, f"o{n % 3}", payload))
    rows += [
        ("s-again", "trajectory_step", "p", step("ep", 1, "wheel_manipulation", 0.9)),
        ("d-again", "decision", "p", decision("drought", "h1")),
        ("r-decides", "decision", "r", decision("famine", "h9")),
        ("q-karma", "dialogue_turn", "q", {"conversation_id": "k", "karma_state": 150}),
    ]
    return pl.DataFrame(
        {
            "event_id": [r[0] for r in rows],
            "event_type": [r[1] for r in rows],
            "player_key": [r[2] for r in rows],
            "session_id": "s",
            "event_time": [T0 + n for n in range(len(rows))],
            "event_seq": list(range(1, len(rows) + 1)),
            "payload": [json.dumps(r[3]) for r in rows],
            "location_cell": None,
            "flagged": False,
            "flag_checks": None,
            "source_ref": "telemetry/d/a.jsonl:1",
        },
        schema=SILVER_SCHEMA,
    )


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(triage, "JUDGE_BATCH_ROWS", 4)
    monkeypatch.setattr(lake, "ROW_GROUP_SIZE", 3)


def make_day(folder: Path, count: int = 40) -> triage_shards.TriageDay:
    day_silver(count).write_parquet(folder / SILVER, row_group_size=5)
    return triage_shards.TriageDay(UPath(folder / "staging"), FINGERPRINT)


def whole_day(day: triage_shards.TriageDay, folder: Path) -> bytes:
    target = folder / "whole.parquet"
    triage.write_triage(pl.scan_parquet(folder / SILVER), target)
    return target.read_bytes()


def stage(day: triage_shards.TriageDay, folder: Path, shards: int) -> None:
    for piece in range(shards):
        triage_shards.stage_candidates(day, folder / SILVER, piece=piece, pieces=shards)
    assert triage_shards.stage_context(day, shards) is not None
    for shard in range(shards):
        assert triage_shards.write_shard(day, shard=shard, shards=shards).rows is not None


def merged(
    day: triage_shards.TriageDay, folder: Path, shards: int
) -> tuple[bytes, triage_shards.MergedTriage]:
    target = folder / "merged.parquet"
    result = triage_shards.merge_or_compute(day, pl.scan_parquet(folder / SILVER), target, shards)
    return target.read_bytes(), result


@pytest.mark.parametrize("shards", [2, 3])
def test_merged_shards_are_byte_identical_to_the_unsharded_day(tmp_path: Path, shards: int) -> None:
    day = make_day(tmp_path)
    expected = whole_day(day, tmp_path)
    rows = triage.triage(pl.scan_parquet(tmp_path / SILVER))
    reasons = dict(rows.select("event_id", "reason").iter_rows())
    # the day-wide context, across the shards: karma, previous action, state hash, peer
    assert {e: reasons[e].removeprefix("audit:") for e in ("d-first", "s-again", "d-again")} == {
        "d-first": "high_karma",
        "s-again": "repeated_action",
        "d-again": "seen_scenario",
    }
    assert reasons["r-decides"] == "peer_flagged"
    stage(day, tmp_path, shards)
    sizes = [pl.read_parquet(day.staging / f"judged-{k}.parquet").height for k in range(shards)]
    assert all(sizes) and sum(sizes) == rows.height
    content, result = merged(day, tmp_path, shards)
    assert result == triage_shards.MergedTriage(rows.height, shards, None)
    assert content == expected
    assert not day.staging.exists()


def test_an_empty_day_merges_into_the_unsharded_empty_file(tmp_path: Path) -> None:
    day = make_day(tmp_path, count=0)
    pl.DataFrame(schema=SILVER_SCHEMA).write_parquet(tmp_path / SILVER)
    expected = whole_day(day, tmp_path)
    stage(day, tmp_path, 2)
    content, result = merged(day, tmp_path, 2)
    assert (content, result.merged) == (expected, 2)


def test_missing_or_stale_shards_make_the_merge_compute_the_day(tmp_path: Path) -> None:
    day = make_day(tmp_path)
    expected = whole_day(day, tmp_path)

    stage(day, tmp_path, 2)
    (day.staging / "judged-1.parquet").unlink()
    content, result = merged(day, tmp_path, 2)
    assert content == expected and result.merged == 0
    assert result.not_merged == "shard 1 is not staged for these inputs"
    assert not day.staging.exists()

    stage(day, tmp_path, 2)
    stale = triage_shards.TriageDay(day.staging, "inputs-2")
    content, result = merged(stale, tmp_path, 2)
    assert content == expected and result.merged == 0
    assert "not staged for these inputs" in str(result.not_merged)

    stage(day, tmp_path, 3)  # staged for 3 shards, merged as 2
    content, result = merged(day, tmp_path, 2)
    assert content == expected and result.merged == 0


def test_a_shard_without_the_days_context_stages_nothing(tmp_path: Path) -> None:
    day = make_day(tmp_path)
    triage_shards.stage_candidates(day, tmp_path / SILVER, piece=0, pieces=2)
    assert triage_shards.stage_context(day, 2) is None
    written = triage_shards.write_shard(day, shard=0, shards=2)
    assert written.rows is None and "not staged" in str(written.not_staged)
    assert not (day.staging / "judged-0.parquet").exists()


def test_triage_shard_steps_and_the_merge_as_assets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Candidate pieces, the context, two shard steps and the merge: the unsharded file."""
    settings = isolate(tmp_path, monkeypatch)
    lake_root = settings.lake_root
    silver = partition_path(lake_root, "telemetry", "accepted_events", DAY)
    silver.parent.mkdir(parents=True)
    day_silver(40).write_parquet(silver.path, row_group_size=5)
    settings_resource = DistillSettings()
    resources = {
        "settings": settings_resource,
        "io_manager": LakeIOManager(settings=settings_resource),
    }
    source = dg.SourceAsset(key=["telemetry", "accepted_events"], partitions_def=daily_partitions())
    target = UPath(partition_path(lake_root, "telemetry", "triage", DAY))

    (single,) = triage_assets(1)
    assert dg.materialize([single, source], partition_key=DAY, resources=resources).success
    expected = target.read_bytes()
    target.unlink()

    assets = triage_assets(2)
    assert [a.key.to_user_string() for a in assets] == [
        "telemetry/triage_candidates_0",
        "telemetry/triage_candidates_1",
        "telemetry/triage_context",
        "telemetry/triage_shard_0",
        "telemetry/triage_shard_1",
        "telemetry/triage",
    ]
    merge = assets[-1]
    assert {triage_shard_key(0), triage_shard_key(1)} <= set(merge.asset_deps[merge.key])
    result = dg.materialize([*assets, source], partition_key=DAY, resources=resources)
    assert result.success and target.read_bytes() == expected
    shard = result.asset_materializations_for_node("telemetry__triage_shard_1")[0]
    assert shard.metadata["staged"].value is True
    merged_step = result.asset_materializations_for_node("telemetry__triage")[0]
    assert merged_step.metadata["shards"].value == 2
    assert not triage_shards.triage_shard_dir(lake_root, DAY).exists()


def test_a_day_of_fewer_row_groups_than_shards_leaves_a_shard_empty(tmp_path: Path) -> None:
    day = make_day(tmp_path)
    day_silver(40).write_parquet(tmp_path / SILVER, row_group_size=20)
    expected = whole_day(day, tmp_path)
    stage(day, tmp_path, 3)
    sizes = [pl.read_parquet(day.staging / f"judged-{k}.parquet").height for k in range(3)]
    assert sorted(sizes)[0] == 0 and sum(sizes) > 0
    content, result = merged(day, tmp_path, 3)
    assert (content, result.merged) == (expected, 3)
