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
they are and are ingested once the folder is renamed or the day is complete. The setting
`DISTILL_FUTURE_DAYS=N` (default 0) makes the N days after the last complete day partitions too
(Dagster's `end_offset`): 1 admits today's incomplete day, for producers that land ahead of UTC.

A date whose folders hold no raw file (`days_with_raw_files`, `has_raw_files`) is not ingested by
`distill run`, `distill backfill` or the nightly schedule (`distill run` names its empty folders),
since its ingest would only write empty tables.
"""

from datetime import UTC, date, datetime, timedelta

import dagster as dg

from distill_assets.lib.rawfiles import list_partitions, list_raw_files, skipped_folders
from distill_assets.lib.settings import SOURCES, Settings
from distill_assets.lib.startup import resolve_settings


def partitions_start(settings: Settings, today: date | None = None) -> str:
    """Return the first daily partition (see the module docstring; `Settings` checked the date)."""
    if settings.partitions_start:
        return date.fromisoformat(settings.partitions_start).isoformat()
    today = today or datetime.now(UTC).date()
    yesterday = today - timedelta(days=1)
    landed = [day for s in SOURCES for day in list_partitions(settings.raw_root, s, yesterday)]
    if landed:
        return min(landed)
    return yesterday.isoformat()


# a bad setting stops the code location's load with its one-line `SettingsError`
_SETTINGS = resolve_settings()
daily_partitions = dg.DailyPartitionsDefinition(
    start_date=partitions_start(_SETTINGS), timezone="UTC", end_offset=_SETTINGS.future_days
)

SKIP_REASONS = {
    "not_a_date": "not a valid date (YYYY-MM-DD): not ingested",
    "future_date": (
        "a date after the last complete day (UTC) and DISTILL_FUTURE_DAYS: not ingested yet"
    ),
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


def empty_raw_folders(
    raw_root: str, sources: tuple[str, ...] = SOURCES, last: date | None = None
) -> list[str]:
    """Return `source/date` of every partition folder (up to `last`) that holds no raw file."""
    return [
        f"{source}/{day}"
        for source in sources
        for day in list_partitions(raw_root, source, last)
        if not list_raw_files(raw_root, source, day)
    ]


def has_raw_files(raw_root: str, day: str, sources: tuple[str, ...] = SOURCES) -> bool:
    """Return True when at least one of `sources` has a raw file for the date `day`."""
    return any(list_raw_files(raw_root, source, day) for source in sources)


def days_with_raw_files(
    raw_root: str, sources: tuple[str, ...] = SOURCES, last: date | None = None
) -> list[str]:
    """Return the ingest dates (up to `last`) where at least one of `sources` has a raw file."""
    days = {day for source in sources for day in list_partitions(raw_root, source, last)}
    return sorted(day for day in days if has_raw_files(raw_root, day, sources))
