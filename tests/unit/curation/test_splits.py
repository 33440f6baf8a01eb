import polars as pl

from distill_assets.defs.curation.pipeline import curate
from distill_assets.defs.curation.splits import assign_splits, key_buckets
from distill_assets.lib.hashing import split_bucket
from distill_assets.rules.curation import (
    MAX_GROUP_SHARE,
    MIN_ROWS_FOR_BOTH_SPLITS,
    buckets_in_test,
)
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


def test_an_oversized_group_is_split_by_row_and_recorded():
    ids = [f"e{i}" for i in range(50)]
    rows = pl.DataFrame(
        {"id": [*ids, "x1", "x2"], "split_group": ["session"] * 50 + ["other1", "other2"]}
    )
    assert MAX_GROUP_SHARE < 50 / 52
    splits = pl.concat([rows, assign_splits(rows)], how="horizontal")
    session = splits.filter(pl.col("split_group") == "session")
    assert set(session["split_by"]) == {"row"}
    assert session["split"].to_list() == [expected(f"session/{i}") for i in ids]
    assert splits.filter(pl.col("split_group") != "session")["split_by"].to_list() == [
        "group",
        "group",
    ]


def test_a_config_whose_rows_all_share_one_session_has_both_splits():
    for n in range(MIN_ROWS_FOR_BOTH_SPLITS, MIN_ROWS_FOR_BOTH_SPLITS + 40):
        rows = pl.DataFrame({"id": [f"c{n}-{i}" for i in range(n)], "split_group": ["s"] * n})
        splits = assign_splits(rows)
        assert set(splits["split"]) == {"train", "test"}, n


def test_an_empty_split_gets_the_key_with_the_extreme_bucket():
    # 20 groups chosen so that none hashes into test: the lowest bucket moves to test
    groups, i = [], 0
    while len(groups) < MIN_ROWS_FOR_BOTH_SPLITS:
        if expected(f"g{i}") == "train":
            groups.append(f"g{i}")
        i += 1
    rows = pl.DataFrame({"id": groups, "split_group": groups})
    splits = pl.concat([rows, assign_splits(rows)], how="horizontal")
    lowest = min(groups, key=lambda g: (split_bucket(g), g))
    assert splits.filter(pl.col("split") == "test").select("id", "split_by").rows() == [
        (lowest, "moved")
    ]


def test_escalations_captured_in_one_session_publish_train_and_test():
    rows = [
        feed_row(
            "instruction",
            f"x{i}",
            f"escalation number {i} about topic {i * 7}",
            source="escalations",
            group="capture-session",
        )
        for i in range(40)
    ]
    feeds = (
        feed_frame("instruction", rows).lazy().with_columns(pl.lit("2026-11-19").alias("partition"))
    )
    curated = curate(feeds, "instruction").curated
    assert curated.height == 40
    counts = dict(curated.group_by("split").len().iter_rows())
    assert counts["train"] > 0 and counts["test"] > 0
    assert set(curated["split_by"]) == {"row"}


def test_stored_key_buckets_are_the_documented_buckets_of_both_keys():
    rows = pl.DataFrame({"id": ["a", "b", "c"], "split_group": ["s", "", None]})
    buckets = key_buckets(rows)
    assert buckets.rows() == [
        (split_bucket("s"), split_bucket("s/a")),
        (split_bucket("b"), split_bucket("b/b")),
        (split_bucket("c"), split_bucket("c/c")),
    ]
    # an oversized session, a normal group and a moved key: the same splits either way
    ids = [f"e{i}" for i in range(50)]
    rows = pl.DataFrame(
        {"id": [*ids, "x1", "x2"], "split_group": ["session"] * 50 + ["other1", "other2"]}
    )
    stored = pl.concat([rows, key_buckets(rows)], how="horizontal")
    assert assign_splits(stored).equals(assign_splits(rows))
    assert assign_splits(stored.reverse()).equals(assign_splits(rows.reverse()))
