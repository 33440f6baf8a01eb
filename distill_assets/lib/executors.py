"""Which Dagster executor runs the steps of a run: chosen by deployment, never home-made.

- `in_process` (the default, `make ui` and local development): every step of a run in the run's
  own process, one after another; no process is spawned per step.
- `multiprocess`: Dagster's multiprocess executor, one child process per step, at most
  `max_concurrent` at once, forked from a forkserver that preloaded the definitions. The steps
  of one partition's sources are independent, so a day's four sources ingest in parallel. Each
  step process costs seconds of Dagster start-up: worth it for large partitions only.
- `k8s`: dagster-k8s' `k8s_job_executor`, one Kubernetes Job (a pod) per step, at most
  `max_concurrent` at once (`deploy/README.md`).

Set by `DISTILL_EXECUTOR` and `DISTILL_MAX_CONCURRENT` (default `DEFAULT_MAX_CONCURRENT`), read
from the settings the definitions resolve when the code location loads, so the UI, the daemon
and every run worker agree. Partitions run in parallel as separate runs, limited by the
instance's run queue (`deploy/dagster.postgres.yaml`: `tag_concurrency_limits` on
`daily_ingest`). `execute_in_process` (`distill run`, tests) always runs in-process, whatever is
configured.
"""

from __future__ import annotations

import dagster as dg

from distill_assets.lib.settings import EXECUTORS, Settings

DEFAULT_MAX_CONCURRENT = 2
# step processes fork from a server that has imported the definitions once (not ~2 s each)
FORKSERVER = {"preload_modules": ["distill_assets.definitions"]}


def distill_executor(
    settings: Settings, name: str = "", max_concurrent: int | None = None
) -> dg.ExecutorDefinition:
    """Return the configured executor (arguments, else `settings`, else the default).

    `max_concurrent` is the number of steps one run executes at once (multiprocess and k8s).
    """
    name = name or settings.executor or "in_process"
    limit = max_concurrent or int(settings.max_concurrent or DEFAULT_MAX_CONCURRENT)
    if limit < 1:
        raise ValueError(f"DISTILL_MAX_CONCURRENT must be at least 1, not {limit}")
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor.configured(
            {"max_concurrent": limit, "start_method": {"forkserver": FORKSERVER}},
            name="multiprocess",
        )
    if name == "k8s":
        from dagster_k8s import k8s_job_executor

        return k8s_job_executor.configured({"max_concurrent": limit}, name="k8s")
    raise ValueError(f"DISTILL_EXECUTOR must be one of {', '.join(EXECUTORS)}, not {name!r}")
