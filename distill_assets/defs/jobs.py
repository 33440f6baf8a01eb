"""The two jobs every operation runs: a day's ingest (all sources) and the release.

A source room's assets are daily-partitioned, except those that need all of history (player
trust, erasure lists, review state): they carry the tag `GLOBAL_TAG` and run with the release,
before curation, instead of with a day's ingest. Curation's per-day products
(`curation/<config>_products`) carry `DAILY_TAG`: daily-partitioned, they run with a day's ingest,
one step per config, not in the release. `daily_ingest` takes its daily partitions from its
assets (`defs.partitions`), so importing this module reads no setting.
"""

import dagster as dg

from distill_assets.lib.settings import SOURCES

INGEST_JOB = "daily_ingest"
RELEASE_JOB = "publish_release"
SCOPE_TAG = "distill/scope"
GLOBAL_TAG = {SCOPE_TAG: "global"}
DAILY_TAG = {SCOPE_TAG: "daily"}

global_source_assets = dg.AssetSelection.tag(SCOPE_TAG, GLOBAL_TAG[SCOPE_TAG])
daily_curation_assets = dg.AssetSelection.tag(SCOPE_TAG, DAILY_TAG[SCOPE_TAG])

daily_ingest = dg.define_asset_job(
    INGEST_JOB,
    selection=(dg.AssetSelection.groups(*SOURCES) - global_source_assets) | daily_curation_assets,
    description="Every source's partitioned assets and curation's products for one ingest date.",
)

publish_release = dg.define_asset_job(
    RELEASE_JOB,
    selection=(dg.AssetSelection.groups("curation", "release") - daily_curation_assets)
    | global_source_assets,
    description="Rebuild the global source tables, curate all history and publish a new version.",
    tags={"distill/release": "publish"},
)
