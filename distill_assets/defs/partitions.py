"""The daily ingest-date partitioning shared by every source.

Partitions start at `DISTILL_PARTITIONS_START` (YYYY-MM-DD) when set, else at the first ingest
date present under the raw root (so the UI shows the dates that exist, not years of empty
partitions), else yesterday (an empty project: the nightly schedule's first partition). Dagster
needs the start when the definitions are built, so it is resolved then, once per process: a date
landed earlier than the start appears after the code location is reloaded. Production sets
`DISTILL_PARTITIONS_START`, which also avoids listing an object-store raw root on every load.
"""

from datetime import UTC, date, datetime, timedelta

import dagster as dg

from distill_assets.lib.rawfiles import list_partitions
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
    landed = [day for s in SOURCES for day in list_partitions(settings.raw_root, s)]
    if landed:
        return min(landed)
    return ((today or datetime.now(UTC).date()) - timedelta(days=1)).isoformat()


daily_partitions = dg.DailyPartitionsDefinition(
    start_date=partitions_start(Settings.resolve()), timezone="UTC"
)
