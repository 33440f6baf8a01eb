"""The daily ingest-date partitioning shared by every source, and which raw folders it covers.

Nothing here reads a setting when imported. `daily_partitions()` builds the partitions from the
resolved settings on its first call in a process, which is when the definitions load (the asset
modules call it in their decorators, and `definitions.defs` imports them): the CLI, the UI's code
server (and each reload of it) and every child process an executor starts (multiprocess, k8s)
build them once, from the settings and raw root they see.

- With `DISTILL_PARTITIONS_START` (YYYY-MM-DD) set, every day from it to the last complete day
  is a partition, and the raw root is not listed when the definitions load (production: an
  object-store raw root).
- Unset, partitions begin at the first date with a raw file under the raw root, and each day up
  to the last complete day without a raw file is excluded (`DailyPartitionsDefinition`'s
  `exclusions`): the UI shows the days with data (all filled after `make run`), not empty days
  as "missing". Days after the definitions loaded are partitions as they come, so the nightly
  schedule and the `raw_landing` sensor of a long-running code server reach them; a day that
  was empty when the definitions loaded and got raw files later appears after a reload of the
  code location (UI: Deployment → Reload) or in the next `distill` command. An empty project
  starts yesterday.

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
from functools import cache

import dagster as dg

from distill_assets.lib.rawfiles import list_partitions, list_raw_files, skipped_folders
from distill_assets.lib.settings import SOURCES, Settings
from distill_assets.lib.startup import resolve_settings


def last_complete_day(today: date | None = None) -> date:
    """Return the last complete UTC day before `today` (default: now)."""
    return (today or datetime.now(UTC).date()) - timedelta(days=1)


def last_partition_date(settings: Settings, today: date | None = None) -> date:
    """Return the last ingest date: the last complete day plus `DISTILL_FUTURE_DAYS`."""
    return last_complete_day(today) + timedelta(days=settings.future_days)


def build_daily_partitions(
    settings: Settings, today: date | None = None
) -> dg.DailyPartitionsDefinition:
    """Return the daily partitions for `settings` as of `today` (see the module docstring)."""
    if settings.partitions_start:
        start = date.fromisoformat(settings.partitions_start).isoformat()
        excluded: list[datetime] = []
    else:
        last = last_complete_day(today)
        landed = days_with_raw_files(settings.raw_root, last=last)
        start = landed[0] if landed else last.isoformat()
        with_data = set(landed)
        excluded = [
            datetime.combine(day, datetime.min.time(), UTC)
            for day in _days(date.fromisoformat(start), last)
            if landed and day.isoformat() not in with_data
        ]
    return dg.DailyPartitionsDefinition(
        start_date=start,
        timezone="UTC",
        end_offset=settings.future_days,
        exclusions=excluded or None,
    )


@cache
def daily_partitions() -> dg.DailyPartitionsDefinition:
    """Return this process's daily partitions, built from the settings on the first call.

    A bad setting raises its one-line `SettingsError` (the code location's load error in the UI).
    """
    return build_daily_partitions(resolve_settings())


def _days(first: date, last: date) -> list[date]:
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


SKIP_REASONS = {
    "not_a_date": "not a valid date (YYYY-MM-DD): not ingested",
    "future_date": (
        "a date after the last complete day (UTC) and DISTILL_FUTURE_DAYS: not ingested yet"
    ),
}


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
