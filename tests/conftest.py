"""Shared fixtures: an isolated data folder per test and real Dagster materializations into it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from distill_assets.lib.settings import Settings

# the Makefile's default for `make test`, so a bare `pytest` behaves the same; tests of the
# production rule (no development player key) unset it
os.environ.setdefault("DISTILL_ENV", "development")

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLES = PROJECT_ROOT / "data" / "samples"
SAMPLE_DATES = ("2026-11-19", "2026-11-20")
# The partitions are built when the definitions first load in a process (`defs.partitions`);
# tests land dates from 2025 on into fresh folders, so they pin the start (every day from it a
# partition) instead of depending on whatever raw data the checkout holds.
TEST_PARTITIONS_START = "2025-01-01"


def pytest_configure(config: pytest.Config) -> None:
    """Pin the first daily partition for every in-process definition load."""
    os.environ["DISTILL_PARTITIONS_START"] = TEST_PARTITIONS_START


# `make test` hands whole files to its workers in collection order (xdist `--dist loadfile
# --no-loadscope-reorder`); the files that run whole nights come first, so that no worker is left
# with one of them at the end while the other has finished: end to end, then assets, then the rest
FILE_ORDER = ("e2e", "assets")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Order the test files by `FILE_ORDER` (a stable sort: a file's tests stay together)."""

    def rank(item: pytest.Item) -> int:
        folder = item.path.parent.name
        return FILE_ORDER.index(folder) if folder in FILE_ORDER else len(FILE_ORDER)

    items.sort(key=rank)


# the integration tests (real PostgreSQL and S3 servers) run with `make test-integration` only,
# the client tests (TRL, transformers, torch: the `clients` extra) with `make test-clients` only
collect_ignore = [] if os.environ.get("DISTILL_INTEGRATION") else ["integration"]
if not os.environ.get("DISTILL_CLIENTS"):
    collect_ignore.append("clients")


def isolate(root: Path, patch: pytest.MonkeyPatch, *unset: str) -> Settings:
    """Point every distill root and `DAGSTER_HOME` at fresh folders under `root`; unset `unset`."""
    patch.setenv("DISTILL_DATA_DIR", str(root / "data"))
    for name in ("DISTILL_RAW_ROOT", "DISTILL_LAKE_ROOT", "DISTILL_HUB_ROOT", *unset):
        patch.delenv(name, raising=False)
    patch.setenv("DAGSTER_HOME", str(root / "dagster_home"))
    (root / "dagster_home").mkdir()
    return Settings.resolve()


@pytest.fixture
def distill_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Point every distill root at a fresh folder under `tmp_path`."""
    return isolate(tmp_path, monkeypatch)


@pytest.fixture
def sample_env(distill_env: Settings) -> Settings:
    """`distill_env` with the committed samples landed in its raw root."""
    shutil.copytree(SAMPLES, distill_env.raw_root)
    return distill_env


def land(settings: Settings, source: str, day: str, name: str, text: str | bytes) -> Path:
    """Write one raw file into `<raw root>/<source>/<day>/<name>` and return its path."""
    path = Path(settings.raw_root) / source / day / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def without_daily(selection: str) -> str:
    """Return `selection` (Dagster selection syntax) without curation's daily product assets.

    They are partitioned (`DAILY_TAG`): an unpartitioned run of `group:curation` leaves them out,
    as the release job does.
    """
    from distill_assets.defs.jobs import DAILY_TAG, SCOPE_TAG

    return f'({selection}) and not tag:"{SCOPE_TAG}"="{DAILY_TAG[SCOPE_TAG]}"'


def samples_materialized(
    root: Path, selection: str, days: tuple[str, ...]
) -> Iterator[tuple[Settings, ...]]:
    """Yield (settings, one result per day): the committed samples landed in an isolated `root`
    and `selection` materialized for each day, for a module's tests that only read them."""
    with pytest.MonkeyPatch.context() as patch:
        settings = isolate(root, patch)
        shutil.copytree(SAMPLES, settings.raw_root)
        yield (settings, *(materialize(selection, day) for day in days))


def materialize(
    selection: str, partition: str | None = None, instance: dg.DagsterInstance | None = None
) -> dg.ExecuteInProcessResult:
    """Materialize `selection` (Dagster selection syntax) of the real definitions in-process.

    The run goes to `instance` (default: an ephemeral one, holding only this run's events).
    Without `partition`, curation's daily product assets (`DAILY_TAG`) that a selection such as
    `group:curation` names are left out, as the release job leaves them out: they are
    partitioned, and the release computes any product they did not make.
    """
    from distill_assets.definitions import defs

    definitions = defs()
    if partition is None:
        selection = without_daily(selection)
    job = dg.define_asset_job("test_job", selection=selection)
    resolved = dg.Definitions.merge(definitions, dg.Definitions(jobs=[job]))
    return resolved.resolve_job_def("test_job").execute_in_process(
        partition_key=partition, instance=instance, raise_on_error=True
    )
