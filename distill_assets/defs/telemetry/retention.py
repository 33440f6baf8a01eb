"""Raw telemetry retention: purge landing folders past the window (`distill raw purge`).

See docs/sources/telemetry.md#retention. Only valid `YYYY-MM-DD` folders older than the window
whose bronze partition exists are removed; every folder considered gets a log entry saying what
happened to it and why.
"""

from __future__ import annotations

from datetime import date, timedelta

from distill_assets.lib.lake import partition_path
from distill_assets.lib.rawfiles import list_partitions, partition_dir, raw_files_in

SOURCE = "telemetry"
BRONZE = "events"
PURGED, NOT_INGESTED = "purged", "kept_not_ingested"


def expired_partitions(raw_root: str, today: date, days: int) -> list[str]:
    """Return the raw telemetry dates more than `days` days before `today`, oldest first."""
    cutoff = today - timedelta(days=days)
    return [day for day in list_partitions(raw_root, SOURCE) if date.fromisoformat(day) < cutoff]


def purge_raw(
    raw_root: str, lake_root: str, today: date, days: int, *, dry_run: bool = False
) -> list[dict[str, object]]:
    """Remove expired raw telemetry folders that were ingested; return one log entry per folder.

    An entry holds `source`, `partition`, `action` (`purged`, or `kept_not_ingested` when the
    bronze partition is missing), `files` (files in the folder) and `dry_run`.
    """
    entries: list[dict[str, object]] = []
    for day in expired_partitions(raw_root, today, days):
        folder = partition_dir(raw_root, SOURCE, day)
        ingested = partition_path(lake_root, SOURCE, BRONZE, day).exists()
        files = len(raw_files_in(folder, None))
        if ingested and not dry_run:
            folder.fs.rm(folder.path, recursive=True)
        entries.append(
            {
                "source": SOURCE,
                "partition": day,
                "action": PURGED if ingested else NOT_INGESTED,
                "files": files,
                "dry_run": dry_run,
            }
        )
    return entries
