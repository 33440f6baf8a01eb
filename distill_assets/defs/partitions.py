"""The daily ingest-date partitioning shared by every source, and which raw folders it covers.

Partitions start at `DISTILL_PARTITIONS_START` (YYYY-MM-DD) when set, else at the first ingest
date present under the raw root (so the UI shows the dates that exist, not years of empty
partitions), else yesterday (an empty project: the nightly schedule's first partition). Dagster
needs the start when the definitions are built, so it is resolved then, once per process: a date
landed earlier than the start appears after the code location is reloaded. Production sets
`DISTILL_PARTITIONS_START`, which also avoids listing an object-store raw root on every load.

A raw folder `<raw root>/<source>/<name>/` is a partition when `name` is an ISO date
(`YYYY-MM-DD`) no later than the last complete day (UTC; Dagster's last daily partition). Other
folders are reported (`distill run` output) and skipped: `not_a_date` (`2026-13-45`,
`2026_11_21`) and `future_date` (today's still incomplete day or later). Their files stay where
they are and are ingested once the folder is renamed or the day is complete.
"""

from datetime import UTC, date, datetime, timedelta

import dagster as dg

from distill_assets.lib.rawfiles import list_partitions, skipped_folders
from distill_assets.lib.settings import SOURCES, Settings


def partitions_start(settings: Settings, today: date | None = None) -> str:
    """Return the first daily partition (see the module docstring)."""
    if settings.partitions_start:
        try:
            return date.fromisoformat(settings.partitions_start).isoformat()
        except ValueError:
            raise ValueError(
                f"DISTILL_PARTITIONS_START={settings.partitions_start!r} is not a date (YYYY-MM-DD)"
            ) from None
    today = today or datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)
    landed = [day for s in SOURCES for day in list_partitions(settings.raw_root, s, yesterday)]
    if landed:
        return min(landed)
    return yesterday.isoformat()


daily_partitions = dg.DailyPartitionsDefinition(
    start_date=partitions_start(Settings.resolve()), timezone="UTC"
)

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
