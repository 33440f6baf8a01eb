import hashlib
import json

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.curation.curate import curate
from distill_assets.defs.curation.dedup import content_key, split_assignments
from distill_assets.lib.hashing import split_bucket
from distill_assets.rules.curation import SPLIT_BUCKETS, buckets_in_test
from tests.unit.curation.feeds import feed_frame, feed_row


def lazy(config: str, rows: list[dict[str, object]], partition: str = "2026-11-19") -> pl.LazyFrame:
    return feed_frame(config, rows).lazy().with_columns(pl.lit(partition).alias("partition"))


def row(row_id: str, text: str, **kw: object) -> dict[str, object]:
    kw.setdefault("source", "revisions")
    kw.setdefault("group", f"g-{row_id}")
    return feed_row("dpo", row_id, text, **kw)


def test_representative_is_highest_score_then_earliest_then_smallest_id():
    rows = [
        row("a", "Same  Prompt", score=0.5, event_time=1.0),
        row("b", "same prompt", score=0.9, event_time=5.0),
        row("c", " SAME\tprompt ", score=0.9, event_time=3.0),
        row("d", "same\nprompt", score=0.9, event_time=3.0),
        row("e", "other prompt", score=0.1, event_time=9.0),
        row("f", "tie", score=0.7, event_time=2.0),
        row("g", "TIE", score=0.7, event_time=2.0),
    ]
    result = curate(lazy("dpo", rows), "dpo")
    assert sorted(result.curated["id"].to_list()) == ["c", "e", "f"]
    assert result.duplicates.select("id", "kept_id").rows() == [
        ("a", "c"),
        ("b", "c"),
        ("d", "c"),
        ("g", "f"),
    ]
    assert result.drop_reasons == {"exact_duplicate": 4}
    kept = result.curated.filter(pl.col("id") == "c")
    assert kept["prompt"][0] == " SAME\tprompt "  # the representative keeps its own text


def test_duplicates_are_found_across_partitions_and_sources_regardless_of_order():
    first = [row("a", "hello world", score=0.4, source="revisions")]
    second = [row("b", "Hello World", score=0.8, source="escalations"), row("c", "unique")]
    forward = curate(pl.concat([lazy("dpo", first), lazy("dpo", second, "2026-11-20")]), "dpo")
    backward = curate(pl.concat([lazy("dpo", second, "2026-11-20"), lazy("dpo", first)]), "dpo")
    assert forward.curated.equals(backward.curated)
    assert forward.duplicates.equals(backward.duplicates)
    assert forward.duplicates.rows() == [
        ("a", "revisions", "revisions/a", "2026-11-19", forward.duplicates["content_hash"][0], "b")
    ]


def test_content_hash_is_sha256_of_the_documented_normalized_json():
    rows = [row("a", "  Hello\n\tWORLD  ")]
    result = curate(lazy("dpo", rows), "dpo")
    normalized = {
        "prompt": "hello world",
        "chosen": "good hello world",
        "rejected": "bad hello world",
    }
    text = json.dumps(normalized, separators=(",", ":"))
    assert result.curated["content_hash"][0] == hashlib.sha256(text.encode()).hexdigest()[:16]
    key = feed_frame("dpo", rows).select(
        content_key({"prompt": pl.String(), "chosen": pl.String(), "rejected": pl.String()})
    )
    assert key.item() == text


def test_messages_that_differ_only_in_case_and_whitespace_are_duplicates():
    rows = [
        feed_row("sft", "x", "Fix the BUG", source="traces", group="t1", score=0.2),
        feed_row("sft", "y", "fix  the bug", source="telemetry", group="t2", score=0.3),
    ]
    result = curate(lazy("sft", rows), "sft")
    assert result.curated["id"].to_list() == ["y"]
    assert result.duplicates.select("id", "kept_id").rows() == [("x", "y")]


def test_split_is_the_documented_bucket_of_the_group_and_never_cuts_a_group():
    groups = [f"task-{i}" for i in range(400)]
    keys = pl.DataFrame(
        {
            "row_nr": range(800),
            "id": [f"r{i}" for i in range(800)],
            "split_group": groups + groups,
        }
    )
    splits = split_assignments(keys).join(keys, on="row_nr")
    expected = {
        g: "test" if split_bucket(g, SPLIT_BUCKETS) < buckets_in_test() else "train" for g in groups
    }
    assert dict(splits.select("split_group", "split").unique().iter_rows()) == expected
    assert (
        splits.group_by("split_group").agg(pl.col("split").n_unique()).get_column("split").max()
        == 1
    )
    assert sum(v == "test" for v in expected.values()) == 47  # ~10% of 400 groups


def test_empty_group_falls_back_to_the_row_id():
    keys = pl.DataFrame({"row_nr": [0, 1], "id": ["abc", "abc"], "split_group": ["", None]})
    expected = "test" if split_bucket("abc") < buckets_in_test() else "train"
    assert split_assignments(keys)["split"].to_list() == [expected, expected]


def test_curated_rows_have_the_published_columns_split_and_audit_columns_sorted():
    rows = [row(f"r{i}", f"prompt {i}", group=f"g{i % 3}") for i in range(12)]
    result = curate(lazy("dpo", rows), "dpo")
    assert result.curated.columns == [
        *feed_schema("dpo").names()[:8],
        "split",
        "split_group",
        "content_hash",
        "partition",
    ]
    assert result.curated.equals(result.curated.sort("split", "id", "source_ref"))
    assert result.rows_in == 12
