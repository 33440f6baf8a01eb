"""`distill backfill --stale --from/--to`: the stale entries grouped by partition, within range."""

from __future__ import annotations

import pytest

from distill_assets.commands.backfill import stale_plan
from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.lib import stale
from distill_assets.lib.stale import StaleEntry

ENTRIES = [
    StaleEntry("curation/sft", None, "c1", "c1", ("telemetry/dialogues",)),
    StaleEntry("telemetry/dialogues", "2026-11-20", "old", "new"),
    StaleEntry("telemetry/dialogues", "2026-11-18", "old", "new"),
    StaleEntry("traces/runs", "2026-11-20", "old", "new"),
    StaleEntry("telemetry/dialogues", "2026-11-22", "old", "new"),
]


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stale, "find_stale", lambda instance, graph: ENTRIES)


class _Definitions:
    def resolve_asset_graph(self) -> object:
        from distill_assets.definitions import defs

        return defs().resolve_asset_graph()


# a stale curated table brings every asset of the curation op (splits are decided over all)
CURATION = [
    "curation/sft",
    *sorted(
        k
        for config in CONFIG_FEEDS
        for k in (f"curation/{config}", f"curation/{config}_duplicates")
        if k != "curation/sft"
    ),
]


def _names(plan: dict) -> dict:
    return {p: [k.to_user_string() for k in keys] for p, keys in plan.items()}


def test_plan_groups_by_partition_in_order_with_the_release_last(listed: None) -> None:
    plan = stale_plan(None, _Definitions(), None, None)
    assert list(plan) == ["2026-11-18", "2026-11-20", "2026-11-22", None]
    assert _names(plan)["2026-11-20"] == ["telemetry/dialogues", "traces/runs"]
    assert [k.to_user_string() for k in plan[None]] == CURATION


def test_plan_keeps_only_partitions_in_range_and_every_unpartitioned_asset(listed: None) -> None:
    plan = stale_plan(None, _Definitions(), "2026-11-19", "2026-11-21")
    assert _names(plan) == {
        "2026-11-20": ["telemetry/dialogues", "traces/runs"],
        None: CURATION,
    }


def test_entries_describe_themselves() -> None:
    assert ENTRIES[1].describe() == "telemetry/dialogues 2026-11-20: rules old -> new"
    assert ENTRIES[0].describe() == "curation/sft (all): downstream of telemetry/dialogues"
    assert ENTRIES[0].as_json() == {
        "asset": "curation/sft",
        "partition": None,
        "recorded": "c1",
        "current": "c1",
        "because": ["telemetry/dialogues"],
    }
