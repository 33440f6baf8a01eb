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
