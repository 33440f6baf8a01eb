"""The daily ingest-date partitioning shared by every source, and which raw folders it covers.

A raw folder `<raw root>/<source>/<name>/` is a partition when `name` is an ISO date
(`YYYY-MM-DD`) no later than the last complete day (UTC; Dagster's last daily partition). Other
folders are reported (`distill run` output) and skipped: `not_a_date` (`2026-13-45`,
`2026_11_21`) and `future_date` (today's still incomplete day or later). Their files stay where
they are and are ingested once the folder is renamed or the day is complete.
"""

from datetime import date

import dagster as dg

from distill_assets.lib.rawfiles import skipped_folders
from distill_assets.lib.settings import SOURCES

PARTITIONS_START = "2025-01-01"

daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC")

SKIP_REASONS = {
    "not_a_date": "not a valid date (YYYY-MM-DD): not ingested",
    "future_date": "a date after the last complete day (UTC): not ingested yet",
}


def last_partition_date() -> date | None:
    """Return the last complete ingest date (None before the partitions start)."""
    key = daily_partitions.get_last_partition_key()
    return date.fromisoformat(key) if key else None


def skipped_raw_folders(raw_root: str, last: date | None) -> dict[str, str]:
    """Return `source/name` → reason for every raw folder that is not a partition to ingest."""
    return {
        f"{source}/{name}": problem
        for source in SOURCES
        for name, problem in skipped_folders(raw_root, source, last).items()
    }
