"""Traces assets materialized in-process on the committed samples and on landed edge cases."""

from __future__ import annotations

import json
from collections.abc import Iterator

import dagster as dg
import datasets
import polars as pl
import pytest

from distill_assets.contracts.published import feed_schema
from distill_assets.contracts.traces import QUARANTINE_REASONS
from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from distill_assets.rules import rules_version
from tests.conftest import land, materialize, samples_materialized
from tests.unit.traces.builder import parse_error_run, recovery_run, success_run, text

DAY1, DAY2, EMPTY_DAY = "2026-11-19", "2026-11-20", "2026-11-21"
SELECTION = 'key:"traces/*"'
TABLES = ("events", "quarantine", "runs", "sft_steps", "sft_tool_steps", "dropped_steps")


def table(settings: Settings, name: str, day: str) -> pl.DataFrame:
    return pl.read_parquet(str(partition_path(settings.lake_root, "traces", name, day)))


def row_counts(settings: Settings, day: str) -> dict[str, int]:
    return {name: table(settings, name, day).height for name in TABLES}


def checks(result: dg.ExecuteInProcessResult) -> dict[str, bool]:
    return {
        e.asset_check_key.to_user_string(): e.passed for e in result.get_asset_check_evaluations()
    }


ALL_CHECKS_PASS = {
    "traces/events:raw_reconciles": True,
    "traces/sft_steps:matches_sft_feed_schema": True,
    "traces/sft_steps:samples_valid": True,
    "traces/sft_tool_steps:matches_sft_tools_feed_schema": True,
    "traces/sft_tool_steps:samples_valid": True,
    "traces/dropped_steps:steps_reconcile": True,
}


@pytest.fixture(scope="module")
def samples_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[Settings, dg.ExecuteInProcessResult, dg.ExecuteInProcessResult]]:
    """Both sample days materialized once for the tests that only read them (like `sample_env`)."""
    yield from samples_materialized(tmp_path_factory.mktemp("traces"), SELECTION, (DAY1, DAY2))


def test_sample_partitions_materialize_with_exact_counts(samples_run) -> None:
    sample_env, first, second = samples_run
    assert checks(first) == checks(second) == ALL_CHECKS_PASS
    # 213 raw records = 198 events + 15 quarantined (one of each reason); 41 steps = 11 + 30
    assert row_counts(sample_env, DAY1) == {
        "events": 198,
        "quarantine": 15,
        "runs": 9,
        "sft_steps": 11,
        "sft_tool_steps": 11,
        "dropped_steps": 30,
    }
    assert row_counts(sample_env, DAY2) == {
        "events": 204,
        "quarantine": 15,
        "runs": 9,
        "sft_steps": 9,
        "sft_tool_steps": 9,
        "dropped_steps": 33,
    }
    # the committed samples predate `duplicate_key` (tests/unit/traces/test_bronze.py has one):
    # a line added to them would renumber, and so change, the published rows after it
    for day in (DAY1, DAY2):
        reasons = table(sample_env, "quarantine", day)["reason"].sort().to_list()
        assert reasons == sorted(set(QUARANTINE_REASONS) - {"duplicate_key"})
    runs = table(sample_env, "runs", DAY1)
    assert dict(runs.group_by("skip_reason").len().iter_rows()) == {
        None: 4,
        "tests_failed": 1,
        "no_tests": 2,
        "llm_parse_error": 1,
        "incomplete": 1,
    }
    meta = {
        m.asset_key.to_user_string(): m.metadata
        for m in first.get_asset_materialization_events()
        for m in [m.step_materialization_data.materialization]
    }
    sft = meta["traces/sft_steps"]
    assert sft["samples"].value == 11
    assert sft["slices"].value == 1
    assert sft["rules_version"].value == rules_version("traces")
    assert "| duplicate | 2 |" in sft["dropped_by_reason"].value
    assert "| recovery_step | 1 |" in sft["dropped_by_reason"].value
    assert meta["traces/events"]["quarantine_rows"].value == 15
    assert meta["traces/runs"]["successful_runs"].value == 4


def test_feeds_have_the_published_columns_and_load_as_datasets(samples_run) -> None:
    sample_env, _, _ = samples_run
    sft, tools = table(sample_env, "sft_steps", DAY1), table(sample_env, "sft_tool_steps", DAY1)
    for frame, config in ((sft, "sft"), (tools, "sft_tools")):
        assert frame.select(list(feed_schema(config))).schema == feed_schema(config)
    assert sft.select("run_id", "t").equals(tools.select("run_id", "t"))
    assert set(sft["source"]) == {"traces"}
    assert sft["source_ref"].str.starts_with("run:").all()
    path = str(partition_path(sample_env.lake_root, "traces", "sft_tool_steps", DAY1))
    dataset = datasets.Dataset.from_parquet(path)
    assert dataset.num_rows == 11
    row = dataset[0]
    assert [m["role"] for m in row["messages"]][:4] == ["system", "user", "assistant", "tool"]
    call = row["messages"][2]["tool_calls"][0]
    assert call["id"] == row["messages"][3]["tool_call_id"] == "call_1"
    assert isinstance(json.loads(call["function"]["arguments"]), dict)
    assert [json.loads(t)["function"]["name"] for t in row["tools"]] == [
        "list_files",
        "read_file",
        "grep",
        "write_file",
    ]


def test_rematerializing_a_partition_is_byte_identical(sample_env: Settings) -> None:
    materialize(SELECTION, DAY1)
    paths = {n: partition_path(sample_env.lake_root, "traces", n, DAY1) for n in TABLES}
    before = {name: path.read_bytes() for name, path in paths.items()}
    materialize(SELECTION, DAY1)
    assert {name: path.read_bytes() for name, path in paths.items()} == before


def test_config_options_reach_the_extraction(sample_env: Settings) -> None:
    from distill_assets.definitions import defs

    config = {"ops": {"traces_sft": {"config": {"require_success": False}}}}
    job = dg.define_asset_job("lenient", selection=SELECTION, config=config)
    resolved = dg.Definitions.merge(defs(), dg.Definitions(jobs=[job]))
    result = resolved.resolve_job_def("lenient").execute_in_process(partition_key=DAY1)
    assert result.success
    samples = table(sample_env, "sft_steps", DAY1)
    # 26 instead of 11: unsuccessful runs' steps now count, and some of them are the earliest
    # of a duplicate group, so 2 successful-run samples become their duplicates
    assert samples.height == 26
    unsuccessful = samples.filter(pl.col("metadata").str.contains('"run_success":false'))
    assert unsuccessful.height == 17
    assert unsuccessful["quality_score"].max() <= 0.5


def test_landed_edge_cases_and_an_empty_partition(distill_env: Settings) -> None:
    land(
        distill_env,
        "traces",
        DAY1,
        "a.jsonl",
        text(success_run("s1"), recovery_run("r1", goal="g")),
    )
    torn = text(parse_error_run("p1", goal="h")) + '{"ts": 1795050000.5, "kind": "llm_req'
    land(distill_env, "traces", DAY1, "b.jsonl", "\ufeff" + torn.replace("\n", "\r\n"))
    result = materialize(SELECTION, DAY1)
    assert checks(result) == ALL_CHECKS_PASS
    assert table(distill_env, "quarantine", DAY1)["reason"].to_list() == ["torn_last_line"]
    sft = table(distill_env, "sft_steps", DAY1)
    assert dict(sft.group_by("run_id").len().sort("run_id").iter_rows()) == {"r1": 2, "s1": 3}
    empty = materialize(SELECTION, EMPTY_DAY)
    assert checks(empty) == ALL_CHECKS_PASS
    assert row_counts(distill_env, EMPTY_DAY) == dict.fromkeys(TABLES, 0)
