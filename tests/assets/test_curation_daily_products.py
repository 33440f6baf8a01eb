"""Curation's daily product assets: made with the day's ingest, reused by the release's `curate`.

`curation/<config>_products` writes a day's product file as `curate` would, so `curate` reuses
it (`products_reused`) and its curated files are byte-identical to those of a `curate` that
computed every product itself; a product made stale afterwards (its feed partition rewritten) is
recomputed by `curate`.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from tests.assets.test_curation_incremental import (
    DAYS,
    curation_metadata,
    day_rows,
    land,
    published_bytes,
    use_data_dir,
)
from tests.conftest import materialize
from tests.unit.curation.feeds import feed_frame, write_feed

DAILY = 'tag:"distill/scope"="daily"'
CURATE = 'key:"curation/*"'
FED = ("sft", "instruction")  # the configs `land` writes feed partitions of


def product_metadata(result: dg.ExecuteInProcessResult) -> dict[str, dict[str, object]]:
    """Return each config's daily product metadata of a run, by config."""
    found = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        if materialization.asset_key.path[0] != "curation":
            continue  # the release's daily line scans (`test_release_daily_lines.py`)
        config = materialization.asset_key.path[-1].removesuffix("_products")
        found[config] = {k: v.value for k, v in materialization.metadata.items()}
    return found


def ingest_days(settings: Settings, days: int) -> list[dict[str, dict[str, object]]]:
    """Land `days` days of feeds, running the daily product assets after each."""
    metadata = []
    for index in range(days):
        land(settings, index)
        metadata.append(product_metadata(materialize(DAILY, partition=DAYS[index])))
    return metadata


def test_curate_reuses_the_daily_products_and_curates_the_same_bytes(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    daily = use_data_dir(monkeypatch, tmp_path / "daily")
    metadata = ingest_days(daily, 2)
    first = metadata[0]
    assert sorted(first) == sorted(CONFIG_FEEDS)
    assert {c: first[c]["dagster/row_count"] for c in FED} == {"sft": 10, "instruction": 10}
    assert first["sft"]["feed_tables"] == ["traces/sft_steps"]
    assert (first["sft"]["reused"], first["sft"]["slices"]) == (False, 1)
    assert first["sft"]["largest_slice_rows"] == 10
    # a config without a feed partition that day has no product
    assert first["dpo"]["dagster/row_count"] == 0
    assert (first["dpo"]["feed_tables"], first["dpo"]["slices"]) == ([], 0)
    assert not partition_path(daily.lake_root, "curation", "dpo_products", DAYS[0]).exists()
    # counts and versions only: no text, id or pseudonym in the instance
    # the empty day's columns are those of a product file
    assert first["dpo"]["dagster/column_schema"].columns[:3] == [
        dg.TableColumn("id", "large_string"),
        dg.TableColumn("source", "large_string"),
        dg.TableColumn("source_ref", "large_string"),
    ]
    names = {c.name for c in first["sft"]["dagster/column_schema"].columns}
    assert {"product_row", "content_hash", "signature", "embedding", "gate_failed"} <= names
    assert sorted(first["sft"]) == sorted(
        [
            "dagster/row_count",
            "dagster/column_schema",
            "feed_tables",
            "reused",
            "slices",
            "largest_slice_rows",
            "largest_slice_feed_bytes",
            "product_version",
            "rules_version",
            "rules/curation",
        ]
    )
    # the day's ingest again: the product is fresh, kept
    again = product_metadata(materialize(DAILY, partition=DAYS[1]))
    assert (again["sft"]["reused"], again["sft"]["slices"]) == (True, 0)
    assert again["sft"]["dagster/row_count"] == 10

    result = materialize(CURATE)
    for config in FED:
        assert curation_metadata(result, config, "products_computed") == []
        assert curation_metadata(result, config, "products_reused") == list(DAYS[:2])
    reused = published_bytes(daily)

    computed = use_data_dir(monkeypatch, tmp_path / "computed")
    for index in range(2):
        land(computed, index)
    result = materialize(CURATE)
    for config in FED:
        assert curation_metadata(result, config, "products_computed") == list(DAYS[:2])
        assert curation_metadata(result, config, "products_reused") == []
    assert published_bytes(computed) == reused
    assert "curation/sft/2026-11-20.parquet" in reused
    assert "curation/sft_products/2026-11-20.parquet" in reused


def test_a_product_made_stale_after_the_daily_asset_is_recomputed_by_curate(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = use_data_dir(monkeypatch, tmp_path / "stale")
    ingest_days(settings, 2)
    # a deletion rewrites day 1's sft feed partition after its products were made
    kept = day_rows(0)["sft"][1:]
    write_feed(settings.lake_root, "traces", "sft_steps", DAYS[0], feed_frame("sft", kept))
    result = materialize(CURATE)
    assert curation_metadata(result, "sft", "products_computed") == [DAYS[0]]
    assert curation_metadata(result, "sft", "products_reused") == [DAYS[1]]
    assert curation_metadata(result, "instruction", "products_reused") == list(DAYS[:2])
    after = published_bytes(settings)

    scratch = use_data_dir(monkeypatch, tmp_path / "scratch")
    for index in range(2):
        land(scratch, index)
    write_feed(scratch.lake_root, "traces", "sft_steps", DAYS[0], feed_frame("sft", kept))
    materialize(CURATE)
    assert published_bytes(scratch) == after
