"""The daily ingest-date partitioning shared by every source."""

import dagster as dg

PARTITIONS_START = "2025-01-01"

daily_partitions = dg.DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC")
