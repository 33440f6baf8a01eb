"""The executor is chosen by DISTILL_EXECUTOR: in-process locally, Dagster's own for scale-out."""

from __future__ import annotations

import dagster as dg
import pytest

from distill_assets.lib.executors import DEFAULT_MAX_CONCURRENT, FORKSERVER, distill_executor
from distill_assets.lib.settings import Settings


def _config(executor: dg.ExecutorDefinition) -> dict:
    return executor.config_schema.resolve_config({}).value["config"]


@pytest.fixture(autouse=True)
def _no_executor_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISTILL_EXECUTOR", raising=False)
    monkeypatch.delenv("DISTILL_MAX_CONCURRENT", raising=False)


def test_local_default_runs_every_step_in_the_run_process() -> None:
    from distill_assets.definitions import defs

    assert distill_executor(Settings.resolve()).name == "in_process"
    assert defs().executor.name == "in_process"


def test_multiprocess_from_the_environment_with_its_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DISTILL_EXECUTOR", "multiprocess")
    executor = distill_executor(Settings.resolve())
    assert executor.name == "multiprocess"
    config = _config(executor)
    assert config["max_concurrent"] == DEFAULT_MAX_CONCURRENT
    assert config["start_method"] == {"forkserver": FORKSERVER}
    monkeypatch.setenv("DISTILL_MAX_CONCURRENT", "3")
    assert _config(distill_executor(Settings.resolve()))["max_concurrent"] == 3
    assert _config(distill_executor(Settings.resolve(), "multiprocess", 5))["max_concurrent"] == 5


def test_unknown_executor_or_limit_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="DISTILL_EXECUTOR must be one of"):
        distill_executor(Settings.resolve(), "threads")
    with pytest.raises(ValueError, match="at least 1"):
        distill_executor(Settings.resolve(), "multiprocess", -1)
