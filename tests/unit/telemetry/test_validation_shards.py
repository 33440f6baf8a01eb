"""A day's validation in shards by player: merged byte for byte into the unsharded step's file.

The generated day has twelve players, each failing some check of every kind (timestamps, turn
and step order, ranges, transitions, the offered option), a bot, and a deleted player; a second
day adds a client reusing another player's episode and conversation ids.
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
from distill_assets.defs.telemetry import validation_shards
from distill_assets.defs.telemetry.assets import validation_assets, validation_shard_key
from distill_assets.defs.telemetry.validation import validate_events, validation_rows
from distill_assets.lib.hashing import with_stable_bucket
from distill_assets.lib.lake import partition_path, write_parquet_atomic
from tests.conftest import isolate

DAY = "2026-11-19"
T0 = 1795082400.0
PLAYERS = [f"p{n:02d}" for n in range(12)]
DELETED = "p03"
BOT = "p07"
FINGERPRINT = "inputs-1"


def turn(conversation: str, index: int) -> dict:
    return {"conversation_id": conversation, "turn_index": index, "speaker": "player", "text": "hi"}


def step(episode: str, index: int, pressure: float) -> dict:
    return {
        "episode_id": episode,
        "step_index": index,
        "action": {
            "action_type": "wheel_manipulation",
            "action_details": {"hand_pressure": pressure},
        },
    }


def decision(chosen: str) -> dict:
    return {"chosen_option": chosen, "options": [{"option_id": "a"}, {"option_id": "b"}]}


def player_events(n: int, player: str) -> list[tuple[str, str, float, float | None, dict]]:
    """Player `n`'s events: (kind, session, server_ts, client_ts, payload); a few checks fail.

    Turn 2 is sent before turn 1, step 2 before step 1, step 3 arrives after a step 4 and after
    the episode's end; step 1 is out of range, a decision picks an option not offered and one
    event has a client clock minutes behind (players n by n's parity and remainders).
    """
    t = T0 + 1000.0 * n
    conversation, episode = f"c-{player}", f"e-{player}"
    rows = [
        ("dialogue_turn", "s1", t + 1, t + 1, turn(conversation, 0)),
        ("dialogue_turn", "s1", t + 9, t + 9 - 7 * (n % 2), turn(conversation, 1)),
        ("dialogue_turn", "s1", t + 12, t + 5, turn(conversation, 2)),
        ("trajectory_step", "s1", t + 20, t + 20, step(episode, 0, 0.5)),
        ("trajectory_step", "s1", t + 31, t + 31, step(episode, 1, 1.5 if n % 3 else 0.4)),
        ("trajectory_step", "s1", t + 33, t + 28 if n % 2 else t + 35, step(episode, 2, 0.1)),
        ("trajectory_step", "s2", t + 47, t + 47, step(episode, 4, 0.2)),
        ("episode_end", "s2", t + 50, None, {"episode_id": episode}),
        ("trajectory_step", "s2", t + 58 + n, t + 58 + n, step(episode, 3, 0.3)),
        ("decision", "s2", t + 70, t + 70 - 400 * (n % 4 == 1), decision("c" if n % 2 else "a")),
    ]
    if player == BOT:  # a script: an outcome every 10 s
        rows += [("outcome", "s3", t + 100 + 10 * i, t + 100 + 10 * i, {}) for i in range(22)]
    return rows


def day_events(extra: list[tuple[str, str, str, float, float | None, dict]] = ()) -> pl.DataFrame:
    """Return the day's bronze events (the players' interleaved by id), plus `extra` rows."""
    rows = [(p, *event) for n, p in enumerate(PLAYERS) for event in player_events(n, p)]
    rows += list(extra)
    return pl.DataFrame(
        {
            "event_id": [f"ev{(7919 * i) % 10007:05d}" for i in range(len(rows))],
            "event_type": [r[1] for r in rows],
            "player_key": [r[0] for r in rows],
            "session_id": [r[2] for r in rows],
            "client_ts": [r[4] for r in rows],
            "server_ts": [r[3] for r in rows],
            "payload": [json.dumps(r[5]) for r in rows],
            "source_file": "telemetry/d/a.jsonl",
            "line_no": list(range(1, len(rows) + 1)),
        },
        schema_overrides={"client_ts": pl.Float64},
    )


def make_day(folder: Path, events: pl.DataFrame, fingerprint: str = FINGERPRINT):
    bronze = folder / "events.parquet"
    events.write_parquet(bronze, row_group_size=10)
    return validation_shards.ValidationDay(
        bronze=pl.scan_parquet(bronze),
        deleted=pl.LazyFrame({"player_key": [DELETED]}),
        staging=UPath(folder / "staging"),
        fingerprint=fingerprint,
    )


def written(rows: pl.DataFrame, path: Path) -> bytes:
    """Write validation rows as the lake's IO manager does; return the file's bytes."""
    write_parquet_atomic(rows, UPath(path))
    return path.read_bytes()


def whole_day(day: validation_shards.ValidationDay, folder: Path) -> bytes:
    return written(validate_events(day.events()), folder / "whole.parquet")


def stage(day: validation_shards.ValidationDay, shards: int) -> list[int]:
    return [
        validation_shards.write_shard(day, shard=shard, shards=shards).rows
        for shard in range(shards)
    ]


def merged(
    day: validation_shards.ValidationDay, folder: Path, shards: int
) -> tuple[bytes, validation_shards.MergedValidation]:
    result = validation_shards.merge_or_compute(day, shards)
    return written(result.rows, folder / "merged.parquet"), result


def bucket_of(players: list[str], shards: int) -> dict[str, int]:
    frame = with_stable_bucket(
        pl.DataFrame({"player_key": players}), "player_key", validation_shards.PLAYER_SALT, shards
    )
    return dict(frame.iter_rows())


@pytest.mark.parametrize("shards", [2, 3])
def test_merged_shards_are_byte_identical_to_the_unsharded_day(tmp_path: Path, shards: int) -> None:
    day = make_day(tmp_path, day_events())
    expected = whole_day(day, tmp_path)
    rows = validate_events(day.events())
    checks = set(rows.get_column("check"))
    assert checks >= {
        "clock_skew",
        "turn_out_of_order",
        "step_out_of_order",
        "action_out_of_range",
        "step_index_backwards",
        "action_after_episode_end",
        "chosen_option_not_offered",
        "bot_signature",
    }
    assert DELETED not in set(rows.get_column("player_key"))
    sizes = stage(day, shards)
    assert all(sizes) and sum(sizes) == rows.height
    content, result = merged(day, tmp_path, shards)
    assert (result.merged, result.not_merged) == (shards, None)
    assert content == expected
    assert not day.staging.exists()


def test_a_shard_stages_its_players_rows_and_the_ids_it_judged(tmp_path: Path) -> None:
    day = make_day(tmp_path, day_events())
    buckets = bucket_of(PLAYERS, 2)
    stage(day, 2)
    for shard in range(2):
        players = {p for p, b in buckets.items() if b == shard and p != DELETED}
        staged = pl.read_parquet(day.staging / f"{shard}.parquet")
        assert set(staged.get_column("player_key")) == players  # each fails a check
        ids = pl.read_parquet(day.staging / f"ids-{shard}.parquet")
        assert ids.columns == ["group", "id"]
        assert sorted(ids.rows()) == sorted(
            [("conversation_id", f"c-{p}") for p in players]
            + [("episode_id", f"e-{p}") for p in players]
        )


def test_ids_two_shards_share_make_the_merge_validate_the_day(tmp_path: Path) -> None:
    """Player b reuses player a's episode and conversation ids; a and b are in different shards."""
    buckets = bucket_of(PLAYERS, 2)
    a = next(p for p in PLAYERS if buckets[p] == 0 and p not in (DELETED, BOT))
    b = next(p for p in PLAYERS if buckets[p] == 1 and p not in (DELETED, BOT))
    t = T0 + 1000.0 * PLAYERS.index(a)
    extra = [
        (b, "trajectory_step", "s9", t + 55, t + 55, step(f"e-{a}", 5, 0.5)),
        (b, "dialogue_turn", "s9", t + 14, t + 2, turn(f"c-{a}", 3)),
    ]
    day = make_day(tmp_path, day_events(extra))
    expected = whole_day(day, tmp_path)
    rows = validate_events(day.events())
    found = rows.filter(pl.col("player_key") == b).select("check", "reason").rows()
    # b's step is judged against a's episode end, b's turn against a's turns
    assert ("action_after_episode_end", "step 5 received 5.0 s after episode_end") in found
    assert ("turn_out_of_order", "turn 3 is 3.0 s earlier than turn 2") in found
    stage(day, 2)
    # the shards alone miss both: each judged its own player's part of the reused ids
    staged = pl.concat([pl.read_parquet(day.staging / f"{k}.parquet") for k in range(2)])
    assert validation_rows(staged.lazy()).height == rows.height - 2
    content, result = merged(day, tmp_path, 2)
    assert (result.merged, result.not_merged) == (0, "2 ids span shards")
    assert content == expected
    assert not day.staging.exists()


def test_missing_or_stale_shards_make_the_merge_validate_the_day(tmp_path: Path) -> None:
    day = make_day(tmp_path, day_events())
    expected = whole_day(day, tmp_path)

    stage(day, 2)
    (day.staging / "ids-1.parquet").unlink()
    content, result = merged(day, tmp_path, 2)
    assert content == expected and result.merged == 0
    assert result.not_merged == "shard 1 is not staged for these inputs"
    assert not day.staging.exists()

    stage(day, 2)
    stale = make_day(tmp_path, day_events(), "inputs-2")
    content, result = merged(stale, tmp_path, 2)
    assert content == expected and result.merged == 0
    assert result.not_merged == "shard 0 is not staged for these inputs"

    stage(day, 3)  # staged for 3 shards, merged as 2
    content, result = merged(day, tmp_path, 2)
    assert content == expected and result.merged == 0


def test_an_empty_day_merges_into_the_unsharded_empty_file(tmp_path: Path) -> None:
    day = make_day(tmp_path, day_events().head(0))
    expected = whole_day(day, tmp_path)
    assert stage(day, 2) == [0, 0]
    content, result = merged(day, tmp_path, 2)
    assert (content, result.merged) == (expected, 2)


def test_validation_shard_steps_and_the_merge_as_assets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two shard steps and the merge: the unsharded asset's file."""
    settings = isolate(tmp_path, monkeypatch)
    lake_root = settings.lake_root
    bronze = partition_path(lake_root, "telemetry", "events", DAY)
    bronze.parent.mkdir(parents=True)
    day_events().write_parquet(bronze.path, row_group_size=10)
    settings_resource = DistillSettings()
    resources = {
        "settings": settings_resource,
        "io_manager": LakeIOManager(settings=settings_resource),
    }
    source = dg.SourceAsset(key=["telemetry", "events"], partitions_def=daily_partitions())
    target = UPath(partition_path(lake_root, "telemetry", "validation", DAY))

    (single,) = validation_assets(1)
    assert dg.materialize([single, source], partition_key=DAY, resources=resources).success
    expected = target.read_bytes()
    target.unlink()

    assets = validation_assets(2)
    assert [a.key.to_user_string() for a in assets] == [
        "telemetry/validation_shard_0",
        "telemetry/validation_shard_1",
        "telemetry/validation",
    ]
    merge = assets[-1]
    assert {validation_shard_key(0), validation_shard_key(1)} <= set(merge.asset_deps[merge.key])
    result = dg.materialize([*assets, source], partition_key=DAY, resources=resources)
    assert result.success and target.read_bytes() == expected
    shard = result.asset_materializations_for_node("telemetry__validation_shard_1")[0]
    assert shard.metadata["failed_checks"].value > 0
    merged_step = result.asset_materializations_for_node("telemetry__validation")[0]
    assert merged_step.metadata["shards"].value == 2
    assert "not_merged" not in merged_step.metadata
    assert not validation_shards.validation_shard_dir(lake_root, DAY).exists()
