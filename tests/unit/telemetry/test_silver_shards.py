"""A day's silver telemetry in shards: merged byte for byte into the unsharded step's file.

`privacy.SORT_CHUNK_ROWS` is made small so a small inline day has many ranges.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from upath import UPath

from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.player_ids import PlayerIdHasher, hmac_pads, player_key
from distill_assets.defs.resources import DistillSettings, LakeIOManager
from distill_assets.defs.telemetry import mention_index, privacy, silver_shards
from distill_assets.defs.telemetry.assets import silver_assets, silver_shard_key
from distill_assets.defs.telemetry.privacy import SilverIdentity, write_accepted_events
from distill_assets.lib.lake import partition_path
from distill_assets.lib.sql import connect
from distill_assets.rules import telemetry_privacy
from tests.conftest import isolate

DAY = "2026-11-19"
T0 = 1795082400.0
KEY = b"test-key"
PLAYERS = [f"p_{n:04d}" for n in range(6)]
FINGERPRINT = "inputs-1"


def day_events(count: int) -> pl.DataFrame:
    """Return `count` bronze events of six players: texts naming players, locations, steps.

    Out of server-time order in the file, so `event_seq` is not the row order.
    """
    rows = []
    for n in range(count):
        named = PLAYERS[(n + 1) % len(PLAYERS)]
        kind = ("dialogue_turn", "trajectory_step", "reasoning")[n % 3]
        text = f"ask {named} or {named.upper()} at the well" if n % 4 else "hello \u212aate"
        payload: dict[str, object] = {"text": text, "location": {"region": "ur", "x": n, "y": 2}}
        rows.append(
            {
                "event_id": f"e{n:04d}",
                "event_type": kind,
                "player_key": player_key(KEY, PLAYERS[n % len(PLAYERS)]),
                "session_id": "s",
                "client_ts": T0 + (n * 7919) % count - 0.2,
                "server_ts": T0 + (n * 7919) % count,
                "payload": json.dumps(payload),
                "source_file": "telemetry/d/a.jsonl",
                "line_no": n + 1,
            }
        )
    return pl.DataFrame(rows)


def make_day(folder: Path, count: int) -> silver_shards.SilverDay:
    """Write a bronze day of `count` events (row groups of 10 rows) and return its inputs."""
    events = day_events(count)
    bronze = folder / "events.parquet"
    events.write_parquet(bronze, row_group_size=10)
    ids = events.get_column("event_id")
    checks = pl.LazyFrame(
        {
            "event_id": [ids[3], ids[5], ids[5]],
            "check": ["bot_signature", "impossible_action", "timestamp_skew"],
            "decision": ["reject", "flag", "flag"],
        }
    )
    inner, outer = hmac_pads(KEY)
    identity = SilverIdentity(
        pads={"inner_pad": inner, "outer_pad": outer},
        known=events.lazy().select("player_key"),
        consent_events=events.lazy()
        .select("player_key")
        .unique()
        .join(pl.LazyFrame({"data_type": list(telemetry_privacy.DATA_TYPES)}), how="cross")
        .with_columns(granted=pl.lit(True), server_ts=pl.lit(0.0), event_id=pl.lit("grant")),
    )
    deleted = pl.LazyFrame({"player_key": [player_key(KEY, PLAYERS[5])]})
    staging = UPath(folder / "_shards" / "telemetry" / "accepted_events" / "d")
    return silver_shards.SilverDay(
        bronze, checks, deleted, identity, staging, FINGERPRINT, FINGERPRINT
    )


def whole_day(day: silver_shards.SilverDay, folder: Path) -> bytes:
    """Return the bytes of the day's silver written by the unsharded step."""
    target = folder / "whole.parquet"
    write_accepted_events(day.events_file, day.validation, day.deleted, target, day.identity)
    return target.read_bytes()


def stage(day: silver_shards.SilverDay, shards: int) -> None:
    """Run the day's token pieces, keys and shards."""
    for piece in range(shards):
        silver_shards.stage_tokens(
            day.events_file, day.identity, day.staging, FINGERPRINT, piece=piece, pieces=shards
        )
    silver_shards.stage_keys(day)
    for shard in range(shards):
        silver_shards.write_shard(day, shard=shard, shards=shards)


def merged(day: silver_shards.SilverDay, folder: Path, shards: int) -> tuple[bytes, object]:
    target = folder / f"merged-{shards}.parquet"
    result = silver_shards.merge_or_compute(day, target, shards)
    assert not day.staging.exists()
    return target.read_bytes(), result


@pytest.mark.parametrize("shards", [2, 3])
def test_merged_shards_are_byte_identical_to_the_unsharded_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shards: int
) -> None:
    monkeypatch.setattr(privacy, "SORT_CHUNK_ROWS", 7)
    day = make_day(tmp_path, 60)
    expected = whole_day(day, tmp_path)
    stage(day, shards)
    data, result = merged(day, tmp_path, shards)
    assert result == silver_shards.MergedSilver(
        rows=pl.read_parquet(data).height, merged=shards, not_merged=None
    )
    assert data == expected
    silver = pl.read_parquet(data)
    assert silver.get_column("event_seq").to_list() == list(range(1, silver.height + 1))
    assert not silver.get_column("payload").str.contains("p_0").any()


def test_the_token_pieces_make_the_days_tokens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(privacy, "SORT_CHUNK_ROWS", 7)
    day = make_day(tmp_path, 60)
    counts = [
        silver_shards.stage_tokens(
            day.events_file, day.identity, day.staging, FINGERPRINT, piece=piece, pieces=3
        )
        for piece in range(3)
    ]
    con = connect(private=True)
    con.register("known", day.identity.known.unique().collect().to_arrow())
    con.read_parquet(str(day.events_file)).create_view("events")
    whole = privacy.player_tokens(con, day.identity.pads)
    con.close()
    assert silver_shards.staged_tokens(day.staging, FINGERPRINT, 3) == whole
    assert all(counts)  # every piece names players
    # another piece count, or another fingerprint, is not the day's
    assert silver_shards.staged_tokens(day.staging, FINGERPRINT, 2) is None
    assert silver_shards.staged_tokens(day.staging, "inputs-2", 3) is None


def test_a_day_of_one_range_is_computed_by_the_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 30 bronze rows, 29 accepted (one rejected, one deleted player's five): one range of 30
    monkeypatch.setattr(privacy, "SORT_CHUNK_ROWS", 30)
    day = make_day(tmp_path, 30)
    expected = whole_day(day, tmp_path)
    stage(day, 2)
    assert not day.staging.exists()  # as many bronze rows as one range: nothing staged
    write = silver_shards.write_shard(day, shard=1, shards=2)
    assert write == silver_shards.ShardWrite(None, silver_shards.ONE_RANGE)
    data, result = merged(day, tmp_path, 2)
    assert data == expected and result.merged == 0


def test_accepted_rows_of_one_range_are_not_divided(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(privacy, "SORT_CHUNK_ROWS", 28)  # 30 bronze rows, 24 accepted
    day = make_day(tmp_path, 30)
    expected = whole_day(day, tmp_path)
    stage(day, 2)
    write = silver_shards.write_shard(day, shard=0, shards=2)
    assert write.cover is None and "one range" in str(write.not_staged)
    data, result = merged(day, tmp_path, 2)
    assert data == expected and result.merged == 0


def test_missing_or_stale_shards_make_the_merge_compute_the_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(privacy, "SORT_CHUNK_ROWS", 7)
    day = make_day(tmp_path, 60)
    expected = whole_day(day, tmp_path)

    stage(day, 3)
    (day.staging / "shard-1.parquet").unlink()
    data, result = merged(day, tmp_path, 3)
    assert data == expected
    assert (result.merged, result.not_merged) == (0, "shard 1 is not staged for these inputs")

    stage(day, 3)
    (day.staging / "ranges" / "4.parquet").unlink()
    data, result = merged(day, tmp_path, 3)
    assert data == expected and result.not_merged == "range 4 is not staged"

    stage(day, 3)  # the inputs changed since (another fingerprint): stale
    stale = silver_shards.SilverDay(
        day.events_file,
        day.validation,
        day.deleted,
        day.identity,
        day.staging,
        "inputs-2",
        FINGERPRINT,
    )
    data, result = merged(stale, tmp_path, 3)
    assert (
        data == expected and result.not_merged == "the day's keys are not staged for these inputs"
    )

    stage(day, 2)  # staged for two shards, merged as three
    data, result = merged(day, tmp_path, 3)
    assert data == expected and result.merged == 0


@pytest.mark.parametrize("missing", [None, "shard-1.parquet", "mentions-0.parquet"])
def test_the_merge_writes_the_days_mention_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str | None
) -> None:
    """Merged from the pieces or computed by the merge: the same index (none if a piece lacks)."""
    monkeypatch.setattr(privacy, "SORT_CHUNK_ROWS", 7)
    index = mention_index.MentionIndex(UPath(tmp_path / "index.parquet"), "inputs-1")
    day = replace(make_day(tmp_path, 60), mentions=index)
    stage(day, 3)
    if missing is not None:
        (day.staging / missing).unlink()
    merged(day, tmp_path, 3)
    if missing == "mentions-0.parquet":  # the shards merge, the pieces' keys are not all there
        assert not index.path.exists()
        return
    # every player is named in the texts; the deleted one too (the index is of bronze)
    assert mention_index.current_keys(index) == sorted(player_key(KEY, p) for p in PLAYERS)


def test_a_shard_without_the_days_tokens_stages_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(privacy, "SORT_CHUNK_ROWS", 7)
    day = make_day(tmp_path, 60)
    silver_shards.stage_keys(day)
    write = silver_shards.write_shard(day, shard=0, shards=2)
    assert write.cover is None and "tokens" in str(write.not_staged)
    assert not (day.staging / "shard-0.parquet").exists()


def test_silver_shard_steps_and_the_merge_as_assets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Token pieces, keys, two shard steps and the merge: the unsharded asset's file."""
    settings = isolate(tmp_path, monkeypatch)
    monkeypatch.setattr(privacy, "SORT_CHUNK_ROWS", 7)
    lake = settings.lake_root
    day = make_day(tmp_path, 60)
    bronze = partition_path(lake, "telemetry", "events", DAY)
    bronze.parent.mkdir(parents=True)
    grants = pl.DataFrame(
        {
            "event_id": [f"c{n}" for n in range(len(PLAYERS))],
            "event_type": "consent",
            "player_key": [player_key(KEY, player) for player in PLAYERS],
            "session_id": "s",
            "client_ts": T0 - 60,
            "server_ts": T0 - 60,
            "payload": json.dumps({"granted": True, "scopes": list(telemetry_privacy.DATA_TYPES)}),
            "source_file": "telemetry/d/a.jsonl",
            "line_no": 0,
        }
    )
    pl.concat([grants, pl.read_parquet(day.events_file)], how="vertical_relaxed").write_parquet(
        bronze.path, row_group_size=10
    )
    validation = pl.DataFrame(
        {"event_id": ["e0003"], "player_key": [""], "event_type": ["decision"]}
    ).with_columns(
        check=pl.lit("bot_signature"), decision=pl.lit("reject"), category=pl.lit("bot_signature")
    )
    validation_path = partition_path(lake, "telemetry", "validation", DAY)
    validation_path.parent.mkdir(parents=True)
    validation.write_parquet(validation_path.path)
    settings_resource = DistillSettings()
    resources = {
        "settings": settings_resource,
        "io_manager": LakeIOManager(settings=settings_resource),
        "player_id_hasher": PlayerIdHasher(key=KEY.decode()),
    }
    source = dg.SourceAsset(key=["telemetry", "validation"], partitions_def=daily_partitions())
    silver = UPath(partition_path(lake, "telemetry", "accepted_events", DAY))

    (single,) = silver_assets(1)
    assert dg.materialize([single, source], partition_key=DAY, resources=resources).success
    expected = silver.read_bytes()
    silver.unlink()
    # the day's mention index: the known players its texts name (all six)
    index = mention_index.day_index(lake, DAY)
    assert mention_index.current_keys(index) == sorted(
        player_key(KEY, player) for player in PLAYERS
    )
    expected_index = index.path.read_bytes()
    index.path.unlink()

    assets = silver_assets(2)
    assert [a.key.to_user_string() for a in assets] == [
        "telemetry/accepted_events_tokens_0",
        "telemetry/accepted_events_tokens_1",
        "telemetry/accepted_events_keys",
        "telemetry/accepted_events_shard_0",
        "telemetry/accepted_events_shard_1",
        "telemetry/accepted_events",
    ]
    merge = assets[-1]
    assert {silver_shard_key(0), silver_shard_key(1)} <= set(merge.asset_deps[merge.key])
    result = dg.materialize([*assets, source], partition_key=DAY, resources=resources)
    assert result.success and silver.read_bytes() == expected
    assert index.path.read_bytes() == expected_index  # the union of the token pieces'
    shard = result.asset_materializations_for_node("telemetry__accepted_events_shard_1")[0]
    assert shard.metadata["staged"].value is True
    merged_step = result.asset_materializations_for_node("telemetry__accepted_events")[0]
    assert merged_step.metadata["shards"].value == 2
    assert not silver_shards.silver_shard_dir(lake, DAY).exists()
