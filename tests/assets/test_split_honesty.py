"""Issue 26, honest splits: one split per source record in every config, and the release check.

An escalation record is in `dpo` and in `instruction`. Only in `dpo` does it share a normalized
prompt with another record, whose group hashes to the other split: split per config, the record
would be `test` in `dpo` and `train` in `instruction` (the published symptom); split over every
config at once it is `test` in both.
"""

from __future__ import annotations

import dagster as dg
import pytest

from distill_assets.defs.curation import pipeline, splits
from distill_assets.defs.curation.curated_table import read_curated
from distill_assets.lib.hashing import split_bucket
from distill_assets.lib.settings import Settings
from distill_assets.rules.curation import buckets_in_test
from tests.conftest import materialize, without_daily
from tests.unit.curation.feeds import feed_frame, feed_row, write_feed

SELECTION = "group:curation or group:release"
DAY = "2026-11-19"


def group_in(split: str, prefix: str) -> str:
    """Return the first group `<prefix><i>` whose bucket is in `split`."""
    in_test = {"test": True, "train": False}[split]
    return next(
        f"{prefix}{i}"
        for i in range(1000)
        if (split_bucket(f"{prefix}{i}") < buckets_in_test()) == in_test
    )


SMALL = group_in("test", "a-")  # the merged group's name (the smallest member): test
LARGE = group_in("train", "b-")  # the shared record's own group: train


def land(settings: Settings, metadata: dict[str, object] | None = None) -> None:
    """Land the record `r` in `dpo` and `instruction`, and `s` (same prompt) in `dpo` only."""
    shared = feed_row("dpo", "r", "Explain quicksort", source="escalations", group=LARGE)
    other = feed_row(
        "dpo", "s", "explain  QUICKSORT", source="escalations", group=SMALL, metadata=metadata
    )
    other["chosen"] = "Partition around a pivot, then sort both sides."  # not a duplicate
    alone = feed_row("dpo", "t", "Explain heapsort", source="escalations", group=LARGE)
    write_feed(
        settings.lake_root,
        "escalations",
        "preference_pairs",
        DAY,
        feed_frame("dpo", [shared, other, alone]),
    )
    write_feed(
        settings.lake_root,
        "escalations",
        "instruction_examples",
        DAY,
        feed_frame(
            "instruction",
            [feed_row("instruction", "r", "Sort a list", source="escalations", group=LARGE)],
        ),
    )


def splits_of(settings: Settings, config: str) -> dict[str, tuple[str, str]]:
    curated = read_curated(settings.lake_root, config, ["id", "split", "split_by"])
    return {row[0]: (row[1], row[2]) for row in curated.sort("id").iter_rows()}


def leaks(result: dg.ExecuteInProcessResult) -> object:
    (check,) = (
        e for e in result.get_asset_check_evaluations() if e.check_name == "groups_within_one_split"
    )
    assert check.passed is False
    return check.metadata["failures"].value


def run_unchecked() -> dg.ExecuteInProcessResult:
    from distill_assets.definitions import defs

    job = dg.define_asset_job("split_test_job", selection=without_daily(SELECTION))
    definitions = dg.Definitions.merge(defs(), dg.Definitions(jobs=[job]))
    return definitions.resolve_job_def("split_test_job").execute_in_process(raise_on_error=False)


def test_a_record_merged_through_a_prompt_in_one_config_has_one_split_everywhere(
    distill_env: Settings,
) -> None:
    land(distill_env)
    result = materialize(SELECTION)
    assert all(e.passed for e in result.get_asset_check_evaluations())
    assert splits_of(distill_env, "dpo") == {
        "r": ("test", "merged"),
        "s": ("test", "group"),
        "t": ("test", "merged"),  # same group as `r`
    }
    assert splits_of(distill_env, "instruction") == {"r": ("test", "merged")}


def test_the_release_check_fails_on_a_record_in_two_splits_across_configs(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    land(distill_env)
    # the splits as they were: each config split on its own
    split = pipeline.with_splits
    monkeypatch.setattr(
        pipeline, "with_splits", lambda keys: {c: split({c: r})[c] for c, r in keys.items()}
    )
    result = run_unchecked()
    assert not result.success
    assert leaks(result) == {
        "across_configs": {
            "records_in_several_splits": {
                "count": 1,
                "records": ["escalations:escalations/r (dpo, instruction)"],
            }
        }
    }
    assert result.asset_materializations_for_node("release__dataset") == []


def test_the_release_check_fails_on_a_prompt_in_two_splits(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    land(distill_env)
    # groups never merged: `r` and `s` keep their own groups' splits
    monkeypatch.setattr(
        splits, "merged_groups", lambda rows: rows.get_column("group").alias("merged")
    )
    result = run_unchecked()
    assert not result.success
    assert leaks(result) == {
        "dpo": {"prompts_in_several_splits": {"count": 1, "prompts": ["explain quicksort"]}}
    }


def test_the_release_check_fails_on_metadata_naming_another_split(distill_env: Settings) -> None:
    land(distill_env, metadata={"split": "train"})
    result = run_unchecked()
    assert not result.success
    assert leaks(result) == {"dpo": {"metadata_split_disagrees": {"count": 1, "ids": ["s"]}}}
