"""The two jobs every operation runs: a day's ingest (all sources) and the release."""

import dagster as dg

from distill_assets.defs.partitions import daily_partitions
from distill_assets.lib.settings import SOURCES

INGEST_JOB = "daily_ingest"
RELEASE_JOB = "publish_release"

daily_ingest = dg.define_asset_job(
    INGEST_JOB,
    selection=dg.AssetSelection.groups(*SOURCES),
    partitions_def=daily_partitions,
    description="Every source's partitioned assets for one ingest date.",
)

publish_release = dg.define_asset_job(
    RELEASE_JOB,
    selection=dg.AssetSelection.groups("curation", "release"),
    description="Curate all history and publish a new dataset version.",
    tags={"distill/release": "publish"},
)
