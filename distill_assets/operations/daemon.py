"""Hand a backfill to a running Dagster daemon instead of running it in this process.

When the instance has a fresh heartbeat from the daemon's backfill loop (`make ui` runs one), the
backfill is submitted as a Dagster asset backfill: it shows under "Backfills" in the UI, runs with
the deployment's executor and run coordinator, and its runs carry `dagster/backfill`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import dagster as dg
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster._core.definitions.selector import (
    PartitionRangeSelector,
    PartitionsByAssetSelector,
    PartitionsSelector,
)
from dagster._core.execution.backfill import PartitionBackfill
from dagster._core.utils import make_new_backfill_id

BACKFILL_DAEMON = "BACKFILL"
# The daemon beats every 30 s; two missed beats mean it is gone.
HEARTBEAT_TOLERANCE_SECONDS = 90


def daemon_running(instance: dg.DagsterInstance, now: float | None = None) -> bool:
    """Return True when the instance's backfill daemon sent a heartbeat recently."""
    beat = instance.get_daemon_heartbeats().get(BACKFILL_DAEMON)
    current = time.time() if now is None else now
    return beat is not None and current - beat.timestamp <= HEARTBEAT_TOLERANCE_SECONDS


def submit_backfill(
    instance: dg.DagsterInstance,
    graph: BaseAssetGraph,
    plan: Mapping[str | None, Sequence[dg.AssetKey]],
    tags: Mapping[str, str],
    title: str,
) -> str:
    """Submit `plan` (partition, None for unpartitioned → asset keys) as one asset backfill."""
    partitions: dict[dg.AssetKey, list[str]] = {}
    unpartitioned: set[dg.AssetKey] = set()
    for partition, keys in plan.items():
        for key in keys:
            if partition is None:
                unpartitioned.add(key)
            else:
                partitions.setdefault(key, []).append(partition)
    selectors = [
        PartitionsByAssetSelector(
            asset_key=key,
            partitions=PartitionsSelector(
                ranges=[PartitionRangeSelector(start=day, end=day) for day in sorted(days)]
            ),
        )
        for key, days in sorted(partitions.items(), key=lambda kv: kv[0].to_user_string())
    ] + [
        PartitionsByAssetSelector(asset_key=key, partitions=None)
        for key in sorted(unpartitioned, key=lambda k: k.to_user_string())
    ]
    backfill_id = make_new_backfill_id()
    backfill = PartitionBackfill.from_partitions_by_assets(
        backfill_id=backfill_id,
        asset_graph=graph,
        backfill_timestamp=time.time(),
        tags=dict(tags),
        dynamic_partitions_store=instance,
        partitions_by_assets=selectors,
        title=title,
        description=None,
        run_config=None,
    )
    instance.add_backfill(backfill)
    return backfill_id
