"""`distill backfill` hands its plan to a running Dagster daemon as one asset backfill."""

from __future__ import annotations

import re
import time

import dagster as dg
import pytest
from dagster._core.execution.backfill import BulkActionStatus
from dagster._daemon.types import DaemonHeartbeat

from distill_assets.cli import main
from distill_assets.defs.release.sensors import CLI_TAG
from distill_assets.lib.settings import Settings
from distill_assets.operations.daemon import (
    cancel_stranded_backfills,
    daemon_alive,
    daemon_running,
    submit_backfill,
)
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


def test_daemon_is_running_only_with_a_heartbeat_seconds_old(distill_env: Settings) -> None:
    with project_instance(distill_env) as instance:
        assert not daemon_running(instance)
        _beat(instance, 1_000.0)
        assert daemon_running(instance, now=1_005.0)
        assert not daemon_running(instance, now=1_006.0)


class FakeClock:
    """A clock that `sleep` advances; a heartbeat lands when it reaches `beat_at`."""

    def __init__(self, instance: dg.DagsterInstance, now: float, beat_at: float | None) -> None:
        self.instance, self.now, self.beat_at, self.slept = instance, now, beat_at, 0.0

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds
        if self.beat_at is not None and self.now >= self.beat_at:
            _beat(self.instance, self.beat_at)
            self.beat_at = None


def test_an_old_heartbeat_counts_only_if_a_new_one_follows(distill_env: Settings) -> None:
    """A daemon stopped 20 s ago beats no more: waited for until its beat is due, then given up."""
    with project_instance(distill_env) as instance:
        _beat(instance, 1_000.0)
        gone = FakeClock(instance, now=1_020.0, beat_at=None)
        assert not daemon_alive(instance, clock=gone.time, sleep=gone.sleep)
        assert gone.now == 1_035.0
        alive = FakeClock(instance, now=1_020.0, beat_at=1_030.0)
        assert daemon_alive(instance, clock=alive.time, sleep=alive.sleep)
        assert alive.slept == 10.0
        late = FakeClock(instance, now=1_100.0, beat_at=None)
        assert not daemon_alive(instance, clock=late.time, sleep=late.sleep)
        assert late.slept == 0.0


def test_backfill_with_a_stale_heartbeat_runs_in_process_and_says_so(
    distill_env: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make ui` stopped a minute ago: nothing is handed to the gone daemon, and what was handed
    to it before it stopped is cancelled with a line instead of running when it next starts."""
    from distill_assets.commands import backfill
    from distill_assets.definitions import defs

    executed = []
    monkeypatch.setattr(backfill, "execute_plan", lambda *args: executed.append(args[2]) or 0)
    land(distill_env, "revisions", "2026-11-19", "a.jsonl", "{}\n")
    dialogues = dg.AssetKey(["telemetry", "dialogues"])
    with project_instance(distill_env) as instance:
        graph = defs().resolve_asset_graph()
        stranded = submit_backfill(
            instance, graph, {"2026-11-19": [dialogues]}, {CLI_TAG: "backfill"}, "distill backfill"
        )
        from_ui = submit_backfill(instance, graph, {"2026-11-19": [dialogues]}, {}, "from the UI")
        _beat(instance, time.time() - 60)
    assert main(["backfill", "--from", "2026-11-19", "--to", "2026-11-19"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [
        "[distill] no Dagster daemon is running: running the backfill in this process",
        f"[distill] cancelled backfill {stranded}: submitted to a Dagster daemon that stopped "
        "before starting it",
    ]
    assert executed == [{"2026-11-19": None, None: None}]
    with project_instance(distill_env) as instance:
        statuses = {b.backfill_id: b.status for b in instance.get_backfills()}
    assert statuses == {stranded: BulkActionStatus.CANCELED, from_ui: BulkActionStatus.REQUESTED}


def test_backfills_are_not_cancelled_while_the_daemon_may_be_up(distill_env: Settings) -> None:
    dialogues = dg.AssetKey(["telemetry", "dialogues"])
    with project_instance(distill_env) as instance:
        from distill_assets.definitions import defs

        submit_backfill(
            instance,
            defs().resolve_asset_graph(),
            {"2026-11-19": [dialogues]},
            {CLI_TAG: "backfill"},
            "distill backfill",
        )
        _beat(instance, 1_000.0)
        assert cancel_stranded_backfills(instance, CLI_TAG, now=1_035.0) == []
        (backfill,) = instance.get_backfills()
        assert backfill.status == BulkActionStatus.REQUESTED
        assert cancel_stranded_backfills(instance, CLI_TAG, now=1_036.0) == [backfill.backfill_id]


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


def test_backfill_waits_for_the_next_beat_of_a_daemon_that_may_be_up(
    distill_env: Settings, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A beat 25 s old: the next one is due within seconds; none comes, so it runs here."""
    from distill_assets.commands import backfill

    monkeypatch.setattr(backfill, "execute_plan", lambda *args: 0)
    land(distill_env, "revisions", "2026-11-19", "a.jsonl", "{}\n")
    with project_instance(distill_env) as instance:
        _beat(instance, time.time() - 25)
    assert main(["backfill", "--from", "2026-11-19", "--to", "2026-11-19"]) == 0
    waiting, ran_here = capsys.readouterr().out.splitlines()[-2:]
    assert re.fullmatch(
        r"\[distill\] the Dagster daemon's last heartbeat is (2\d|3[0-4]) s old: waiting for one",
        waiting,
    )
    assert (
        ran_here == "[distill] no Dagster daemon is running: running the backfill in this process"
    )
