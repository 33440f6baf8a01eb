import hashlib
import json

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.curation.dedup import content_key
from distill_assets.defs.curation.pipeline import curate
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
    assert result.removed == {
        "exact_duplicate": 4,
        "near_duplicate": 0,
        "semantic_duplicate": 0,
        "contaminated": 0,
        "below_threshold": 0,
    }
    kept = result.curated.filter(pl.col("id") == "c")
    # the representative keeps its own text (published as a one-message conversation)
    assert kept["prompt"].to_list() == [[{"role": "user", "content": " SAME\tprompt "}]]


def test_duplicates_are_found_across_partitions_and_sources_regardless_of_order():
    first = [row("a", "hello world", score=0.4, source="revisions")]
    second = [row("b", "Hello World", score=0.8, source="escalations"), row("c", "unique")]
    forward = curate(pl.concat([lazy("dpo", first), lazy("dpo", second, "2026-11-20")]), "dpo")
    backward = curate(pl.concat([lazy("dpo", second, "2026-11-20"), lazy("dpo", first)]), "dpo")
    assert forward.curated.equals(backward.curated)
    assert forward.duplicates.equals(backward.duplicates)
    assert forward.duplicates.rows() == [
        (
            "a",
            "revisions",
            "revisions/a",
            "2026-11-19",
            forward.duplicates["content_hash"][0],
            "exact_duplicate",
            "b",
            None,
        )
    ]


def test_content_hash_is_sha256_of_the_documented_normalized_json():
    rows = [row("a", "  Hello\n\tWORLD  ")]
    result = curate(lazy("dpo", rows), "dpo")
    # the published (conversational) columns are hashed: dpo rows are messages lists
    normalized = {
        "prompt": [{"role": "user", "content": "hello world"}],
        "chosen": [{"role": "assistant", "content": "good hello world"}],
        "rejected": [{"role": "assistant", "content": "bad hello world"}],
    }
    text = json.dumps(normalized, separators=(",", ":"))
    assert result.curated["content_hash"][0] == hashlib.sha256(text.encode()).hexdigest()[:16]
    key = feed_frame("dpo", rows).select(
        content_key({"prompt": pl.String(), "chosen": pl.String(), "rejected": pl.String()})
    )
    assert key.item() == json.dumps(
        {"prompt": "hello world", "chosen": "good hello world", "rejected": "bad hello world"},
        separators=(",", ":"),
    )


def test_messages_that_differ_only_in_case_and_whitespace_are_duplicates():
    rows = [
        feed_row("sft", "x", "Fix the BUG", source="traces", group="t1", score=0.2),
        feed_row("sft", "y", "fix  the bug", source="telemetry", group="t2", score=0.3),
    ]
    result = curate(lazy("sft", rows), "sft")
    assert result.curated["id"].to_list() == ["y"]
    assert result.duplicates.select("id", "kept_id").rows() == [("x", "y")]


def test_curated_rows_have_the_published_columns_split_and_audit_columns_sorted():
    rows = [row(f"r{i}", f"prompt {i}", group=f"g{i % 3}") for i in range(12)]
    result = curate(lazy("dpo", rows), "dpo")
    assert result.curated.columns == [
        *feed_schema("dpo").names()[:8],
        "split",
        "split_group",
        "content_hash",
        "partition",
        "split_by",
    ]
    assert result.curated.equals(result.curated.sort("split", "id", "source_ref"))
    assert result.rows_in == 12
