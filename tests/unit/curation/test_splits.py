import polars as pl

from distill_assets.defs.curation.pipeline import curate
from distill_assets.defs.curation.splits import assign_splits, key_buckets
from distill_assets.lib.hashing import split_bucket
from distill_assets.rules.curation import buckets_in_test
from tests.unit.curation.feeds import feed_frame, feed_row


def expected(key: str) -> str:
    return "test" if split_bucket(key) < buckets_in_test() else "train"


def test_split_is_the_documented_bucket_of_the_group_and_never_cuts_a_group():
    groups = [f"task-{i}" for i in range(400)]
    rows = pl.DataFrame({"id": [f"r{i}" for i in range(800)], "split_group": groups + groups})
    splits = pl.concat([rows, assign_splits(rows)], how="horizontal")
    assert dict(splits.select("split_group", "split").unique().iter_rows()) == {
        g: expected(g) for g in groups
    }
    assert set(splits["split_by"]) == {"group"}
    assert (splits["split"] == "test").sum() == 94  # 47 of 400 groups, two rows each


def test_empty_group_falls_back_to_the_row_id():
    rows = pl.DataFrame({"id": ["abc", "abc"], "split_group": ["", None]})
    assert assign_splits(rows)["split"].to_list() == [expected("abc")] * 2


def test_a_large_group_is_never_cut():
    """Issue 26: an oversized group used to be split by row (a task in both `sft` splits)."""
    ids = [f"e{i}" for i in range(50)]
    rows = pl.DataFrame(
        {"id": [*ids, "x1", "x2"], "split_group": ["session"] * 50 + ["other1", "other2"]}
    )
    splits = pl.concat([rows, assign_splits(rows)], how="horizontal")
    assert dict(splits.select("split_group", "split").unique().iter_rows()) == {
        g: expected(g) for g in ("session", "other1", "other2")
    }
    assert set(splits["split_by"]) == {"group"}


def test_a_split_is_a_function_of_the_group_alone_whatever_else_the_config_holds():
    """Issue 26: the same trace step was in `sft` test but `sft_tools` train."""
    groups = [f"g{i}" for i in range(30)]
    alone = pl.DataFrame({"id": groups, "split_group": groups})
    crowded = pl.concat(
        [alone, pl.DataFrame({"id": ["d1", "d2"], "split_group": ["player-a", "player-b"]})]
    )
    assert assign_splits(crowded).head(30).equals(assign_splits(alone))


def test_groups_sharing_a_normalized_prompt_share_a_split():
    """Issue 26: the same normalized dpo prompt was in train and test."""
    # g-test hashes into test, g-train into train; a shared prompt makes them one group
    test_group = next(f"g{i}" for i in range(1000) if expected(f"g{i}") == "test")
    train_group = next(f"h{i}" for i in range(1000) if expected(f"h{i}") == "train")
    rows = pl.DataFrame(
        {
            "id": ["a", "b", "c"],
            "split_group": [test_group, train_group, train_group],
            "prompt_key": ["same", "same", None],
        }
    )
    splits = assign_splits(rows)
    merged = min(test_group, train_group)
    assert splits["split"].to_list() == [expected(merged)] * 3
    assert splits["split_by"].to_list() == [
        "group" if g == merged else "prompt" for g in (test_group, train_group, train_group)
    ]


def test_identical_prompts_in_different_sessions_never_straddle_after_curation():
    texts = ["Explain  THE quicksort", "explain the quicksort"] + [f"topic {i}" for i in range(40)]
    rows = [
        feed_row("dpo", f"x{i}", text, source="revisions", group=f"session-{i}")
        for i, text in enumerate(texts)
    ]
    rows[1]["chosen"] = "Merge sort is the better comparison here."  # not a duplicate pair
    feeds = feed_frame("dpo", rows).lazy().with_columns(pl.lit("2026-11-19").alias("partition"))
    curated = curate(feeds, "dpo").curated.sort("id")
    assert curated.height == 42
    quicksort = curated.filter(pl.col("id").is_in(["x0", "x1"]))
    assert quicksort.select("split_group", "split_by").rows() == [
        ("session-0", "group"),
        ("session-1", "prompt"),
    ]
    assert quicksort["split"].to_list() == [expected("session-0")] * 2
    assert set(curated.filter(~pl.col("id").is_in(["x0", "x1"]))["split_by"]) == {"group"}


def test_stored_key_buckets_are_the_documented_buckets_of_the_group():
    rows = pl.DataFrame({"id": ["a", "b", "c"], "split_group": ["s", "", None]})
    buckets = key_buckets(rows)
    assert buckets.rows() == [(split_bucket("s"),), (split_bucket("b"),), (split_bucket("c"),)]
    # a large session and two small groups: the same splits either way
    ids = [f"e{i}" for i in range(50)]
    rows = pl.DataFrame(
        {"id": [*ids, "x1", "x2"], "split_group": ["session"] * 50 + ["other1", "other2"]}
    )
    stored = pl.concat([rows, key_buckets(rows)], how="horizontal")
    assert assign_splits(stored).equals(assign_splits(rows))
    assert assign_splits(stored.reverse()).equals(assign_splits(rows.reverse()))
