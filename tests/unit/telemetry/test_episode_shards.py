"""A day's episodes in shards of episode buckets: merged byte for byte into the unsharded step's.

The planted day (`episode_frames`) in buckets of 2 episodes (7 buckets), with an earlier day
published (near-duplicates across the shards) and a Witness review; the output's row groups are
made small too, so that they span the shards.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl
import pytest
from upath import UPath

from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, EmbedderResource, LakeIOManager
from distill_assets.defs.telemetry import episode_assets as episode_wiring
from distill_assets.defs.telemetry import episode_day, episode_shards, witness
from distill_assets.defs.telemetry.competence import competence, pairs_of_candidates
from distill_assets.defs.telemetry.episode_assets import episode_assets, episode_shard_key
from distill_assets.defs.telemetry.episode_day import DayInputs, audit_rates, build_episode_day
from distill_assets.defs.telemetry.episodes import build_episodes
from distill_assets.defs.telemetry.trust import trust_signals, trust_walk
from distill_assets.lib import lake
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.lake import partition_path, write_parquet_atomic
from tests.conftest import isolate
from tests.unit.telemetry.episode_frames import planted_day

DAY = "2026-11-19"
EARLIER = "2026-11-18"
BUCKET_EPISODES = 2
FINGERPRINT = "inputs-1"
OUTPUTS = ("episodes", "episode_pairs")


@pytest.fixture(autouse=True)
def small_row_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(episode_day, "ROW_GROUP_SIZE", 2)
    monkeypatch.setattr(lake, "ROW_GROUP_SIZE", 2)


@pytest.fixture(scope="module")
def day_inputs(tmp_path_factory: pytest.TempPathFactory) -> DayInputs:
    """The planted day's inputs; an earlier day published two of its rows, one is reviewed."""
    lake_root = str(tmp_path_factory.mktemp("lake"))
    events, triage = planted_day()
    embedder = load_embedder()
    inputs = DayInputs(
        events=events,
        triage=triage,
        classes=competence(build_episodes(events), embedder).lazy(),
        walk=trust_walk(trust_signals(events.with_columns(event_seq=pl.int_range(pl.len())))),
        excluded=pl.DataFrame({"player_key": ["p1"]}),
        decisions=pl.DataFrame(schema=witness.DECISION_SCHEMA),
        lake_root=lake_root,
        partition=DAY,
        table="episodes",
    )
    out = tmp_path_factory.mktemp("first") / "episodes.parquet"
    build_episode_day(inputs, embedder, out)
    rows = pl.read_parquet(out)
    earlier = rows.filter(pl.col("episode_id").is_in(["ep-06", "ep-13"]))
    write_parquet_atomic(earlier, partition_path(lake_root, "telemetry", "episodes", EARLIER))
    decisions = pl.DataFrame(
        [(rows.get_column("id")[0], "approve", None, "rev", 1.0)],
        schema=witness.DECISION_SCHEMA,
        orient="row",
    )
    return DayInputs(**{**inputs.__dict__, "decisions": decisions})


def staging(folder: Path, fingerprint: str = FINGERPRINT) -> episode_shards.EpisodeStaging:
    return episode_shards.EpisodeStaging(UPath(folder / "staging"), fingerprint, BUCKET_EPISODES)


def whole_day(inputs: DayInputs, folder: Path) -> tuple[bytes, episode_day.EpisodeDay]:
    target = folder / "whole.parquet"
    day = build_episode_day(inputs, load_embedder(), target, BUCKET_EPISODES)
    return target.read_bytes(), day


def stage(day: episode_shards.EpisodeStaging, inputs: DayInputs, shards: int) -> list[int]:
    return [
        episode_shards.write_shard(day, inputs, load_embedder(), shard=k, shards=shards).buckets
        for k in range(shards)
    ]


def merged(
    day: episode_shards.EpisodeStaging, inputs: DayInputs, folder: Path, shards: int
) -> tuple[bytes, episode_shards.MergedEpisodes]:
    target = folder / "merged.parquet"
    result = episode_shards.merge_or_compute(day, inputs, load_embedder(), target, shards)
    return target.read_bytes(), result


def counts(day: episode_day.EpisodeDay) -> dict:
    """What the step's metadata and pairs are made of."""
    return {
        **day.bucket_counts(),
        "audit": audit_rates(day.audit),
        "index_rows": day.index_rows,
        "duplicates": day.duplicates,
        "published": day.published,
        "steps": day.steps,
        "value_classes": day.value_classes,
        "scores": pl.concat(day.scores).to_list(),
        "head": day.head,
    }


@pytest.mark.parametrize("shards", [2, 3])
def test_merged_shards_are_byte_identical_to_the_unsharded_day(
    day_inputs: DayInputs, tmp_path: Path, shards: int
) -> None:
    expected, whole = whole_day(day_inputs, tmp_path)
    # what could differ between shards is there: near-duplicates, pairs, a review, skips
    assert whole.duplicates and whole.index_rows and whole.below_floor
    assert pairs_of_candidates(whole.candidates()).height
    day = staging(tmp_path)
    buckets = stage(day, day_inputs, shards)
    assert sum(buckets) == 7 and max(buckets) - min(buckets) <= 1
    # the staged rows are the output's columns (pseudonymous player_key, subject hash, embedding)
    published = list(pl.read_parquet_schema(tmp_path / "whole.parquet"))
    staged = pl.read_parquet_schema(day.staging / "rows-0.parquet")
    assert list(staged) == [*published, episode_day.SUBJECT_BUCKET]
    content, result = merged(day, day_inputs, tmp_path, shards)
    assert (result.merged, result.not_merged) == (shards, None)
    assert content == expected
    assert counts(result.day) == counts(whole)
    assert pairs_of_candidates(result.day.candidates()).equals(
        pairs_of_candidates(whole.candidates())
    )
    assert not day.staging.exists()


def test_more_shards_than_buckets_leave_shards_empty(day_inputs: DayInputs, tmp_path: Path) -> None:
    expected, whole = whole_day(day_inputs, tmp_path)
    day = staging(tmp_path)
    assert sorted(stage(day, day_inputs, 9)) == [0, 0, *[1] * 7]
    content, result = merged(day, day_inputs, tmp_path, 9)
    assert (content, result.merged) == (expected, 9)
    assert counts(result.day) == counts(whole)


def test_a_day_without_steps_merges_into_the_unsharded_empty_file(
    day_inputs: DayInputs, tmp_path: Path
) -> None:
    empty = {"events": day_inputs.events.head(0), "classes": day_inputs.classes.head(0)}
    inputs = DayInputs(**{**day_inputs.__dict__, **empty})
    expected, _ = whole_day(inputs, tmp_path)
    day = staging(tmp_path)
    assert stage(day, inputs, 2) == [0, 1]
    content, result = merged(day, inputs, tmp_path, 2)
    assert (content, result.merged) == (expected, 2)


def test_missing_or_stale_shards_make_the_merge_build_the_day(
    day_inputs: DayInputs, tmp_path: Path
) -> None:
    expected, whole = whole_day(day_inputs, tmp_path)
    day = staging(tmp_path)

    stage(day, day_inputs, 2)
    (day.staging / "candidates-1.parquet").unlink()
    content, result = merged(day, day_inputs, tmp_path, 2)
    assert content == expected and result.merged == 0
    assert result.not_merged == "shard 1 is not staged for these inputs"
    assert counts(result.day) == counts(whole)
    assert not day.staging.exists()

    stage(day, day_inputs, 2)
    content, result = merged(staging(tmp_path, "inputs-2"), day_inputs, tmp_path, 2)
    assert content == expected and result.merged == 0
    assert result.not_merged == "shard 0 is not staged for these inputs"

    stage(day, day_inputs, 3)  # staged for 3 shards, merged as 2
    content, result = merged(day, day_inputs, tmp_path, 2)
    assert content == expected and result.merged == 0


def test_the_fingerprint_follows_every_input(tmp_path: Path) -> None:
    silver = UPath(tmp_path / "accepted_events.parquet")
    pl.DataFrame({"a": [1]}).write_parquet(silver.path)
    decisions = tmp_path / "decisions.jsonl"

    def fingerprint(**change: object) -> str:
        settings = {"rules": "r1", "embedder": "hashed/v1", "bucket_episodes": 2, **change}
        return episode_shards.episodes_fingerprint([silver], decisions, **settings)

    first = fingerprint()
    assert fingerprint() == first
    changed = {fingerprint(rules="r2"), fingerprint(embedder="m"), fingerprint(bucket_episodes=3)}
    assert first not in changed and len(changed) == 3
    decisions.write_text('{"row_id": "x"}\n')
    assert fingerprint() != first
    pl.DataFrame({"a": [1, 2]}).write_parquet(silver.path)
    decisions.unlink()
    assert fingerprint() != first


def test_episode_shard_steps_and_the_merge_as_assets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three shard steps and the merge write the unsharded step's files; their metadata too."""
    settings = isolate(tmp_path, monkeypatch)
    monkeypatch.setattr(episode_wiring, "BUCKET_EPISODES", BUCKET_EPISODES)
    lake_root = settings.lake_root
    events, triage = planted_day()
    silver = events.with_columns(event_seq=pl.int_range(pl.len(), dtype=pl.Int64)).collect()
    classes = competence(build_episodes(events), load_embedder())
    for table, frame in (("accepted_events", silver), ("triage", triage), ("competence", classes)):
        write_parquet_atomic(frame, partition_path(lake_root, "telemetry", table, DAY))
    settings_resource = DistillSettings()
    resources = {
        "settings": settings_resource,
        "embedder": EmbedderResource(settings=settings_resource),
        "io_manager": LakeIOManager(settings=settings_resource),
    }
    sources = [
        dg.SourceAsset(key=["telemetry", table], partitions_def=daily_partitions())
        for table in ("accepted_events", "competence")
    ]
    outputs = [UPath(partition_path(lake_root, "telemetry", t, DAY)) for t in OUTPUTS]

    def run(assets: list[dg.AssetsDefinition]) -> tuple[list[bytes], dict, list[int]]:
        result = dg.materialize([*assets, *sources], partition_key=DAY, resources=resources)
        assert result.success
        contents = [path.read_bytes() for path in outputs]
        for path in outputs:
            path.unlink()
        metadata = {
            str(m.asset_key.path[-1]): {k: v.value for k, v in m.metadata.items()}
            for m in result.asset_materializations_for_node("telemetry_episodes")
        }
        shard_steps = [
            m.metadata["buckets"].value
            for k in range(3)
            for m in result.asset_materializations_for_node(f"telemetry__episodes_shard_{k}")
        ]
        return contents, metadata, shard_steps

    (single,) = episode_assets(1)
    expected, metadata, none = run([single])
    assert none == []
    assets = episode_assets(3)
    assert [a.key.to_user_string() for a in assets[:-1]] == [
        "telemetry/episodes_shard_0",
        "telemetry/episodes_shard_1",
        "telemetry/episodes_shard_2",
    ]
    merge = assets[-1]
    assert {episode_shard_key(k) for k in range(3)} <= set(
        merge.asset_deps[merge.keys_by_output_name["episodes"]]
    )
    contents, merged_metadata, buckets = run(assets)
    assert sum(buckets) == 7 and min(buckets) >= 2
    assert contents == expected
    assert merged_metadata["episodes"].pop("shards") == 3
    assert merged_metadata == metadata
    assert not episode_shards.episode_shard_dir(lake_root, DAY).exists()
