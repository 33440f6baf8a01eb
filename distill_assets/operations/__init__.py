"""Operations on the project's Dagster instance: stale listing, backfills, in-process runs."""
