import polars as pl

from distill_assets.defs.curation.pipeline import curate, with_splits
from distill_assets.defs.curation.splits import assign_splits, key_buckets, prompt_hashes
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
        "group" if g == merged else "merged" for g in (test_group, train_group, train_group)
    ]


def first(prefix: str, split: str, after: str = "") -> str:
    """Return the first name `<prefix><i>` above `after` whose bucket is in `split`."""
    return next(
        f"{prefix}{i}"
        for i in range(1000)
        if expected(f"{prefix}{i}") == split and f"{prefix}{i}" > after
    )


def keys(*rows: tuple[str, str, str, str | None, str]) -> pl.DataFrame:
    """Published split keys of rows (id, split_group, source_ref, prompt_key, source)."""
    names = ("id", "split_group", "source_ref", "prompt_key", "source")
    frame = pl.DataFrame(rows, schema={n: pl.String() for n in names}, orient="row")
    return pl.concat([frame, key_buckets(frame)], how="horizontal")


def test_a_record_merged_through_a_prompt_in_one_config_has_that_split_in_every_config():
    """Issue 26: a prompt merge in `dpo` pulled a record into a split `correction` did not."""
    small = first("a", "test")  # the merged group's name: the smallest member
    large = first("b", "train", after=small)
    dpo = keys(
        ("d1", large, "esc.jsonl:5", "same prompt", "escalations"),
        ("d2", small, "esc.jsonl:9", "same prompt", "escalations"),
    )
    correction = keys(("c1", large, "esc.jsonl:5", "only here", "escalations"))
    # split alone, `correction` would put the record in its own group's split
    assert assign_splits(correction)["split"].to_list() == ["train"]
    split = with_splits({"dpo": dpo, "correction": correction})
    assert split["dpo"].select("id", "split", "split_by").rows() == [
        ("d1", "test", "merged"),
        ("d2", "test", "group"),
    ]
    assert split["correction"].select("id", "split", "split_by").rows() == [
        ("c1", "test", "merged")
    ]


def test_groups_chain_across_configs_through_prompts_and_records():
    """g1 -prompt (sft)- g2 -record- g3 -prompt (dpo)- g4: one group, named by the smallest."""
    names = sorted([first("c", "train"), first("d", "train"), first("e", "train")])
    smallest = first("a", "test")
    g1, g2, g3, g4 = names[2], names[0], names[1], smallest
    sft = keys(
        ("s1", g1, "run:1/step:0", "p", "traces"),
        ("s2", g2, "run:2/step:0", "p", "traces"),
    )
    sft_tools = keys(("t1", g3, "run:2/step:0", None, "traces"))
    dpo = keys(
        ("d1", g3, "rev:7", "q", "revisions"),
        ("d2", g4, "rev:8", "q", "revisions"),
        ("d3", names[0] + "-alone", "rev:9", "r", "revisions"),
    )
    split = with_splits({"sft": sft, "sft_tools": sft_tools, "dpo": dpo})
    assert {c: rows["split"].to_list() for c, rows in split.items()} == {
        "sft": ["test", "test"],
        "sft_tools": ["test"],
        "dpo": ["test", "test", expected(names[0] + "-alone")],
    }
    assert split["dpo"]["split_by"].to_list() == ["merged", "group", "group"]
    # the same rows in another order, and the configs in another order: the same splits
    again = with_splits({"dpo": dpo.reverse(), "sft_tools": sft_tools, "sft": sft.reverse()})
    assert again["sft"].reverse().equals(split["sft"])
    assert again["dpo"].reverse().equals(split["dpo"])


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
        ("session-1", "merged"),
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


def test_an_empty_prompt_links_nothing():
    hashes = prompt_hashes(pl.Series(["", None, "why", "why"]))
    assert hashes[:2].to_list() == [None, None]
    assert hashes[2] == hashes[3] is not None
