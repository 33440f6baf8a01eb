"""Raw telemetry retention (docs/sources/telemetry.md#retention).

Raw landing folders `<raw root>/telemetry/<YYYY-MM-DD>/` are kept RAW_RETENTION_DAYS days (the
seed's engineering constraint "retention: Raw: 30 days, Processed: indefinite"): `distill
purge-raw` removes a folder whose date is more than RAW_RETENTION_DAYS days before today (UTC) and
whose bronze partition (`telemetry/events`) exists, so raw data is never purged before it was
ingested. Lake tables (processed data) are never touched.
"""

from __future__ import annotations

RAW_RETENTION_DAYS = 30
