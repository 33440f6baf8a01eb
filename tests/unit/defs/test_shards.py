"""A day ingested in shards and merged is byte-identical to the day ingested whole."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from pathlib import Path

import dagster as dg
import polars as pl
import pyarrow.parquet as pq
import pytest

from distill_assets.commands.sample import generators
from distill_assets.contracts import escalations, revisions, telemetry, traces
from distill_assets.defs.ingest import ingest_partition
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.player_ids import PlayerIdHasher
from distill_assets.defs.resources import DistillSettings
from distill_assets.defs.shards import (
    ShardFiles,
    ShardStats,
    ingest_day,
    ingest_shard,
    merge_shards,
    shard_assets,
    shard_dir,
    shard_key,
    shard_keys,
    split_files,
    split_sizes,
)
from distill_assets.defs.telemetry.assets import parse_params
from distill_assets.lib.rawcontract import RawContract
from distill_assets.lib.rawfiles import list_raw_files
from distill_assets.lib.settings import Settings
from tests.conftest import isolate

DAY = "2026-11-19"
PIECES = 3


def split_day(raw: Path, source: str, day: str = DAY) -> None:
    """Cut every plain file of the day in `PIECES` files (line ranges, in order), then add a
    last file replaying lines of the first (repeats) and each with a changed value (conflicts)."""
    folder = raw / source / day
    first_lines: list[bytes] = []
    for path in sorted(folder.iterdir()):
        data = (
            gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
        )
        lines = [line + b"\n" for line in data.split(b"\n")]
        lines[-1] = lines[-1][:-1]
        first_lines = first_lines or lines
        if path.name.endswith(".gz"):
            continue
        path.unlink()
        step = -(-len(lines) // PIECES)
        for piece in range(PIECES):
            chunk = lines[piece * step : (piece + 1) * step]
            (folder / f"{path.name}.{piece}.jsonl").write_bytes(b"".join(chunk))
    replay = [line for line in first_lines[:40] if line.strip()]
    changed = [line.replace(b'"ts":', b'"ts" :', 1) for line in replay[:20]]
    (folder / "zz-replay.jsonl").write_bytes(b"".join(replay + changed))
    (folder / "m-notes.txt").write_text("an unsupported file: a quarantine row\n")


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("raw")
    for source, generate in generators().items():
        generate(root, DAY, 2, 0)
        split_day(root, source)
    return root


def folder(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


CASES: dict[str, tuple[RawContract, tuple[str, ...]]] = {
    "traces": (traces.RAW, ()),
    "escalations": (escalations.RAW, ("line",)),
    "revisions": (revisions.RAW, ("line",)),
    "telemetry": (telemetry.RAW, ("line",)),
}


def params_of(source: str) -> dict[str, object] | None:
    return parse_params(PlayerIdHasher(key="k" * 32))[0] if source == "telemetry" else None


@pytest.mark.parametrize("shards", [2, 3, 7])
@pytest.mark.parametrize("source", list(CASES))
def test_merged_shards_are_byte_identical_to_the_whole_day(
    raw: Path, tmp_path: Path, source: str, shards: int
) -> None:
    contract, exclude = CASES[source]
    params = params_of(source)
    paths = list_raw_files(str(raw), source, DAY)
    whole = ingest_partition(
        contract,
        paths,
        raw_root=str(raw),
        params=params,
        bronze_exclude=exclude,
        workdir=folder(tmp_path / "whole"),
    )
    parts = []
    for number, files in enumerate(split_files(paths, shards)):
        shard = ingest_shard(
            contract,
            files,
            raw_root=str(raw),
            params=params,
            bronze_exclude=exclude,
            workdir=folder(tmp_path / f"shard-{number}"),
        )
        parts.append(ShardFiles(str(shard.bronze.path), str(shard.quarantine.path)))
    merged = merge_shards(contract, parts, paths, workdir=folder(tmp_path / "merged"))

    assert digest(merged.bronze.path) == digest(whole.bronze.path)
    assert digest(merged.quarantine.path) == digest(whole.quarantine.path)
    assert merged.bronze_rows == whole.bronze_rows
    assert merged.quarantine_by_reason == whole.quarantine_by_reason
    for name in ("files", "records", "blank_lines", "utf8_replaced"):
        assert getattr(merged.stats, name) == getattr(whole.stats, name)


def test_the_sample_day_has_repeats_across_shards(raw: Path, tmp_path: Path) -> None:
    """The replayed lines are quarantined by the merge: in another shard than their first."""
    paths = list_raw_files(str(raw), "revisions", DAY)
    ranges = split_files(paths, 3)
    assert [len(r) for r in ranges] == [3, 3, 2] and ranges[2][-1].endswith("zz-replay.jsonl")
    parts = []
    for number, files in enumerate(ranges):
        shard = ingest_shard(
            revisions.RAW,
            files,
            raw_root=str(raw),
            bronze_exclude=("line",),
            workdir=folder(tmp_path / str(number)),
        )
        parts.append(ShardFiles(str(shard.bronze.path), str(shard.quarantine.path)))
    merged = merge_shards(revisions.RAW, parts, paths, workdir=folder(tmp_path / "merged"))
    quarantine = pl.read_parquet(merged.quarantine.path)
    replayed = quarantine.filter(pl.col("source_file").str.ends_with("zz-replay.jsonl"))
    # 60 replayed lines: 2 bad in the first 40 and 2 in their 20 changed copies; the 18 good
    # changed copies conflict with their first occurrence
    assert replayed["reason"].value_counts(sort=True).rows() == [
        ("duplicate_validation", 56),
        ("duplicate_key", 2),
        ("not_an_object", 2),
    ]
    assert replayed["detail"].str.starts_with("conflicts with ").sum() == 18
    repeats = replayed.filter(pl.col("reason") == "duplicate_validation")["detail"]
    assert repeats.str.contains(r"^(repeats|conflicts with) revisions/2026-11-19/v").all()


def test_split_files_cuts_contiguous_ranges_by_bytes() -> None:
    paths = ["d", "a", "c", "b", "e"]
    assert split_files(paths, 2, [10, 10, 10, 10, 10]) == [["a", "b"], ["c", "d", "e"]]
    assert split_files(paths, 2, [100, 1, 1, 1, 1]) == [["a"], ["b", "c", "d", "e"]]
    assert split_files(paths, 3, [0] * 5) == [["a", "b"], ["c"], ["d", "e"]]
    assert split_files(["a"], 3, [5]) == [[], ["a"], []]
    # the same cut over any items (a day's product slices): contiguous index ranges
    assert split_sizes([10, 10, 10, 10, 10], 2) == [range(2), range(2, 5)]
    assert split_sizes([5], 3) == [range(0), range(1), range(1, 1)]
    assert split_sizes([3, 0, 0, 3], 4) == [range(0), range(1), range(1, 3), range(3, 4)]


def test_a_shard_records_what_it_read(raw: Path, tmp_path: Path) -> None:
    paths = list_raw_files(str(raw), "traces", DAY)[:2]
    shard = ingest_shard(traces.RAW, paths, raw_root=str(raw), workdir=folder(tmp_path / "s"))
    stats = ShardStats.read(shard.quarantine.path)
    assert stats.files == sorted(paths) and stats.problems == 0
    empty = ingest_shard(traces.RAW, [], raw_root=str(raw), workdir=folder(tmp_path / "e"))
    assert ShardStats.read(empty.quarantine.path).files == []
    assert pq.read_metadata(empty.bronze.path).num_rows == 0
    notes = tmp_path / "traces" / DAY / "notes.txt"
    notes.parent.mkdir(parents=True)
    notes.write_text("not a raw file\n")
    unread = ingest_shard(
        traces.RAW, [str(notes)], raw_root=str(tmp_path), workdir=folder(tmp_path / "u")
    )
    stats = ShardStats.read(unread.quarantine.path)
    assert (stats.problems, stats.records) == (1, 1)
    assert pq.read_metadata(unread.bronze.path).num_rows == 0


def test_merge_refuses_shards_that_read_other_files(raw: Path, tmp_path: Path) -> None:
    paths = list_raw_files(str(raw), "traces", DAY)
    shard = ingest_shard(traces.RAW, paths[:-1], raw_root=str(raw), workdir=folder(tmp_path / "s"))
    parts = [ShardFiles(str(shard.bronze.path), str(shard.quarantine.path))]
    with pytest.raises(RuntimeError, match=r"^traces: the shards read \d+ files, the day has"):
        merge_shards(traces.RAW, parts, paths, workdir=folder(tmp_path / "m"))
    assert json.loads(pq.read_schema(shard.quarantine.path).metadata[b"distill.shard"])["files"]


def test_shard_steps_and_the_merge_as_assets(
    raw: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two shard assets stage their files; the bronze step merges them and removes the staging;
    run alone it ingests the whole day (same bytes); a missing shard is a one-line error."""
    settings = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DISTILL_RAW_ROOT", str(raw))
    monkeypatch.setenv("DISTILL_INGEST_SHARDS", "2")
    resolved = Settings.resolve()
    shards = shard_assets(traces.RAW, lambda root, day: list_raw_files(root, "traces", day))
    assert [a.key for a in shards] == [shard_key("traces", 0), shard_key("traces", 1)]
    assert shard_keys("traces") == [a.key for a in shards]
    written: list[bytes] = []

    @dg.asset(partitions_def=daily_partitions(), deps=shard_keys("traces"))
    def bronze(context) -> None:
        paths = list_raw_files(resolved.raw_root, "traces", context.partition_key)
        result = ingest_day(context, traces.RAW, paths, resolved)
        written.append(result.bronze.path.read_bytes() + result.quarantine.path.read_bytes())

    resources = {"settings": DistillSettings()}
    staging = shard_dir(resolved.lake_root, "traces", DAY)
    shard_run = dg.materialize(shards, partition_key=DAY, resources=resources)
    assert shard_run.success and sorted(p.name for p in staging.rglob("*.parquet")) == [
        "bronze.parquet",
        "bronze.parquet",
        "quarantine.parquet",
        "quarantine.parquet",
    ]
    metadata = shard_run.asset_materializations_for_node("traces__ingest_shard_1")[0].metadata
    assert metadata["shard"].value == "2 of 2"
    assert dg.materialize([bronze], partition_key=DAY, resources=resources).success
    assert not staging.exists()
    # run alone, with nothing staged: the whole day in the step, the same bytes
    assert dg.materialize([bronze], partition_key=DAY, resources=resources).success
    assert written[0] == written[1]
    whole = ingest_partition(
        traces.RAW,
        list_raw_files(str(raw), "traces", DAY),
        raw_root=str(raw),
        workdir=folder(tmp_path / "whole"),
    )
    assert written[0] == whole.bronze.path.read_bytes() + whole.quarantine.path.read_bytes()

    dg.materialize(shards[:1], partition_key=DAY, resources=resources)
    with pytest.raises(RuntimeError, match=r"^traces 2026-11-19: shard 1 is missing \("):
        dg.materialize([bronze], partition_key=DAY, resources=resources)
    assert settings.lake_root == resolved.lake_root


def test_a_telemetry_shard_stages_no_raw_player_id(raw: Path, tmp_path: Path) -> None:
    paths = list_raw_files(str(raw), "telemetry", DAY)
    ids = {
        match.decode()
        for path in paths
        for match in re.findall(rb'"player_id"\s*:\s*"([^"\\]+)"', Path(path).read_bytes())
    }
    assert len(ids) > 5
    shard = ingest_shard(
        telemetry.RAW,
        paths,
        raw_root=str(raw),
        params=params_of("telemetry"),
        bronze_exclude=("line",),
        workdir=folder(tmp_path / "s"),
    )
    staged = pl.read_parquet(shard.bronze.path)
    assert staged.height > 100 and "shard_line" in staged.columns
    text = staged.select(
        pl.concat_str(pl.col(pl.String), separator="\n", ignore_nulls=True).alias("text")
    )["text"]
    assert not text.str.contains_any(sorted(ids)).any()
