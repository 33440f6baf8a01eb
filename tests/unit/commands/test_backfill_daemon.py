"""`distill backfill` hands its plan to a running Dagster daemon as one asset backfill."""

from __future__ import annotations

import time

import dagster as dg
import pytest
from dagster._daemon.types import DaemonHeartbeat

from distill_assets.cli import main
from distill_assets.lib.settings import Settings
from distill_assets.operations.daemon import daemon_running, submit_backfill
from distill_assets.operations.instance import project_instance
from tests.conftest import land


def _beat(instance: dg.DagsterInstance, at: float) -> None:
    instance.add_daemon_heartbeat(DaemonHeartbeat(at, "BACKFILL", "test-daemon", None))


def _targets(backfill) -> set[tuple[str, str | None]]:
    subset = backfill.asset_backfill_data.target_subset
    return {
        (ap.asset_key.to_user_string(), ap.partition_key)
        for ap in subset.iterate_asset_partitions()
    }


def test_daemon_is_running_only_with_a_recent_heartbeat(distill_env: Settings) -> None:
    with project_instance(distill_env) as instance:
        assert not daemon_running(instance)
        _beat(instance, 1_000.0)
        assert daemon_running(instance, now=1_060.0)
        assert not daemon_running(instance, now=1_200.0)


def test_submitted_backfill_targets_exactly_the_plan(distill_env: Settings) -> None:
    from distill_assets.definitions import defs

    dialogues = dg.AssetKey(["telemetry", "dialogues"])
    curated = [dg.AssetKey(["curation", "sft"]), dg.AssetKey(["release", "candidate"])]
    plan = {"2026-11-19": [dialogues], "2026-11-20": [dialogues], None: curated}
    with project_instance(distill_env) as instance:
        backfill_id = submit_backfill(
            instance, defs().resolve_asset_graph(), plan, tags={"t": "1"}, title="test"
        )
        (backfill,) = instance.get_backfills()
    assert backfill.backfill_id == backfill_id
    assert backfill.tags == {"t": "1"}
    assert _targets(backfill) == {
        ("telemetry/dialogues", "2026-11-19"),
        ("telemetry/dialogues", "2026-11-20"),
        ("curation/sft", None),
        ("release/candidate", None),
    }


def test_backfill_command_submits_to_a_running_daemon(
    distill_env: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    land(distill_env, "revisions", "2026-11-19", "a.jsonl", "{}\n")
    with project_instance(distill_env) as instance:
        _beat(instance, time.time())
    assert main(["backfill", "--from", "2026-11-18", "--to", "2026-11-20"]) == 0
    out = capsys.readouterr().out
    assert "a Dagster daemon is running: submitted backfill " in out
    with project_instance(distill_env) as instance:
        (backfill,) = instance.get_backfills()
        assert instance.get_runs() == []
    targets = _targets(backfill)
    assert ("telemetry/dialogues", "2026-11-19") in targets
    assert ("traces/events", "2026-11-19") in targets
    assert ("release/dataset", None) in targets
    assert {partition for _, partition in targets} == {"2026-11-19", None}
    assert backfill.tags["distill/launched_by"] == "backfill"
