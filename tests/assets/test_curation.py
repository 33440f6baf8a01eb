"""Curation assets materialized in-process over synthetic feed tables written into the lake."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import polars as pl

from distill_assets.contracts.published import CONFIG_FEEDS, EXCLUSION_TABLES
from distill_assets.defs.curation.curated_table import read_curated
from distill_assets.defs.curation.pipeline import curated_schema
from distill_assets.lib.lake import global_path
from distill_assets.lib.settings import Settings
from distill_assets.rules import rules_version
from tests.conftest import materialize
from tests.unit.curation.feeds import feed_frame, feed_row, write_feed

SELECTION = 'key:"curation/*"'
DAY1, DAY2 = "2026-11-19", "2026-11-20"


def sft(row_id: str, text: str, source: str, **kw: object) -> dict[str, object]:
    return feed_row("sft", row_id, text, source=source, **kw)


def land_feeds(settings: Settings) -> None:
    lake = settings.lake_root
    write_feed(
        lake,
        "traces",
        "sft_steps",
        DAY1,
        feed_frame(
            "sft",
            [
                sft("t1", "List the files", "traces", group="task-a", score=0.6, event_time=10.0),
                sft("t2", "Read main.py, ask ops@corp.com", "traces", group="task-a", score=0.7),
                sft("t3", "Run the tests", "traces", group="task-b", score=0.2, event_time=5.0),
            ],
        ),
    )
    write_feed(
        lake,
        "telemetry",
        "dialogues",
        DAY2,
        feed_frame(
            "sft",
            [
                sft(
                    "d1", "list  the FILES", "telemetry", group="conv-1", score=0.9, event_time=1.0
                ),
                sft("d2", "run the tests", "telemetry", group="conv-2", score=0.2, event_time=9.0),
                sft("d3", "Greetings, traveller", "telemetry", group="conv-3", score=0.4),
            ],
        ),
    )
    write_feed(
        lake,
        "revisions",
        "revision_pairs",
        DAY1,
        feed_frame(
            "dpo",
            [
                feed_row("dpo", "p1", "Explain let vs const", source="revisions", group="turn-1"),
            ],
        ),
    )


def lake_table(settings: Settings, name: str) -> pl.DataFrame:
    if name in CONFIG_FEEDS:
        return read_curated(settings.lake_root, name)
    return pl.read_parquet(str(global_path(settings.lake_root, "curation", name)))


def curation_bytes(settings: Settings) -> dict[str, bytes]:
    """Every file curation wrote (curated partitions, removal tables, funnels, products)."""
    folder = Path(settings.lake_root) / "curation"
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}


def metadata(result: dg.ExecuteInProcessResult, config: str) -> dict[str, object]:
    found = {
        m.asset_key.path[-1]: {k: v.value for k, v in m.metadata.items()}
        for m in result.asset_materializations_for_node("curate")
    }
    return found[config]


def test_curation_scrubs_dedups_across_feeds_and_partitions_and_splits(
    distill_env: Settings,
) -> None:
    land_feeds(distill_env)
    result = materialize(SELECTION)
    assert result.success

    curated = lake_table(distill_env, "sft")
    assert curated.schema == curated_schema("sft")
    # one file per partition, in partition order; within one: split, id
    assert curated.select("id", "source", "split", "partition").rows() == [
        ("t2", "traces", "train", DAY1),
        ("t3", "traces", "train", DAY1),
        ("d1", "telemetry", "train", DAY2),
        ("d3", "telemetry", "train", DAY2),
    ]
    folder = Path(distill_env.lake_root) / "curation" / "sft"
    assert sorted(p.name for p in folder.iterdir()) == [f"{DAY1}.parquet", f"{DAY2}.parquet"]
    t2 = curated.filter(pl.col("id") == "t2").row(0, named=True)
    assert t2["prompt"] == [{"role": "user", "content": "Read main.py, ask [REDACTED_EMAIL]"}]
    assert t2["completion"] == [
        {"role": "assistant", "content": "answer to Read main.py, ask [REDACTED_EMAIL]"}
    ]

    duplicates = lake_table(distill_env, "sft_duplicates")
    assert duplicates.select("id", "source", "partition", "kept_id").rows() == [
        ("t1", "traces", DAY1, "d1"),  # d1 scores higher
        ("d2", "telemetry", DAY2, "t3"),  # same score: t3 is earlier
    ]
    # written while deciding, before the asset's metadata: the counts are the file's
    removed = metadata(result, "sft_duplicates")
    assert (removed["dagster/row_count"], removed["kept_ids"]) == (2, 2)
    assert [c.name for c in removed["dagster/column_schema"].columns] == duplicates.columns
    assert metadata(result, "instruction_duplicates")["dagster/row_count"] == 0

    meta = metadata(result, "sft")
    assert (meta["rows_in"], meta["rows_out"], meta["redacted_rows"]) == (6, 4, 1)
    assert "| exact_duplicate | 2 |" in meta["dropped"]
    assert "| email | 2 |" in meta["redactions"]
    assert "| telemetry | 2 | 0 |" in meta["rows_by_source_and_split"]
    assert "| traces/sft_steps | 1 | 2026-11-19 | 2026-11-19 |" in meta["input_partitions"]
    assert meta["rules_version"] == rules_version("curation")

    assert lake_table(distill_env, "dpo")["id"].to_list() == ["p1"]
    instruction = lake_table(distill_env, "instruction")
    assert (instruction.height, instruction.schema) == (0, curated_schema("instruction"))
    assert lake_table(distill_env, "instruction_duplicates").height == 0


def test_curation_is_idempotent_byte_for_byte(distill_env: Settings) -> None:
    land_feeds(distill_env)
    first = materialize(SELECTION)
    written = curation_bytes(distill_env)
    assert "sft/2026-11-19.parquet" in written
    assert "sft_duplicates.parquet" in written
    again = materialize(SELECTION)
    assert curation_bytes(distill_env) == written
    assert metadata(first, "sft")["curated_rewritten"] == [DAY1, DAY2]
    assert metadata(again, "sft")["curated_rewritten"] == []


def test_curation_assets_are_keyed_grouped_and_versioned_by_the_curation_rules() -> None:
    from distill_assets.definitions import defs

    graph = defs().resolve_asset_graph()
    every_feed = {dg.AssetKey([s, t]) for feeds in CONFIG_FEEDS.values() for s, t in feeds}
    exclusions = {dg.AssetKey([s, t]) for s, t in EXCLUSION_TABLES}
    for config, feeds in CONFIG_FEEDS.items():
        for key in (
            dg.AssetKey(["curation", config]),
            dg.AssetKey(["curation", f"{config}_duplicates"]),
        ):
            node = graph.get(key)
            assert node.group_name == "curation"
            assert node.code_version == rules_version("curation")
            assert node.partitions_def is None
        # a curated table's splits read every config's rows; its removals only its own feeds
        assert graph.get(dg.AssetKey(["curation", config])).parent_keys == every_feed | exclusions
        assert (
            graph.get(dg.AssetKey(["curation", f"{config}_duplicates"])).parent_keys
            == {dg.AssetKey([s, t]) for s, t in feeds} | exclusions
        )
        # one op makes them all: they are materialized together
        assert graph.get_execution_set_asset_and_check_keys(dg.AssetKey(["curation", config])) >= {
            dg.AssetKey(["curation", c]) for c in CONFIG_FEEDS
        }
