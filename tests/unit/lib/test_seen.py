"""First-occurrence de-duplication across chunks (lib.seen)."""

from __future__ import annotations

import numpy as np
import polars as pl

from distill_assets.lib.seen import Dedup, Deduplicator, SeenKeys


def _add(seen: SeenKeys, h1: list[int], h2: list[int], line_no: list[int]) -> None:
    n = len(h1)
    seen.add(
        np.array(h1, np.uint64),
        np.array(h2, np.uint64),
        np.zeros(n, np.int32),
        np.array(line_no, np.int64),
        np.zeros(n, np.uint64),
    )


def test_runs_merge_like_a_log_structured_merge_tree() -> None:
    seen = SeenKeys()
    for start in range(0, 64, 8):
        keys = list(range(start, start + 8))
        _add(seen, keys, keys, keys)
    # 8 runs of 8 keys collapse to one run: each new run is as large as the one before it
    assert [len(run) for run in seen.runs] == [64]
    _add(seen, [100, 101], [100, 101], [100, 101])
    assert [len(run) for run in seen.runs] == [64, 2]
    queries = np.array([5, 100, 7, 999], np.uint64)
    match = seen.lookup(queries, queries)
    assert match.found.tolist() == [True, True, True, False]
    assert match.line_no.tolist() == [5, 100, 7, -1]


def test_keys_sharing_the_first_hash_are_told_apart_by_the_second() -> None:
    seen = SeenKeys()
    _add(seen, [7, 7, 7, 9], [1, 2, 3, 4], [10, 20, 30, 40])
    match = seen.lookup(np.array([7, 7, 7, 7, 9], np.uint64), np.array([3, 1, 2, 5, 4], np.uint64))
    assert match.found.tolist() == [True, True, True, False, True]
    assert match.line_no.tolist() == [30, 10, 20, -1, 40]


def _chunk(keys: list[str | None], lines: list[str], start: int, file: str) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "dedup_key": keys,
            "source_file": [file] * len(keys),
            "line_no": list(range(start, start + len(keys))),
            "line": lines,
        }
    )


def test_repeats_within_and_across_chunks_name_the_first_record() -> None:
    rule = Dedup("dup", "repeats {first}", conflict_detail="{key} conflicts with {first}")
    dedup = Deduplicator(rule)
    first = dedup.apply(_chunk(["a", "b", None, "a"], ["x", "y", "z", "x"], 1, "f1"))
    assert first.rows() == [(3, "repeats f1:1")]
    second = dedup.apply(_chunk(["b", "c", "c", None], ["other", "q", "q2", "z"], 1, "f2"))
    assert second.rows() == [(0, "b conflicts with f1:2"), (2, "c conflicts with f2:2")]
    third = dedup.apply(_chunk(["c", "a"], ["q", "x"], 9, "f2"))
    assert third.rows() == [(0, "repeats f2:2"), (1, "repeats f1:1")]


def test_many_chunks_find_every_repeat_exactly_once() -> None:
    dedup = Deduplicator(Dedup("dup", "{key}@{first}"))
    keys = [f"k{i % 5000}" for i in range(20_000)]
    found: list[str] = []
    for start in range(0, len(keys), 700):
        part = keys[start : start + 700]
        repeats = dedup.apply(_chunk(part, [""] * len(part), start + 1, "f"))
        found += repeats.get_column("detail").to_list()
    assert len(found) == 15_000
    assert found[0] == "k0@f:1"
    assert found[-1] == "k4999@f:5000"
    assert sum(len(run) for run in dedup.seen.runs) == 5000
