"""`distill raw purge`: remove raw day folders past the raw retention window.

Raw files are the producer's landing area, not the record: once a day is in bronze, bronze (and
the deletion rewrite that applies to it) is the replayable record. The retention rule
(`rules/telemetry_privacy.py` RAW_RETENTION_DAYS, docs/privacy.md) keeps a raw day for that many
days after its date so a bad ingest can be re-run, then this command removes it — and with it
the raw lines of players who asked for deletion. A day whose bronze partition is missing is never
removed (it has not been ingested). A purged day must not be re-ingested: its bronze would come
back empty.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, date, datetime, timedelta

from upath import UPath

from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from distill_assets.rules.telemetry_privacy import RAW_RETENTION_DAYS

# the bronze table whose partition proves a raw day of a source was ingested
BRONZE_TABLES = {"telemetry": "events"}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `raw` subcommand with its `purge` action."""
    parser = subparsers.add_parser("raw", help="raw landing area: retention")
    actions = parser.add_subparsers(dest="action", required=True)
    purge = actions.add_parser("purge", help="remove ingested raw days past retention")
    purge.add_argument("--source", default="telemetry", choices=sorted(BRONZE_TABLES))
    purge.add_argument(
        "--before",
        type=date.fromisoformat,
        default=None,
        help=f"remove days before this date (default: today - {RAW_RETENTION_DAYS} days)",
    )
    purge.add_argument("--dry-run", action="store_true", help="list, remove nothing")
    parser.set_defaults(func=run)


def purgeable_days(raw_root: str, lake_root: str, source: str, before: date) -> list[str]:
    """Return the raw day folders of `source` dated before `before` whose bronze exists."""
    folder = UPath(raw_root) / source
    if not folder.exists():
        return []
    days = []
    for day in sorted(p.name for p in folder.iterdir() if p.is_dir()):
        try:
            dated = date.fromisoformat(day)
        except ValueError:
            continue
        bronze = partition_path(lake_root, source, BRONZE_TABLES[source], day)
        if dated < before and bronze.exists():
            days.append(day)
    return days


def run(args: argparse.Namespace) -> int:
    """Remove (or list with --dry-run) the purgeable raw days; print them as JSON."""
    settings = Settings.resolve()
    before = args.before or datetime.now(UTC).date() - timedelta(days=RAW_RETENTION_DAYS)
    days = purgeable_days(settings.raw_root, settings.lake_root, args.source, before)
    if not args.dry_run:
        for day in days:
            target = UPath(settings.raw_root) / args.source / day
            target.fs.rm(target.path, recursive=True)
    print(json.dumps({"source": args.source, "before": before.isoformat(), "purged": days}))
    return 0
