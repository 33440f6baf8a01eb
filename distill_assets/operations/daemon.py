"""Hand a backfill to a running Dagster daemon instead of running it in this process.

When the daemon's backfill loop (`make ui` runs one) is alive, the backfill is submitted as a
Dagster asset backfill: it shows under "Backfills" in the UI, runs with the deployment's executor
and run coordinator, and its runs carry `dagster/backfill`.

Alive means a heartbeat at most `FRESH_SECONDS` old, or a new one arriving while we wait: the
daemon beats every `HEARTBEAT_INTERVAL_SECONDS`, so an older last beat is followed by a newer one
within that interval plus `FRESH_SECONDS` or never (the daemon is gone, e.g. `make ui` was
stopped). A backfill is therefore never handed to a daemon that stopped seconds ago, at the cost
of waiting up to half a minute for one that is up.

A backfill `distill backfill` submitted that no daemon has started (still REQUESTED) while no
daemon has beaten for longer than that interval is stranded: a daemon starting later (the next
`make ui`) would run it unprompted. `distill run` and `distill backfill` cancel such backfills,
with one line each, before they write (`cancel_stranded_backfills`); the UI shows them Canceled.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import dagster as dg
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster._core.definitions.selector import (
    PartitionRangeSelector,
    PartitionsByAssetSelector,
    PartitionsSelector,
)
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.utils import make_new_backfill_id

BACKFILL_DAEMON = "BACKFILL"
# Dagster's daemon heartbeat interval (`DEFAULT_HEARTBEAT_INTERVAL_SECONDS`, dagster._daemon)
HEARTBEAT_INTERVAL_SECONDS = 30
FRESH_SECONDS = 5
POLL_SECONDS = 1.0
STRANDED = "cancelled backfill {}: submitted to a Dagster daemon that stopped before starting it"


def last_heartbeat(instance: dg.DagsterInstance) -> float | None:
    """Return the time of the backfill daemon's last heartbeat, if it ever sent one."""
    beat = instance.get_daemon_heartbeats().get(BACKFILL_DAEMON)
    return None if beat is None else beat.timestamp


def daemon_running(instance: dg.DagsterInstance, now: float | None = None) -> bool:
    """Return True when the backfill daemon's last heartbeat is at most `FRESH_SECONDS` old."""
    beat = last_heartbeat(instance)
    current = time.time() if now is None else now
    return beat is not None and current - beat <= FRESH_SECONDS


def daemon_alive(
    instance: dg.DagsterInstance,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> bool:
    """Return True when the backfill daemon is alive now, waiting for its next beat if needed."""
    beat = last_heartbeat(instance)
    if beat is None:
        return False
    if clock() - beat <= FRESH_SECONDS:
        return True
    deadline = beat + HEARTBEAT_INTERVAL_SECONDS + FRESH_SECONDS
    while clock() < deadline:
        sleep(POLL_SECONDS)
        newer = last_heartbeat(instance)
        if newer is not None and newer > beat:
            return True
    return False


def daemon_gone(instance: dg.DagsterInstance, now: float | None = None) -> bool:
    """Return True when no backfill daemon has beaten within its interval (plus a margin)."""
    beat = last_heartbeat(instance)
    current = time.time() if now is None else now
    return beat is None or current - beat > HEARTBEAT_INTERVAL_SECONDS + FRESH_SECONDS


def cancel_stranded_backfills(
    instance: dg.DagsterInstance, tag: str, now: float | None = None
) -> list[str]:
    """Cancel the REQUESTED backfills tagged `tag` when the daemon is gone; return their ids."""
    if not daemon_gone(instance, now):
        return []
    cancelled = []
    for backfill in instance.get_backfills(status=BulkActionStatus.REQUESTED):
        if tag not in backfill.tags:
            continue
        ended = time.time() if now is None else now
        instance.update_backfill(
            backfill.with_status(BulkActionStatus.CANCELED).with_end_timestamp(ended)
        )
        cancelled.append(backfill.backfill_id)
    return sorted(cancelled)


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
