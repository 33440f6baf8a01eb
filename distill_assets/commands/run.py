"""`distill run`: the embedded default — land samples, ingest every partition, publish a release."""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import sys
from datetime import date
from pathlib import Path

import dagster as dg
from upath import UPath

from distill_assets.defs.release.objectstore import latest_folder, load_hint
from distill_assets.defs.release.withhold import read_withheld, withheld_lines
from distill_assets.lib.cleanup import remove_orphaned_workdirs
from distill_assets.lib.runlock import LockHeld, run_lock
from distill_assets.lib.settings import SOURCES, Settings
from distill_assets.lib.startup import startup_settings
from distill_assets.operations.dates import DateError, days_in, parse_range

EMPTY_FOLDER = "an empty folder: nothing to ingest"


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
    parser.add_argument(
        "--partitions",
        default=None,
        help="only the ingest dates FROM..TO (or one date) that have raw data",
    )
    parser.add_argument(
        "--source", default=None, help="only these sources' assets (comma-separated)"
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
    """Land samples, run `daily_ingest` for each raw partition, then `publish_release`.

    Settings are checked first (one-line errors, exit 2); the run holds the data dir's lock
    (another run: exit 3).
    """
    settings = startup_settings("[distill]")
    if settings is None:
        return 2
    try:
        with run_lock(settings.data_dir):
            return run_locked(args, settings)
    except LockHeld as exc:
        print(f"[distill] {exc}: not starting")
        return 3


def run_locked(args: argparse.Namespace, settings: Settings) -> int:
    """Do the work of `distill run` (the caller holds the data dir's run lock)."""
    try:
        samples = _samples_folder(args.samples, settings)
        sources = _sources(args.source)
        wanted = parse_range(args.partitions) if args.partitions else None
    except (DateError, ValueError) as error:
        print(f"distill run: {error}", file=sys.stderr)
        return 2
    if samples is not None:
        copied = land_samples(samples, Path(settings.raw_root))
        print(f"[distill] landed {copied} new sample file(s) from {samples} in {settings.raw_root}")
    from distill_assets.defs.partitions import days_with_raw_files, last_partition_date

    last = last_partition_date(settings)
    for line in skipped_lines(settings.raw_root, sources, last):
        print(f"[distill] {line}")
    partitions = days_with_raw_files(settings.raw_root, sources, last)
    if wanted is not None:
        in_range = set(days_in(*wanted))
        partitions = [p for p in partitions if p in in_range]
        if not partitions:
            print(
                f"distill run: no raw data for {args.partitions} under {settings.raw_root}",
                file=sys.stderr,
            )
            return 2
    if not partitions:
        print(f"[distill] no raw partitions under {settings.raw_root}: nothing to do")
        return 1
    orphaned = remove_orphaned_workdirs()
    if orphaned:
        print(f"[distill] removed {len(orphaned)} working folder(s) left by ended processes")
    from distill_assets.definitions import defs
    from distill_assets.defs.jobs import INGEST_JOB, RELEASE_JOB, global_source_assets
    from distill_assets.operations.instance import project_instance, recover
    from distill_assets.operations.launch import execute, quarantine_line

    definitions = defs()
    assets = None
    if sources != SOURCES:
        selection = dg.AssetSelection.groups(*sources) - global_source_assets
        assets = sorted(selection.resolve(definitions.resolve_asset_graph()))
    ok = True
    with project_instance(settings) as instance:
        for line in recover(instance):
            print(f"[distill] {line}")
        for partition in partitions:
            result = execute(
                definitions,
                INGEST_JOB,
                instance,
                partition=partition,
                assets=assets,
                verbose=args.verbose,
            )
            print(f"[distill] {quarantine_line(settings.lake_root, partition)}")
            ok &= result.success
        if not ok:
            print("[distill] ingest failed: not publishing (see the run in `make ui`)")
            return 1
        result = execute(definitions, RELEASE_JOB, instance, verbose=args.verbose)
    return release_outcome(settings, result)


def release_outcome(settings: Settings, result: dg.ExecuteInProcessResult) -> int:
    """Print the rows the release withheld, what failed checks found, else where it is published.

    Returns the exit status. Check failures name configs, row ids, columns and kinds, never a
    value.
    """
    for line in withheld_lines(read_withheld(settings.lake_root)):
        print(f"[distill] {line}")
    for evaluation in result.get_asset_check_evaluations():
        failures = evaluation.metadata.get("failures")
        if not evaluation.passed and failures is not None:
            found = json.dumps(failures.value, sort_keys=True)
            print(f"[distill] check {evaluation.asset_check_key.name} failed: {found}")
    if not result.success:
        return 1
    latest = latest_folder(UPath(settings.hub_root) / settings.dataset_name)
    manifest = latest / "release.json"
    version = json.loads(manifest.read_text())["version"] if manifest.is_file() else "?"
    print(f"[distill] dataset version {version} published at {latest}")
    print("[distill] load it with:")
    print(f"    from datasets import load_dataset; ds = {load_hint(latest, 'sft')}")
    return 0


def skipped_lines(raw_root: str, sources: tuple[str, ...], last: date | None) -> list[str]:
    """Return one line per raw folder `distill run` does not ingest, and why."""
    from distill_assets.defs.partitions import SKIP_REASONS, empty_raw_folders, skipped_raw_folders

    lines = [
        f"skipped raw folder {folder}: {SKIP_REASONS[problem]}"
        for folder, problem in skipped_raw_folders(raw_root, last).items()
    ]
    lines += [
        f"skipped raw folder {folder}: {EMPTY_FOLDER}"
        for folder in empty_raw_folders(raw_root, sources, last)
    ]
    return lines


def _samples_folder(value: Path | None, settings: Settings) -> Path | None:
    """Return the samples folder to land (None: `none`); a missing explicit folder is an error."""
    if value is not None and str(value) == "none":
        return None
    if value is None:
        default = Path(settings.data_dir) / "samples"
        return default if default.is_dir() else None
    if not value.is_dir():
        raise ValueError(f"--samples {value}: no such folder")
    return value


def _sources(value: str | None) -> tuple[str, ...]:
    """Return the sources named by `--source` (comma-separated), all by default."""
    if not value:
        return SOURCES
    names = tuple(name.strip() for name in value.split(","))
    unknown = [name for name in names if name not in SOURCES]
    if unknown:
        raise ValueError(f"--source {','.join(unknown)}: not a source ({', '.join(SOURCES)})")
    return names
