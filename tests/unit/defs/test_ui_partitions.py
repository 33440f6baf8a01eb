"""What the Dagster UI shows and launches, through a real code server and a real instance.

The code location is loaded as `make ui` loads it (`distill_assets.definitions` in a code server
process); the UI reads the partitions from the snapshot it receives, and backfills are the ones
the UI creates, run by Dagster's own backfill daemon code (`execute_backfill_iteration`). Runs
are only submitted here (the queued coordinator holds them): what is counted is the runs a
backfill creates, not their work.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.remote_representation.external import RemoteRepository
from dagster._core.storage.tags import BACKFILL_ID_TAG, PARTITION_NAME_TAG
from dagster._core.test_utils import create_test_daemon_workspace_context, instance_for_test
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.backfill import execute_backfill_iteration

from distill_assets.definitions import defs
from distill_assets.defs.jobs import INGEST_JOB
from distill_assets.lib.settings import Settings
from distill_assets.operations.scaleout import Phase, phase_selection
from tests.conftest import PROJECT_ROOT, land

DAYS = ("2026-11-16", "2026-11-17", "2026-11-19", "2026-11-20")


@pytest.fixture(scope="module")
def ui(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[WorkspaceProcessContext, RemoteRepository]]:
    """A real instance and the code location loaded in its own code server, as `make ui` does.

    Raw files for `DAYS` (and an empty date folder) are landed first, and
    `DISTILL_PARTITIONS_START` is unset: the partitions are the days with raw data. The
    environment is changed only while the code server starts: an asset module imported in this
    process keeps the partitions of its first import, so the tests after these must not see it.
    """
    tmp = tmp_path_factory.mktemp("ui")
    with ExitStack() as stack:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("DISTILL_DATA_DIR", str(tmp / "data"))
            for name in ("DISTILL_RAW_ROOT", "DISTILL_LAKE_ROOT", "DISTILL_HUB_ROOT"):
                env.delenv(name, raising=False)
            env.delenv("DISTILL_PARTITIONS_START")
            settings = Settings.resolve()
            for day in DAYS:
                land(settings, "traces", day, "a.jsonl", "{}\n")
            (Path(settings.raw_root) / "telemetry" / "2026-11-21").mkdir(parents=True)
            target = ModuleTarget(
                module_name="distill_assets.definitions",
                attribute=None,
                working_directory=str(PROJECT_ROOT),
                location_name="distill",
            )
            (tmp / "instance").mkdir()
            instance = stack.enter_context(instance_for_test(temp_dir=str(tmp / "instance")))
            context = stack.enter_context(create_test_daemon_workspace_context(target, instance))
            entries = context.create_request_context().get_code_location_entries()
            entry = next(iter(entries.values()))
            assert entry.code_location is not None, entry.load_error
        yield context, next(iter(entry.code_location.get_repositories().values()))


def test_the_ui_lists_exactly_the_days_with_raw_data(
    ui: tuple[WorkspaceProcessContext, RemoteRepository],
) -> None:
    """No DISTILL_PARTITIONS_START: the first raw date on, days without raw files left out."""
    context, repository = ui
    partition_set = next(p for p in repository.get_partition_sets() if p.job_name == INGEST_JOB)
    assert list(partition_set.get_partition_names(context.instance)) == list(DAYS)
    for node in repository.asset_graph.asset_nodes:
        if node.is_partitioned:
            keys = node.partitions_def.get_partition_keys(dynamic_partitions_store=None)
            assert list(keys) == list(DAYS), node.key


def _backfill_runs(context: WorkspaceProcessContext, backfill_id: str) -> list[dg.DagsterRun]:
    """Run Dagster's backfill daemon iterations until the backfill asks for no more runs.

    The runs stay queued, so an asset backfill has nothing more to launch once an iteration
    adds none; a job backfill is complete once it submitted its runs.
    """
    instance = context.instance
    runs: list[dg.DagsterRun] = []
    for _ in range(5):
        list(execute_backfill_iteration(context, logging.getLogger("test_backfill")))
        before = len(runs)
        runs = list(instance.get_runs(filters=dg.RunsFilter(tags={BACKFILL_ID_TAG: backfill_id})))
        done = instance.get_backfill(backfill_id).status != BulkActionStatus.REQUESTED
        if done or (runs and len(runs) == before):
            break
    return runs


def test_a_job_backfill_of_4_partitions_creates_4_runs(
    ui: tuple[WorkspaceProcessContext, RemoteRepository],
) -> None:
    """The UI's "Launch backfill" on `daily_ingest` (a job backfill): one run per partition."""
    context, repository = ui
    partition_set = next(p for p in repository.get_partition_sets() if p.job_name == INGEST_JOB)
    backfill = PartitionBackfill(
        backfill_id="jobbackfill",
        partition_set_origin=partition_set.get_remote_origin(),
        status=BulkActionStatus.REQUESTED,
        partition_names=list(DAYS),
        from_failure=False,
        reexecution_steps=None,
        tags={},
        backfill_timestamp=time.time(),
    )
    context.instance.add_backfill(backfill)
    runs = _backfill_runs(context, "jobbackfill")
    assert Counter(run.tags[PARTITION_NAME_TAG] for run in runs) == dict.fromkeys(DAYS, 1)
    assert {run.job_name for run in runs} == {INGEST_JOB}


def test_an_asset_backfill_of_the_ingest_assets_creates_one_run_per_partition(
    ui: tuple[WorkspaceProcessContext, RemoteRepository],
) -> None:
    """The UI's backfill of the job's assets (an asset backfill): one run per partition at a time.

    Its first runs hold each day's steps that read no earlier day (`scaleout.Phase.PARALLEL`);
    the steps that do follow, day by day, once the earlier days are in (the runs here stay queued).
    """
    context, repository = ui
    assets = sorted(
        node.key for node in repository.asset_graph.asset_nodes if INGEST_JOB in node.job_names
    )
    assert set(assets) == set(defs().resolve_job_def(INGEST_JOB).asset_layer.selected_asset_keys)
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id="assetbackfill",
        asset_graph=context.create_request_context().asset_graph,
        backfill_timestamp=time.time(),
        tags={},
        asset_selection=assets,
        partition_names=list(DAYS),
        dynamic_partitions_store=context.instance,
        all_partitions=False,
        title=None,
        description=None,
        run_config=None,
    )
    context.instance.add_backfill(backfill)
    runs = _backfill_runs(context, "assetbackfill")
    assert Counter(run.tags[PARTITION_NAME_TAG] for run in runs) == dict.fromkeys(DAYS, 1)
    parallel = phase_selection(defs().resolve_job_def(INGEST_JOB), Phase.PARALLEL)
    assert all(sorted(run.asset_selection or ()) == parallel for run in runs)
