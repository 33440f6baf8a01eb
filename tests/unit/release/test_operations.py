import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.definitions.schedule_definition import ScheduleExecutionData

from distill_assets.defs.jobs import INGEST_JOB, RELEASE_JOB
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.release.landing import folder_fingerprint, landed
from distill_assets.defs.release.sensors import raw_landing, release_after_ingest
from distill_assets.defs.resources import DistillSettings
from tests.conftest import land


@pytest.fixture(scope="module")
def definitions() -> dg.Definitions:
    from distill_assets.definitions import defs

    return defs()


@pytest.mark.parametrize(
    ("tick", "partition"),
    [
        (datetime(2026, 11, 22, 2, 0, tzinfo=UTC), "2026-11-21"),
        (datetime(2026, 1, 1, 2, 0, tzinfo=UTC), "2025-12-31"),
    ],
)
def test_nightly_schedule_runs_yesterdays_partition_at_two_utc(
    definitions, distill_env, tick, partition
):
    schedule = definitions.resolve_schedule_def("nightly_ingest")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 2 * * *", "UTC")
    assert schedule.job_name == INGEST_JOB
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    land(distill_env, "telemetry", partition, "a.jsonl", "{}\n")
    with (
        dg.instance_for_test() as instance,
        dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=tick,
            repository_def=definitions.get_repository_def(),
            resources={"settings": DistillSettings()},
        ) as context,
    ):
        requests = schedule.evaluate_tick(context).run_requests
    assert [r.partition_key for r in requests] == [partition]


def nightly_tick(definitions: dg.Definitions) -> ScheduleExecutionData:
    """Evaluate the `nightly_ingest` tick of 2026-11-22 02:00 UTC."""
    schedule = definitions.resolve_schedule_def("nightly_ingest")
    with (
        dg.instance_for_test() as instance,
        dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=datetime(2026, 11, 22, 2, 0, tzinfo=UTC),
            repository_def=definitions.get_repository_def(),
            resources={"settings": DistillSettings()},
        ) as context,
    ):
        return schedule.evaluate_tick(context)


def test_nightly_schedule_skips_a_day_without_raw_files(definitions, distill_env):
    """An empty folder or none at all: the tick is skipped with the reason, no empty tables."""
    (Path(distill_env.raw_root) / "traces" / "2026-11-21").mkdir(parents=True)
    result = nightly_tick(definitions)
    assert result.run_requests == []
    assert result.skip_message == (
        f"no raw files for 2026-11-21 under {distill_env.raw_root}: nothing to ingest"
    )


@pytest.fixture
def partitions_of_raw_data(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's partitions built again without DISTILL_PARTITIONS_START, then restored."""
    monkeypatch.delenv("DISTILL_PARTITIONS_START")
    daily_partitions.cache_clear()
    yield
    daily_partitions.cache_clear()


def test_nightly_schedule_names_a_day_that_got_data_after_the_definitions_loaded(
    definitions, distill_env, partitions_of_raw_data
):
    """2026-11-21 was empty when the partitions were built: the tick says to reload."""
    land(distill_env, "traces", "2026-11-19", "a.jsonl", "{}\n")
    assert not daily_partitions().has_partition_key("2026-11-21")
    land(distill_env, "traces", "2026-11-21", "a.jsonl", "{}\n")
    result = nightly_tick(definitions)
    assert result.run_requests == []
    assert result.skip_message == (
        "2026-11-21 had no raw files when the definitions loaded: reload the code location"
    )


def test_landing_sensor_starts_stopped_and_sensors_target_the_right_jobs(definitions):
    release = definitions.resolve_sensor_def("release_after_ingest")
    landing = definitions.resolve_sensor_def("raw_landing")
    assert landing.default_status == dg.DefaultSensorStatus.STOPPED
    assert "turn it on in Automation" in landing.description
    # it only reacts to ingest runs, so running by default starts nothing on its own
    assert release.default_status == dg.DefaultSensorStatus.RUNNING
    assert [j.name for j in release._monitored_jobs] == [INGEST_JOB]  # no public accessor
    assert release.job_name == RELEASE_JOB
    assert landing.job_name == INGEST_JOB


def test_release_follows_a_successful_ingest_but_not_a_backfill_run():
    @dg.op
    def noop() -> None:
        pass

    @dg.job(name=INGEST_JOB)
    def fake_ingest() -> None:
        noop()

    cases = [
        ({}, dg.RunRequest),
        ({"dagster/backfill": "abc"}, dg.SkipReason),
        ({"distill/launched_by": "run"}, dg.SkipReason),
    ]
    with dg.instance_for_test() as instance:
        for tags, expected in cases:
            result = fake_ingest.execute_in_process(instance=instance, tags=tags)
            context = dg.build_run_status_sensor_context(
                sensor_name="release_after_ingest",
                dagster_instance=instance,
                dagster_run=result.dagster_run,
                dagster_event=result.get_run_success_event(),
            )
            outcome = release_after_ingest(context)
            assert isinstance(outcome, expected)
            if expected is dg.RunRequest:
                assert outcome.run_key == f"release-after:{result.run_id}"


def test_one_release_per_batch_of_ingest_runs():
    @dg.op
    def noop() -> None:
        pass

    @dg.job(name=INGEST_JOB)
    def fake_ingest() -> None:
        noop()

    def sensor_outcome(instance, result):
        context = dg.build_run_status_sensor_context(
            sensor_name="release_after_ingest",
            dagster_instance=instance,
            dagster_run=result.dagster_run,
            dagster_event=result.get_run_success_event(),
        )
        return release_after_ingest(context)

    with dg.instance_for_test() as instance:
        first = fake_ingest.execute_in_process(instance=instance)
        in_flight = instance.create_run_for_job(fake_ingest, status=dg.DagsterRunStatus.STARTING)
        skipped = sensor_outcome(instance, first)
        assert isinstance(skipped, dg.SkipReason)
        assert (
            skipped.skip_message == f"1 later daily_ingest run(s) will release: {in_flight.run_id}"
        )
        instance.report_run_canceled(in_flight)
        second = fake_ingest.execute_in_process(instance=instance)
        assert sensor_outcome(instance, first).skip_message.endswith(second.run_id)
        released = sensor_outcome(instance, second)
        assert isinstance(released, dg.RunRequest)
        assert released.run_key == f"release-after:{second.run_id}"


def evaluate(cursor: str | None) -> dg.SensorResult:
    context = dg.build_sensor_context(cursor=cursor, resources={"settings": DistillSettings()})
    return raw_landing(context)


def test_landing_sensor_requests_each_changed_complete_date_once(distill_env):
    land(distill_env, "traces", "2025-03-01", "a.jsonl", '{"kind": "run_start"}\n')
    land(distill_env, "revisions", "2025-03-01", "b.jsonl.gz", b"\x1f\x8b")
    land(distill_env, "telemetry", "2025-03-02", "c.jsonl", "{}\n")
    land(distill_env, "telemetry", "2999-01-01", "future.jsonl", "{}\n")
    # an unsupported file is ingested as an `unsupported_file` quarantine row, never skipped
    land(distill_env, "telemetry", "2025-03-03", "notes.txt", "not raw data")

    first = evaluate(None)
    assert [(r.partition_key, r.job_name) for r in first.run_requests] == [
        ("2025-03-01", None),
        ("2025-03-02", None),
        ("2025-03-03", None),
    ]
    cursor = json.loads(first.cursor)
    assert sorted(cursor) == [
        "revisions/2025-03-01",
        "telemetry/2025-03-02",
        "telemetry/2025-03-03",
        "traces/2025-03-01",
    ]
    assert cursor["traces/2025-03-01"] == folder_fingerprint(
        distill_env.raw_root, "traces", "2025-03-01"
    )
    assert "telemetry/2999-01-01" in landed(distill_env.raw_root)

    assert evaluate(first.cursor).run_requests == []
    assert [r.run_key for r in evaluate(None).run_requests] == [
        r.run_key for r in first.run_requests
    ]

    land(
        distill_env,
        "traces",
        "2025-03-01",
        "a.jsonl",
        '{"kind": "run_start"}\n{"kind": "run_end"}\n',
    )
    grown = evaluate(first.cursor)
    assert [r.partition_key for r in grown.run_requests] == ["2025-03-01"]
    assert grown.run_requests[0].run_key != first.run_requests[0].run_key
    assert grown.run_requests[0].run_key.startswith("raw:2025-03-01:")

    land(distill_env, "escalations", "2025-03-02", "late.jsonl", "{}\n")
    late = evaluate(grown.cursor)
    assert [r.partition_key for r in late.run_requests] == ["2025-03-02"]
    assert evaluate(late.cursor).run_requests == []


def test_stale_partitions_are_marked_in_the_ui_once_per_change(definitions):
    """A partition built under other rules gets an observation saying so; no repeat."""
    sensor = definitions.resolve_sensor_def("stale_after_rules_edit")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    graph = definitions.resolve_asset_graph()
    key = dg.AssetKey(["telemetry", "dialogues"])
    current = graph.get(key).code_version
    with dg.instance_for_test() as instance:
        instance.report_runless_asset_event(
            dg.AssetMaterialization(key, partition="2026-11-19", metadata={"rules_version": "old"})
        )
        with dg.build_sensor_context(
            instance=instance, repository_def=definitions.get_repository_def()
        ) as context:
            result = sensor(context)
        (observation,) = result.asset_events
        assert (observation.asset_key, observation.partition) == (key, "2026-11-19")
        assert observation.metadata["stale"].value == (
            f"telemetry/dialogues 2026-11-19: rules old -> {current}"
        )
        assert observation.metadata["rules_recorded"].value == "old"
        with dg.build_sensor_context(
            instance=instance,
            repository_def=definitions.get_repository_def(),
            cursor=result.cursor,
        ) as context:
            again = sensor(context)
    assert again.asset_events == []
    assert again.skip_reason.skip_message == "1 stale asset partition(s), unchanged"
