"""Days ingested in shards publish the release of the unsharded run, byte for byte (real CLI).

Two sample days whose plain raw files are cut into several files each, with a last file replaying
lines of the first (repeats across shards): `distill run` once as is, once with
`DISTILL_INGEST_SHARDS=3` (each source's bronze and each config's day of curation products in 3
shards). Then one source's shard steps of a day on the multiprocess executor: each step in a
process of its own, the day's bronze unchanged.

Two full runs of the release: in `make test-integration`, not `make test`, which keeps every
source's sharded day byte-identical to the whole day and the shard steps and merge as assets
(`tests/unit/defs/test_shards.py`).
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import dagster as dg
import pyarrow.parquet as pq
import pytest

from tests.integration.helpers import BIN, clean_env, run_ok
from tests.integration.test_parallel_ingest import tree_digest
from tests.unit.defs.test_shards import split_day

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

DAYS = ("2026-11-01", "2026-11-02")
SOURCES = ("traces", "escalations", "revisions", "telemetry")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    root = tmp_path_factory.mktemp("sharded")
    raw = root / "raw"
    run_ok(
        [str(BIN / "distill"), "sample", "--out", str(raw), "--days", "2", "--start", DAYS[0]],
        clean_env(root / "gen"),
    )
    for source in SOURCES:
        for day in DAYS:
            split_day(raw, source, day)
    envs = {
        "plain": clean_env(root / "plain"),
        "sharded": clean_env(root / "sharded", DISTILL_INGEST_SHARDS="3"),
    }
    for name, env in envs.items():
        shutil.copytree(raw, Path(env["DISTILL_DATA_DIR"]) / "raw")
        assert "publish_release: ok" in run_ok([str(BIN / "distill"), "run"], env), name
    return envs


def _data(env: dict[str, str], *parts: str) -> Path:
    return Path(env["DISTILL_DATA_DIR"]).joinpath(*parts)


def test_sharded_and_unsharded_runs_publish_identical_releases(
    runs: dict[str, dict[str, str]],
) -> None:
    plain, sharded = runs["plain"], runs["sharded"]
    published = tree_digest(_data(sharded, "hub", "distill"))
    assert published == tree_digest(_data(plain, "hub", "distill"))
    assert len([name for name in published if name.endswith(".parquet")]) >= 3
    # the day tables too, every source's bronze and quarantine; the staged shards are gone
    for source in SOURCES:
        assert tree_digest(_data(sharded, "lake", source)) == tree_digest(
            _data(plain, "lake", source)
        )
    assert not _data(sharded, "lake", "_shards").exists() or not any(
        p.is_file() for p in _data(sharded, "lake", "_shards").rglob("*")
    )
    with dg.DagsterInstance.from_config(sharded["DAGSTER_HOME"]) as instance:
        metadata = _latest_metadata(instance, ["revisions", "ingest_shard_2"])
        assert metadata["shard"].value == "3 of 3"
        assert metadata["raw_files"].value == 1  # the day's last file: the replayed lines
        # the day's products were merged from their 3 shards, not computed by the merge step
        merged = _latest_metadata(instance, ["curation", "sft_products"])
        assert (merged["shards"].value, merged["reused"].value) == (3, False)
        assert merged["dagster/row_count"].value > 0
    # and they are the unsharded run's product files, byte for byte
    for name in ("sft_products", "dpo_products"):
        products = _data(sharded, "lake", "curation", name)
        assert tree_digest(products) == tree_digest(_data(plain, "lake", "curation", name))
    rows = pq.ParquetFile(_data(plain, "lake", "curation", "sft_products", f"{DAYS[0]}.parquet"))
    assert merged["dagster/row_count"].value == rows.metadata.num_rows


def _latest_metadata(instance: dg.DagsterInstance, key: list[str]) -> dict[str, object]:
    """The metadata of the latest materialization of `key` for the first day."""
    (record,) = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(key), asset_partitions=[DAYS[0]]), limit=1
    ).records
    return record.asset_materialization.metadata


CHILD = textwrap.dedent(
    """
    import sys

    import dagster as dg

    from distill_assets.operations.launch import QUIET_RUN_CONFIG
    from distill_assets.operations.scaleout import ingest_job

    day = sys.argv[1]
    keys = [dg.AssetKey(["traces", f"ingest_shard_{k}"]) for k in range(2)]
    keys += [dg.AssetKey(["traces", t]) for t in ("events", "quarantine")]
    job = dg.build_reconstructable_job(
        "distill_assets.operations.scaleout",
        "ingest_job",
        reconstructable_kwargs={"executor": "multiprocess", "max_concurrent": 2},
    )
    with dg.DagsterInstance.get() as instance, dg.execute_job(
        job, instance, run_config=QUIET_RUN_CONFIG, tags={"dagster/partition": day},
        asset_selection=keys,
    ) as result:
        sys.exit(0 if result.success else 1)
    """
)


def test_shard_steps_run_in_processes_of_their_own(
    runs: dict[str, dict[str, str]], tmp_path: Path
) -> None:
    env = clean_env(tmp_path, DISTILL_INGEST_SHARDS="2", DISTILL_EXECUTOR="multiprocess")
    shutil.copytree(_data(runs["plain"], "raw"), _data(env, "raw"))
    run_ok([sys.executable, "-c", CHILD, DAYS[1]], env)

    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        (run,) = instance.get_runs()
        steps = {
            record.event_log_entry.step_key: record.event_log_entry.dagster_event.pid
            for record in instance.get_records_for_run(
                run.run_id, of_type=dg.DagsterEventType.STEP_SUCCESS
            ).records
        }
    ingest = ("traces__ingest_shard_0", "traces__ingest_shard_1", "traces_bronze")
    assert sorted(steps) == sorted([*ingest, "traces__events_raw_reconciles"])
    assert len({steps[step] for step in ingest}) == 3  # each step in a process of its own
    for table in ("events", "quarantine"):
        name = f"{table}/{DAYS[1]}.parquet"
        assert (
            _data(env, "lake", "traces", name).read_bytes()
            == _data(runs["plain"], "lake", "traces", name).read_bytes()
        )
