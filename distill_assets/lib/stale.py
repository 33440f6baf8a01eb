"""Which materializations were built under rules that have changed since.

See docs/operations.md#rule-changes.

Dagster's own staleness misses partitioned assets and their unpartitioned downstream (dagster
issues #22704, #18921, #33708), so distill computes it from the instance itself:

- an asset with a `code_version` (the hash of the rules modules it applies) is stale in a
  partition when its latest materialization there recorded another rules version (metadata
  `rules_version`, else the `dagster/code_version` tag);
- every materialized asset downstream of a stale one is stale too: in the same partition when it
  shares the daily partitioning, as a whole when it is unpartitioned (curation, release).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass

import dagster as dg
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster._core.definitions.data_version import CODE_VERSION_TAG

RULES_VERSION_KEY = "rules_version"
# Storage ids per `fetch_materializations` call: keeps one query per few hundred partitions.
FETCH_BATCH = 500


@dataclass(frozen=True, order=True)
class StaleEntry:
    """One stale asset partition (`partition` None: an unpartitioned asset).

    `recorded` / `current` are the rules versions of the asset itself (before and now); for an
    asset stale only because of its upstream they are equal and `because` names the stale
    upstream assets whose rules changed.
    """

    asset: str
    partition: str | None
    recorded: str | None
    current: str | None
    because: tuple[str, ...] = ()

    @property
    def key(self) -> dg.AssetKey:
        """The entry's asset key."""
        return dg.AssetKey.from_user_string(self.asset)

    def as_json(self) -> dict[str, object]:
        """Return the entry as a JSON object."""
        return {**asdict(self), "because": list(self.because)}

    def describe(self) -> str:
        """Return one line: asset, partition, and why it is stale."""
        where = f"{self.asset} {self.partition or '(all)'}"
        if self.recorded != self.current:
            return f"{where}: rules {self.recorded} -> {self.current}"
        return f"{where}: downstream of {', '.join(self.because)}"


def _recorded_version(materialization: dg.AssetMaterialization) -> str | None:
    value = materialization.metadata.get(RULES_VERSION_KEY)
    if value is not None:
        return str(getattr(value, "value", value))
    return (materialization.tags or {}).get(CODE_VERSION_TAG)


def _chunks(items: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def latest_versions(
    instance: dg.DagsterInstance, key: dg.AssetKey, partitioned: bool
) -> dict[str | None, str | None]:
    """Return partition (None if unpartitioned) -> rules version of its latest materialization."""
    if not partitioned:
        event = instance.get_latest_materialization_event(key)
        if event is None or event.asset_materialization is None:
            return {}
        return {None: _recorded_version(event.asset_materialization)}
    by_partition = instance.get_latest_storage_id_by_partition(
        key, dg.DagsterEventType.ASSET_MATERIALIZATION
    )
    versions: dict[str | None, str | None] = {}
    for ids in _chunks(sorted(by_partition.values()), FETCH_BATCH):
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, storage_ids=ids), limit=len(ids)
        ).records
        for record in records:
            materialization = record.asset_materialization
            if materialization is not None:
                versions[materialization.partition] = _recorded_version(materialization)
    return versions


def _materialized(instance: dg.DagsterInstance, key: dg.AssetKey, partitioned: bool) -> set:
    if partitioned:
        return set(instance.get_materialized_partitions(key))
    return {None} if instance.get_latest_materialization_event(key) is not None else set()


def find_stale(instance: dg.DagsterInstance, graph: BaseAssetGraph) -> list[StaleEntry]:
    """Return every stale asset partition, sorted by asset then partition (module docstring)."""
    stale: dict[tuple[str, str | None], StaleEntry] = {}
    for key in sorted(graph.materializable_asset_keys):
        node = graph.get(key)
        if node.code_version is None:
            continue
        for partition, recorded in latest_versions(
            instance, key, node.partitions_def is not None
        ).items():
            if recorded != node.code_version:
                name = key.to_user_string()
                stale[(name, partition)] = StaleEntry(name, partition, recorded, node.code_version)
    causes: dict[tuple[str, str | None], set[str]] = {}
    for (name, partition), _ in sorted(stale.items(), key=lambda item: str(item[0])):
        root = dg.AssetKey.from_user_string(name)
        for child, child_partition in _downstream(graph, root, partition):
            causes.setdefault((child.to_user_string(), child_partition), set()).add(name)
    materialized_cache: dict[dg.AssetKey, set] = {}
    for (name, partition), upstream in causes.items():
        if (name, partition) in stale:
            continue
        key = dg.AssetKey.from_user_string(name)
        node = graph.get(key)
        if key not in materialized_cache:
            materialized_cache[key] = _materialized(instance, key, node.partitions_def is not None)
        if partition not in materialized_cache[key]:
            continue
        stale[(name, partition)] = StaleEntry(
            name, partition, node.code_version, node.code_version, tuple(sorted(upstream))
        )
    return sorted(stale.values(), key=lambda e: (e.asset, e.partition or ""))


def _downstream(
    graph: BaseAssetGraph, root: dg.AssetKey, partition: str | None
) -> Iterable[tuple[dg.AssetKey, str | None]]:
    """Yield every (asset, partition) downstream of `root`'s `partition`, transitively."""
    seen: set[tuple[dg.AssetKey, str | None]] = set()
    frontier = [(root, partition)]
    while frontier:
        key, part = frontier.pop()
        for child in sorted(graph.get(key).child_keys):
            child_node = graph.get(child)
            if not child_node.is_materializable:
                continue
            same_partitioning = (
                part is not None and child_node.partitions_def == graph.get(key).partitions_def
            )
            item = (child, part if same_partitioning else None)
            if item not in seen:
                seen.add(item)
                frontier.append(item)
    return sorted(seen, key=lambda kv: (kv[0].to_user_string(), kv[1] or ""))
