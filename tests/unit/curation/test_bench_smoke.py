"""Smoke tests of the curation benchmarks' own code at tiny sizes (no timing asserted)."""

from __future__ import annotations

from itertools import combinations

from bench import near_dup, nightly_cost


def test_near_dup_bench_plants_clusters_and_distill_finds_exactly_them():
    texts, groups = near_dup.generate(2_000)
    planted = {pair for group in groups for pair in combinations(sorted(group), 2)}
    similarity = near_dup.exact_jaccard(texts, planted)
    true = {pair for pair, j in similarity.items() if j >= near_dup.JACCARD}
    assert len(true) > 100
    assert all(j <= 0.5 for pair, j in similarity.items() if pair not in true)
    assert near_dup.run_distill(texts) == true


def test_nightly_cost_bench_days_are_feed_rows_with_planted_near_duplicates():
    first, second = nightly_cost.day_frame(0, 40), nightly_cost.day_frame(1, 40)
    assert first.height == second.height == 40
    assert (first["id"][0], second["id"][0]) == ("d0-r0", "d1-r0")
    user = [m[0]["content"].split() for m in (first["messages"][0], second["messages"][0])]
    assert sum(a != b for a, b in zip(*user, strict=True)) == 1  # planted: one word changed
