"""`DISTILL_EXECUTOR=k8s` gives the ingest job dagster-k8s' per-step pod executor, limited."""

from __future__ import annotations

import pytest

from distill_assets.operations.scaleout import ingest_job

pytestmark = pytest.mark.integration


def test_k8s_executor_runs_each_step_as_a_pod_with_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DISTILL_EXECUTOR", "k8s")
    monkeypatch.setenv("DISTILL_MAX_CONCURRENT", "6")
    from distill_assets.definitions import defs

    executor = defs().executor
    assert executor.name == "k8s"
    assert executor.config_schema.resolve_config({}).value["config"]["max_concurrent"] == 6
    job = ingest_job("k8s", 3)
    assert job.executor_def.name == "k8s"
    assert job.executor_def.config_schema.resolve_config({}).value["config"]["max_concurrent"] == 3
