"""The project's persistent Dagster instance, the one `make ui` shows.

`$DAGSTER_HOME` when set (the Makefile sets it to `data/.dagster`); otherwise `<data dir>/.dagster`,
the same folder, so `distill run` / `distill backfill` outside `make` are still visible in the UI
instead of running on a throwaway instance.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from distill_assets.lib.runlock import open_instance
from distill_assets.lib.settings import Settings

INSTANCE_FOLDER = ".dagster"


def instance_home(settings: Settings) -> Path:
    """Return the folder of the project's Dagster instance (see the module docstring)."""
    home = os.environ.get("DAGSTER_HOME")
    return Path(home) if home else Path(settings.data_dir) / INSTANCE_FOLDER


def project_instance(settings: Settings) -> dg.DagsterInstance:
    """Open the project's persistent Dagster instance, creating its folder and storage if needed.

    The storage is created under a lock (`lib/runlock.open_instance`), so concurrent first runs on
    a fresh home cannot corrupt it.
    """
    return open_instance(instance_home(settings))


def recover(instance: dg.DagsterInstance) -> list[str]:
    """Settle what ended processes left on the instance; return one line per thing settled.

    Runs of a `distill` process that died mid-run are marked failed (`runlock.fail_orphaned_runs`)
    and backfills a `distill backfill` submitted to a daemon that stopped before starting them
    are cancelled (`daemon.cancel_stranded_backfills`). The caller holds the data dir's run lock.
    """
    from distill_assets.defs.release.sensors import CLI_TAG
    from distill_assets.lib.runlock import fail_orphaned_runs
    from distill_assets.operations.daemon import STRANDED, cancel_stranded_backfills

    lines = [
        f"marked run {run_id} failed: its distill run process had ended"
        for run_id in fail_orphaned_runs(instance)
    ]
    lines += [STRANDED.format(b) for b in cancel_stranded_backfills(instance, CLI_TAG)]
    return lines
