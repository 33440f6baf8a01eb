"""The split leaks the release check looks for, each reproduced (issue 26) and named exactly."""

from __future__ import annotations

import polars as pl

from distill_assets.defs.release.split_audit import config_leaks, record_leaks


def dpo_rows(*rows: tuple[str, str, str, str, str]) -> pl.DataFrame:
    """Rows of (id, split, split_group, prompt, metadata) in the published dpo shape."""
    return pl.DataFrame(
        {
            "id": [r[0] for r in rows],
            "split": [r[1] for r in rows],
            "split_group": [r[2] for r in rows],
            "metadata": [r[4] for r in rows],
            "prompt": [[{"role": "user", "content": r[3]}] for r in rows],
            "chosen": [[{"role": "assistant", "content": "yes"}] for _ in rows],
            "rejected": [[{"role": "assistant", "content": "no"}] for _ in rows],
        }
    )


def test_an_honest_config_has_no_leak() -> None:
    rows = dpo_rows(("a", "train", "s1", "Why?", "{}"), ("b", "test", "s2", "How?", "{}"))
    assert config_leaks("dpo", rows) == {}


def test_the_same_normalized_prompt_in_both_splits_is_a_leak() -> None:
    rows = dpo_rows(
        ("a", "train", "s1", "Explain  Quicksort", "{}"),
        ("b", "test", "s2", "explain quicksort", "{}"),
    )
    assert config_leaks("dpo", rows) == {
        "prompts_in_several_splits": {"count": 1, "prompts": ["explain quicksort"]}
    }


def test_a_group_in_both_splits_is_a_leak() -> None:
    rows = dpo_rows(
        ("a", "train", "quixbugs/levenshtein", "p1", "{}"),
        ("b", "test", "quixbugs/levenshtein", "p2", "{}"),
    )
    assert config_leaks("dpo", rows) == {
        "groups_in_several_splits": {"count": 1, "groups": ["quixbugs/levenshtein"]}
    }


def test_metadata_naming_another_split_is_a_leak() -> None:
    rows = dpo_rows(
        ("a", "train", "s1", "p1", '{"split": "test"}'),
        ("b", "test", "s2", "p2", '{"split": "test"}'),
    )
    assert config_leaks("dpo", rows) == {"metadata_split_disagrees": {"count": 1, "ids": ["a"]}}


def test_a_source_record_in_two_splits_across_configs_is_a_leak() -> None:
    records = pl.DataFrame(
        {
            "config": ["sft", "sft_tools", "sft", "sft_tools"],
            "source": ["traces"] * 4,
            "source_ref": ["run:1b859e1944/step:0"] * 2 + ["run:2/step:1"] * 2,
            "split": ["test", "train", "train", "train"],
        }
    )
    assert record_leaks(records) == {
        "records_in_several_splits": {
            "count": 1,
            "records": ["traces:run:1b859e1944/step:0 (sft, sft_tools)"],
        }
    }


def test_a_record_merged_through_a_prompt_in_one_config_only_is_a_leak_too() -> None:
    """Issue 26: such a record used to be exempt; splits are now merged over every config."""
    records = pl.DataFrame(
        {
            "config": ["dpo", "correction", "dpo"],
            "source": ["escalations"] * 3,
            "source_ref": ["escalations/a.jsonl:5"] * 2 + ["escalations/a.jsonl:9"],
            "split": ["test", "train", "test"],
        }
    )
    assert record_leaks(records) == {
        "records_in_several_splits": {
            "count": 1,
            "records": ["escalations:escalations/a.jsonl:5 (correction, dpo)"],
        }
    }


def test_every_leak_of_a_config_is_reported_at_once() -> None:
    rows = dpo_rows(
        ("a", "train", "quixbugs/levenshtein", "Explain  Quicksort", '{"split": "test"}'),
        ("b", "test", "quixbugs/levenshtein", "explain quicksort", "{}"),
    )
    assert config_leaks("dpo", rows) == {
        "groups_in_several_splits": {"count": 1, "groups": ["quixbugs/levenshtein"]},
        "prompts_in_several_splits": {"count": 1, "prompts": ["explain quicksort"]},
        "metadata_split_disagrees": {"count": 1, "ids": ["a"]},
    }
