"""`distill run`: the embedded default — land samples, ingest every partition, publish a release."""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
from pathlib import Path

import dagster as dg
from upath import UPath

from distill_assets.defs.jobs import INGEST_JOB, RELEASE_JOB
from distill_assets.defs.release.objectstore import load_hint
from distill_assets.lib.rawfiles import list_partitions
from distill_assets.lib.settings import SOURCES, Settings

QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `run` subcommand."""
    parser = subparsers.add_parser(
        "run", help="land sample data, materialize every partition and publish the dataset"
    )
    parser.add_argument(
        "--samples",
        type=Path,
        default=None,
        help="folder of raw samples to land first (default: <data dir>/samples; 'none' to skip)",
    )
    parser.add_argument("--verbose", action="store_true", help="show Dagster's run logs")
    parser.set_defaults(func=run)


def land_samples(samples: Path, raw_root: Path) -> int:
    """Copy sample files missing or different in the raw root; return how many were copied."""
    copied = 0
    for src in sorted(p for p in samples.rglob("*") if p.is_file()):
        dst = raw_root / src.relative_to(samples)
        if dst.exists() and filecmp.cmp(src, dst, shallow=False):
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        copied += 1
    return copied


def run(args: argparse.Namespace) -> int:
    """Land samples, run `daily_ingest` for every raw partition, then `publish_release`."""
    from distill_assets.definitions import defs

    settings = Settings.resolve()
    samples = args.samples or Path(settings.data_dir) / "samples"
    if str(samples) != "none" and samples.is_dir():
        copied = land_samples(samples, Path(settings.raw_root))
        print(f"[distill] landed {copied} new sample file(s) from {samples} in {settings.raw_root}")
    partitions = sorted({p for s in SOURCES for p in list_partitions(settings.raw_root, s)})
    if not partitions:
        print(f"[distill] no raw partitions under {settings.raw_root}: nothing to do")
        return 1
    definitions = defs()
    run_config = {} if args.verbose else QUIET_RUN_CONFIG
    instance = dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None
    ok = True
    for partition in partitions:
        result = definitions.resolve_job_def(INGEST_JOB).execute_in_process(
            partition_key=partition, instance=instance, run_config=run_config, raise_on_error=False
        )
        ok &= result.success
        print(f"[distill] {INGEST_JOB} {partition}: {_outcome(result)}")
    if not ok:
        print("[distill] ingest failed: not publishing (see the run in `make ui`)")
        return 1
    result = definitions.resolve_job_def(RELEASE_JOB).execute_in_process(
        instance=instance, run_config=run_config, raise_on_error=False
    )
    print(f"[distill] {RELEASE_JOB}: {_outcome(result)}")
    if not result.success:
        return 1
    latest = UPath(settings.hub_root) / settings.dataset_name / "latest"
    manifest = latest / "release.json"
    version = json.loads(manifest.read_text())["version"] if manifest.is_file() else "?"
    print(f"[distill] dataset version {version} published at {latest}")
    print("[distill] load it with:")
    print(f"    from datasets import load_dataset; ds = {load_hint(latest, 'sft')}")
    return 0


def _outcome(result: dg.ExecuteInProcessResult) -> str:
    checks = result.get_asset_check_evaluations()
    failed = [str(c.asset_check_key.to_user_string()) for c in checks if not c.passed]
    materialized = len(result.get_asset_materialization_events())
    status = "ok" if result.success else "FAILED"
    suffix = f", failed checks: {', '.join(failed)}" if failed else ""
    return f"{status} ({materialized} materializations, {len(checks)} checks{suffix})"
