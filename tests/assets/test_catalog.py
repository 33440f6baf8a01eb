"""What the UI shows of an ingest partition: checks evaluated per partition, labelled tables."""

from __future__ import annotations

import dagster as dg
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.jobs import INGEST_JOB
from distill_assets.lib.settings import Settings
from tests.conftest import SAMPLE_DATES

SUCCEEDED = AssetCheckExecutionRecordStatus.SUCCEEDED
FAILED = AssetCheckExecutionRecordStatus.FAILED


def test_every_ingest_check_records_a_partitioned_evaluation(sample_env: Settings) -> None:
    from distill_assets.definitions import defs

    day = SAMPLE_DATES[0]
    with dg.instance_for_test() as instance:
        definitions = defs()
        job = definitions.resolve_job_def(INGEST_JOB)
        result = job.execute_in_process(partition_key=day, instance=instance)
        assert result.success
        selected = job.asset_layer.selected_asset_keys
        graph = definitions.resolve_asset_graph()
        evaluations = {e.asset_check_key: e for e in result.get_asset_check_evaluations()}
        keys = sorted(evaluations, key=str)
        assert keys == sorted(
            (c for c in graph.asset_check_keys if c.asset_key in selected), key=str
        )
        for key in keys:
            records = instance.event_log_storage.get_asset_check_execution_history(key, limit=5)
            # A planned row the evaluation does not complete is what the UI shows "Not Evaluated".
            # Only a warning may fail (the samples exceed the triage pass-rate budget on purpose).
            evaluation = evaluations[key]
            assert evaluation.passed or evaluation.severity == dg.AssetCheckSeverity.WARN, key
            status = SUCCEEDED if evaluation.passed else FAILED
            assert [(r.status, r.partition) for r in records] == [(status, day)], key
        materializations = [
            e.step_materialization_data.materialization
            for e in result.get_asset_materialization_events()
        ]
        meta = {m.asset_key.to_user_string(): m.metadata for m in materializations}
    headers = {
        ("traces/sft_steps", "samples_by_split"): "split",
        ("traces/sft_steps", "samples_by_tool"): "tool",
        ("traces/sft_steps", "samples_by_kind"): "kind",
        ("traces/runs", "runs_by_end"): "ended by",
        ("escalations/distillation_examples", "domains"): "domain",
        ("escalations/distillation_examples", "quality_flags"): "quality flag",
        ("revisions/revision_pairs", "turn_outcomes"): "outcome",
        ("telemetry/dialogues", "dropped_by_reason"): "reason",
    }
    for (asset, name), label in headers.items():
        assert meta[asset][name].value.startswith(f"| {label} | rows |"), (asset, name)
    assert set(meta) == {k.to_user_string() for k in selected}
    for asset, values in meta.items():
        assert values["dagster/row_count"].value >= 0, asset
        assert values["dagster/column_schema"].value.columns, asset
    dialogues = meta["telemetry/dialogues"]
    # the day's conversations that follow an sft grant and pass triage (the run prints the same)
    assert dialogues["dagster/row_count"].value == 11
    columns = dialogues["dagster/column_schema"].value.columns
    assert [c.name for c in columns] == [*feed_schema("sft"), SUBJECT_COLUMN]
    assert columns[0].type == "large_string"
