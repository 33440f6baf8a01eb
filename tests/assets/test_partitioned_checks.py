"""Checks of partitioned assets are evaluated per partition, so the UI shows their result."""

from __future__ import annotations

import dagster as dg
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus

from distill_assets.defs.jobs import INGEST_JOB
from distill_assets.lib.settings import Settings
from tests.conftest import SAMPLE_DATES

SUCCEEDED = AssetCheckExecutionRecordStatus.SUCCEEDED


def test_every_ingest_check_records_a_partitioned_evaluation(sample_env: Settings) -> None:
    from distill_assets.definitions import defs

    day = SAMPLE_DATES[0]
    with dg.instance_for_test() as instance:
        result = (
            defs()
            .resolve_job_def(INGEST_JOB)
            .execute_in_process(partition_key=day, instance=instance)
        )
        assert result.success
        keys = sorted({e.asset_check_key for e in result.get_asset_check_evaluations()}, key=str)
        assert len(keys) == 14
        for key in keys:
            records = instance.event_log_storage.get_asset_check_execution_history(key, limit=5)
            # A planned row the evaluation does not complete is what the UI shows "Not Evaluated".
            assert [(r.status, r.partition) for r in records] == [(SUCCEEDED, day)], key
