"""The definitions load, and their keys, groups, checks, jobs and schedules are as documented."""

from __future__ import annotations

import dagster as dg
import pytest

from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.definitions import defs
from distill_assets.defs.jobs import DAILY_TAG, GLOBAL_TAG, SCOPE_TAG
from distill_assets.lib.settings import SOURCES

GROUPS = {*SOURCES, "curation", "release"}


@pytest.fixture(scope="module")
def definitions() -> dg.Definitions:
    return defs()


@pytest.fixture(scope="module")
def specs(definitions: dg.Definitions) -> list[dg.AssetSpec]:
    return list(definitions.resolve_all_asset_specs())


def _after_release(definitions: dg.Definitions) -> set[dg.AssetKey]:
    """The assets downstream of `release/dataset` (they run after a publish)."""
    dataset = dg.AssetKey(["release", "dataset"])
    downstream = dg.AssetSelection.assets(dataset).downstream()
    return set(downstream.resolve(definitions.resolve_asset_graph())) - {dataset}


def test_asset_keys_are_source_and_table(
    definitions: dg.Definitions, specs: list[dg.AssetSpec]
) -> None:
    after_release = _after_release(definitions)
    assert after_release == {dg.AssetKey(["escalations", "export_history"])}
    for spec in specs:
        assert len(spec.key.path) == 2, spec.key
        assert spec.key.path[0] in GROUPS, spec.key
        expected = "release" if spec.key in after_release else spec.key.path[0]
        assert spec.group_name == expected, spec.key


def test_groups_follow_the_data_flow(
    definitions: dg.Definitions, specs: list[dg.AssetSpec]
) -> None:
    """No asset of a source group depends on curation or release (the UI draws groups in order)."""
    group = {spec.key: spec.group_name for spec in specs}
    order = {**dict.fromkeys(SOURCES, 0), "curation": 1, "release": 2}
    backward = [
        (spec.key, dep.asset_key)
        for spec in specs
        for dep in spec.deps
        if dep.asset_key in group and order[group[dep.asset_key]] > order[spec.group_name]
    ]
    assert backward == []


@pytest.mark.parametrize(
    ("source", "folders", "exclusions"),
    [
        ("escalations", "review_state", "review_exclusions"),
        ("telemetry", "witness_queue", "witness_exclusions"),
    ],
)
def test_review_folders_and_queues_are_off_the_release_chain(
    definitions: dg.Definitions, source: str, folders: str, exclusions: str
) -> None:
    """Curation waits for the review exclusions only; the folders and queues are built beside it."""
    graph = definitions.resolve_asset_graph()
    state = dg.AssetKey([source, folders])
    excluded = dg.AssetKey([source, exclusions])
    assert set(dg.AssetSelection.assets(state).downstream().resolve(graph)) == {state}
    # separate steps: the exclusions do not wait for the folders' refresh or the queue's scan
    assert definitions.resolve_assets_def(excluded).keys == {excluded}
    curated = dg.AssetSelection.assets(dg.AssetKey(["curation", "sft"])).upstream(depth=1)
    assert excluded in curated.resolve(graph)


def test_every_group_has_assets_and_every_asset_a_description(
    specs: list[dg.AssetSpec],
) -> None:
    assert {s.group_name for s in specs} == GROUPS
    assert [s.key for s in specs if not (s.description or "").strip()] == []


def test_source_assets_are_daily_partitioned_and_global_ones_are_not(
    specs: list[dg.AssetSpec],
) -> None:
    for spec in specs:
        partitioned = spec.partitions_def is not None
        global_source = spec.tags.get(SCOPE_TAG) == GLOBAL_TAG[SCOPE_TAG]
        daily = spec.tags.get(SCOPE_TAG) == DAILY_TAG[SCOPE_TAG]
        source = spec.group_name in SOURCES and not global_source
        assert partitioned == (source or daily), spec.key
    # curation's per-day products: one asset per config, each reading its feed tables' day; the
    # release's per-day line scans: one per config, each reading that day's products
    daily_keys = {s.key: s for s in specs if s.tags.get(SCOPE_TAG) == DAILY_TAG[SCOPE_TAG]}
    products = {dg.AssetKey(["curation", f"{c}_products"]) for c in CONFIG_FEEDS}
    lines = {dg.AssetKey(["release", f"{c}_scanned_lines"]) for c in CONFIG_FEEDS}
    assert daily_keys.keys() == products | lines
    for key, spec in daily_keys.items():
        if key in lines:
            config = key.path[1].removesuffix("_scanned_lines")
            assert {dep.asset_key for dep in spec.deps} == {
                dg.AssetKey(["curation", f"{config}_products"])
            }, key
            continue
        config = key.path[1].removesuffix("_products")
        feeds = {dg.AssetKey([source, table]) for source, table in CONFIG_FEEDS[config]}
        assert {dep.asset_key for dep in spec.deps} == feeds, key


def test_feed_tables_and_quarantine_exist(specs: list[dg.AssetSpec]) -> None:
    keys = {s.key for s in specs}
    for feeds in CONFIG_FEEDS.values():
        for source, table in feeds:
            assert dg.AssetKey([source, table]) in keys
    for source in SOURCES:
        assert dg.AssetKey([source, "quarantine"]) in keys
    for config in CONFIG_FEEDS:
        assert dg.AssetKey(["curation", config]) in keys


def test_each_source_has_a_blocking_reconcile_check(definitions: dg.Definitions) -> None:
    checks = {
        (key.asset_key.path[0], key.name): spec.blocking
        for ac in definitions.asset_checks or []
        for key, spec in zip(ac.check_keys, ac.check_specs, strict=True)
    }
    for source in SOURCES:
        assert checks.get((source, "raw_reconciles")) is True, source


def test_jobs_schedule_and_sensors(definitions: dg.Definitions) -> None:
    assert definitions.resolve_job_def("daily_ingest").partitions_def is not None
    assert definitions.resolve_job_def("publish_release") is not None
    # the products and line scans run with the day's ingest, never in the release's serial path
    ingest, release = (
        definitions.resolve_job_def(job).asset_layer.selected_asset_keys
        for job in ("daily_ingest", "publish_release")
    )
    products = {dg.AssetKey(["curation", f"{c}_products"]) for c in CONFIG_FEEDS}
    products |= {dg.AssetKey(["release", f"{c}_scanned_lines"]) for c in CONFIG_FEEDS}
    assert products <= ingest
    assert not products & release
    assert dg.AssetKey(["curation", "sft"]) in release
    schedules = list(definitions.schedules or [])
    assert [s.cron_schedule for s in schedules] == ["0 2 * * *"]
    assert len(list(definitions.sensors or [])) >= 2


def test_catalog_owners_kinds_and_layers(specs: list[dg.AssetSpec]) -> None:
    for spec in specs:
        assert spec.owners == ["team:distill-data"], spec.key
        assert spec.tags["distill/layer"] in {"bronze", "silver", "gold"}, spec.key
        published = spec.key == dg.AssetKey(["release", "dataset"])
        assert ("parquet" in spec.kinds) != published, spec.key
        assert spec.kinds & {"duckdb", "polars", "huggingface"}, spec.key
    layers = {s.key.to_user_string(): s.tags["distill/layer"] for s in specs}
    assert (layers["traces/events"], layers["traces/sft_steps"], layers["curation/sft"]) == (
        "bronze",
        "silver",
        "gold",
    )


def test_checks_are_named_by_what_they_prove(definitions: dg.Definitions) -> None:
    names = {key.name for ac in definitions.asset_checks or [] for key in ac.check_keys}
    assert "feed_schema" not in names
    assert {"matches_sft_feed_schema", "matches_sft_tools_feed_schema"} <= names


def test_the_seed_database_is_staged_beside_curation(definitions: dg.Definitions) -> None:
    """Issue 31: the SQLite rewrite is staged off the release chain; export_history finishes it."""
    graph = definitions.resolve_asset_graph()
    staged = dg.AssetKey(["escalations", "seed_database"])
    upstream = dg.AssetSelection.assets(staged).upstream().resolve(graph)
    assert {key.path[0] for key in upstream} == {"escalations"}
    history = dg.AssetKey(["escalations", "export_history"])
    assert staged in dg.AssetSelection.assets(history).upstream(depth=1).resolve(graph)
    release = definitions.resolve_job_def("publish_release").asset_layer.selected_asset_keys
    assert {staged, history} <= release
