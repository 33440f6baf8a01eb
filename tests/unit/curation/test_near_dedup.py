import itertools

import polars as pl

from distill_assets.defs.curation.pipeline import curate
from tests.unit.curation.feeds import feed_frame, feed_row
from tests.unit.curation.texts import changed, jaccard, words

DAY1, DAY2, DAY3 = "2026-11-19", "2026-11-20", "2026-11-21"


def lazy(rows: list[dict[str, object]], partition: str) -> pl.LazyFrame:
    frame = feed_frame("instruction", rows).lazy()
    return frame.with_columns(pl.lit(partition).alias("partition"))


def row(row_id: str, text: list[str], **kw: object) -> dict[str, object]:
    kw.setdefault("group", f"s-{row_id}")
    return feed_row("instruction", row_id, " ".join(text), source="escalations", **kw)


def near_text(r: dict[str, object]) -> str:
    return "\n".join(str(r[c]) for c in ("instruction", "input", "output"))


def planted() -> dict[str, list[dict[str, object]]]:
    """Three clusters of near duplicates spread over partitions, and distinct rows."""
    a, b, c = words("a", 90), words("b", 90), words("c", 90)
    return {
        DAY1: [
            row("a1", a, score=0.5, event_time=1.0),
            row("b1", b, score=0.9, event_time=5.0),
            row("d1", words("d", 90)),
            row("half", words("h", 45) + a[:45]),  # shares half of a: Jaccard <= 0.5
        ],
        DAY2: [
            row("a2", changed(a, [10], "a2"), score=0.8, event_time=2.0),
            row("b2", changed(b, [30], "b2"), score=0.9, event_time=4.0),
            row("c1", c, score=0.3),
        ],
        DAY3: [
            row("c2", changed(c, [5, 80], "c2"), score=0.3),
            row("a3", changed(a, [60], "a3"), score=0.8, event_time=2.0),
            row("d2", words("d", 60) + words("e", 30)),  # shares 2/3 of d1: Jaccard < 0.6
        ],
    }


def test_planted_rows_have_the_intended_similarity():
    rows = {r["id"]: near_text(r) for day in planted().values() for r in day}
    for kept, dup in [("a2", "a1"), ("a2", "a3"), ("b2", "b1"), ("c1", "c2")]:
        assert jaccard(rows[kept], rows[dup]) >= 0.8
    for x, y in [("half", "a1"), ("d1", "d2")]:
        assert jaccard(rows[x], rows[y]) <= 0.6


def test_near_duplicates_across_partitions_collapse_to_the_representative():
    days = planted()
    result = curate(pl.concat([lazy(days[d], d) for d in days]), "instruction")
    assert sorted(result.curated["id"].to_list()) == ["a2", "b2", "c1", "d1", "d2", "half"]
    removed = result.duplicates.select("id", "reason", "kept_id", "partition").rows()
    assert removed == [
        # a2 and a3 tie on score and time: the smaller id wins
        ("a1", "near_duplicate", "a2", DAY1),
        ("a3", "near_duplicate", "a2", DAY3),
        # b1 and b2 tie on score: b2 is earlier
        ("b1", "near_duplicate", "b2", DAY1),
        ("c2", "near_duplicate", "c1", DAY3),
    ]
    assert result.removed["near_duplicate"] == 4
    assert result.funnel == {
        "rows_in": 10,
        "scrubbed": 10,
        "exact_duplicate": 10,
        "near_duplicate": 6,
        "semantic_duplicate": 6,
        "contaminated": 6,
        "below_threshold": 6,
        "published": 6,
    }


def test_clusters_are_the_same_whatever_order_partitions_come_in():
    days = planted()
    results = [
        curate(pl.concat([lazy(days[d], d) for d in order]), "instruction")
        for order in itertools.permutations(days)
    ]
    for other in results[1:]:
        assert other.curated.equals(results[0].curated)
        assert other.duplicates.equals(results[0].duplicates)


def test_exact_duplicates_of_a_near_duplicate_point_at_the_final_representative():
    a = words("a", 90)
    rows = [
        row("x1", a, score=0.4),
        row("x2", [w.upper() for w in a], score=0.3),  # exact duplicate of x1
        row("y", changed(a, [45], "y"), score=0.9),
    ]
    result = curate(lazy(rows, DAY1), "instruction")
    assert result.curated["id"].to_list() == ["y"]
    assert result.duplicates.select("id", "reason", "kept_id").rows() == [
        ("x2", "exact_duplicate", "y"),
        ("x1", "near_duplicate", "y"),
    ]
