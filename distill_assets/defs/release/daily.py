"""The release's per-day work in the day's ingest: one `release/<config>_scanned_lines` per config.

The independent scan's detectors (`scan.py`) are its largest cost, and what they find in a line
depends on the line alone. A day's candidate lines are in that day's product file of each config
(`curation/<config>_products`, the published text as the curated partition will hold it), so
they are read with the day's ingest, one step per (day, config), in parallel across configs and
days on any executor, instead of in the serial release. The release's scan of that partition
(`withhold.find_withheld`) and, through it, the `independent_pii_scan` check then run the
detectors only on lines these assets did not read: same findings (`scan.LineMemory`). The release
never depends on them having run: without one, it reads the lines itself.
"""

import dagster as dg

from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.defs.curation.daily import products_key
from distill_assets.defs.curation.products import products_table
from distill_assets.defs.jobs import DAILY_TAG
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.release.withhold import (
    LINES_SCHEMA,
    day_lines_table,
    scan_day_lines,
    scan_version,
)
from distill_assets.defs.resources import DistillSettings
from distill_assets.lib.lake import partition_path

GROUP = "release"


def scanned_lines_asset(config: str) -> dg.AssetsDefinition:
    """Return the daily-partitioned asset scanning the candidate lines of `config`'s products."""

    @dg.asset(
        key=[GROUP, day_lines_table(config)],
        deps=[products_key(config)],
        partitions_def=daily_partitions(),
        group_name=GROUP,
        kinds={"polars"},
        tags=DAILY_TAG,
        description=(
            f"What the independent scan's detectors find in each candidate line of the day's "
            f"`{config}` products (`curation/{products_table(config)}`): the line's SHA-256 and "
            "the finding kinds, never its text, in "
            f"`release/{day_lines_table(config)}/<day>.parquet`. The release's scan reads only "
            "the lines it does not list. No file for a day without products."
        ),
    )
    def scanned_lines(
        context: dg.AssetExecutionContext, settings: DistillSettings
    ) -> dg.MaterializeResult:
        """Scan the candidate lines of the day's product file (`withhold.scan_day_lines`)."""
        lake_root = settings.resolved().lake_root
        day = context.partition_key
        products = partition_path(lake_root, "curation", products_table(config), day)
        target = partition_path(lake_root, GROUP, day_lines_table(config), day)
        lines = 0
        if products.exists():
            lines = scan_day_lines(lake_root, config, products, day)
        elif target.exists():
            target.unlink()
        columns = [dg.TableColumn(name, str(kind)) for name, kind in LINES_SCHEMA.items()]
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": dg.MetadataValue.int(lines),
                "dagster/column_schema": dg.MetadataValue.table_schema(dg.TableSchema(columns)),
                "scan_version": dg.MetadataValue.text(scan_version()),
            }
        )

    return scanned_lines


daily_scanned_lines_assets: list[dg.AssetsDefinition] = [
    scanned_lines_asset(config) for config in CONFIG_FEEDS
]
