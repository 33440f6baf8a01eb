"""`distill raw purge`: remove raw telemetry day folders past the retention window, with a log.

Raw files are the producer's landing area, not the record: once a day is in bronze, bronze (and
the deletion rewrite that applies to it) is the replayable record. The retention rule
(`rules/telemetry_privacy.py` RAW_RETENTION_DAYS; docs/operations.md#raw-retention,
docs/privacy.md) keeps a raw day that many days after its date so a bad ingest can be re-run; this
command then removes it, and with it the raw lines of players who asked for deletion. A day whose
bronze partition is missing is never removed (it has not been ingested). A purged day must not be
re-ingested: its bronze would come back empty. Each folder considered is printed and appended as
one JSON line to `<data dir>/logs/raw_retention.jsonl`, so the schedule that runs the command
leaves a record of what it removed.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, date, datetime
from pathlib import Path

from distill_assets.defs.telemetry.retention import purge_raw
from distill_assets.lib.settings import Settings
from distill_assets.rules.telemetry_privacy import RAW_RETENTION_DAYS

LOG_NAME = "raw_retention.jsonl"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `raw` subcommand with its `purge` action."""
    parser = subparsers.add_parser("raw", help="raw landing area: retention")
    actions = parser.add_subparsers(dest="action", required=True)
    purge = actions.add_parser(
        "purge", help=f"remove ingested raw telemetry days older than {RAW_RETENTION_DAYS} days"
    )
    purge.add_argument(
        "--today", type=date.fromisoformat, help="the day to count from (default: today, UTC)"
    )
    purge.add_argument("--dry-run", action="store_true", help="report, remove nothing")
    parser.set_defaults(func=run)


def log_path(data_dir: str) -> Path:
    """Return the retention log file of a data dir."""
    return Path(data_dir) / "logs" / LOG_NAME


def run(args: argparse.Namespace) -> int:
    """Purge expired raw folders, print one line per folder and append it to the log."""
    settings = Settings.resolve()
    now = datetime.now(UTC)
    today = args.today or now.date()
    entries = purge_raw(
        settings.raw_root, settings.lake_root, today, RAW_RETENTION_DAYS, dry_run=args.dry_run
    )
    log = log_path(settings.data_dir)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as out:
        for entry in entries:
            line = {"at": now.isoformat(timespec="seconds"), **entry}
            out.write(json.dumps(line, sort_keys=True) + "\n")
            print(f"[distill] raw purge {entry['source']}/{entry['partition']}: {entry['action']}")
    print(f"[distill] raw purge: {len(entries)} folder(s) past {RAW_RETENTION_DAYS} days")
    return 0
