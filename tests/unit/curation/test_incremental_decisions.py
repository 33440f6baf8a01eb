"""Decisions from the link state (`links.decide_links`) equal `decide` over every row, night after
night: planted exact, near and semantic duplicates across days, a new row outranking an old
representative, a new row bridging two old components, an exclusion removing a representative, a
rewritten old partition and a rules change; and a night reads only the rows its change touched."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import polars as pl
import pytest

from distill_assets.defs.curation import decide as decide_module
from distill_assets.defs.curation.decide import (
    ArraySource,
    RowVectors,
    decide,
    near_keys,
    semantic_keys,
)
from distill_assets.defs.curation.links import LinkState, candidate_components, decide_links
from distill_assets.lib.cosine_lsh import bound_parts
from distill_assets.lib.minhash import shingled, splitmix64, text_signatures
from distill_assets.rules.curation import MINHASH_BINS, SHINGLE_WORDS
from tests.unit.curation.texts import changed, words

DIM = 64


def direction(seed: int) -> np.ndarray:
    """Return a fixed pseudo-random unit vector (splitmix64 of the seed; no randomness)."""
    bits = splitmix64(np.arange(DIM, dtype=np.uint64) + np.uint64(seed * DIM + 7))
    vector = (bits >> np.uint64(11)).astype(np.float64) / float(1 << 53) - 0.5
    return vector / np.linalg.norm(vector)


def embedding(topic: int, wobble: int) -> np.ndarray:
    """Return a unit vector near topic `topic` (cosine > 0.99 to every other wobble of it)."""
    vector = direction(topic) + (0.03 * direction(10_000 + wobble) if wobble else 0.0)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


@dataclass(frozen=True)
class Row:
    """One product row: its text (near dedup), topic (semantic dedup) and ranking keys."""

    id: str
    text: list[str]
    topic: int
    wobble: int = 0
    score: float = 0.5
    trust: float | None = None
    event_time: float = 0.0
    content: str = ""
    gate_failed: bool = False
    contaminated_by: str | None = None
    extra: dict[str, object] = field(default_factory=dict)


def frame(
    days: dict[str, list[Row]], excluded: frozenset[str] = frozenset()
) -> tuple[pl.DataFrame, RowVectors]:
    """Return the keys and vectors of every row of `days` but the `excluded` ids, in day order."""
    rows = [
        (day, n, r)
        for day, day_rows in sorted(days.items())
        for n, r in enumerate(day_rows)
        if r.id not in excluded
    ]
    keys = pl.DataFrame(
        {
            "id": [r.id for _, _, r in rows],
            "source_ref": [f"traces/{r.id}" for _, _, r in rows],
            "trust": [r.trust for _, _, r in rows],
            "quality_score": [r.score for _, _, r in rows],
            "event_time": [r.event_time for _, _, r in rows],
            "partition": [day for day, _, _ in rows],
            "product_row": [n for _, n, _ in rows],
            "content_hash": [r.content or r.id for _, _, r in rows],
            "gate_failed": [r.gate_failed for _, _, r in rows],
            "contaminated_by": [r.contaminated_by for _, _, r in rows],
        },
        schema_overrides={"trust": pl.Float64, "contaminated_by": pl.String},
    )
    texts = pl.Series([" ".join(r.text) for _, _, r in rows], dtype=pl.String)
    signature = text_signatures(texts, SHINGLE_WORDS, MINHASH_BINS)
    vectors = np.stack([embedding(r.topic, r.wobble) for _, _, r in rows])
    head, tail = bound_parts(vectors)
    source = ArraySource({"signature": signature, "embedding": vectors})
    return keys, RowVectors(
        near_keys(signature),
        shingled(signature),
        semantic_keys(vectors),
        head,
        tail,
        source,
        np.arange(len(rows)),
    )


A, B, C = words("alpha", 60), words("beta", 60), words("gamma", 60)


def filler(day: str, count: int) -> list[Row]:
    """Rows sharing nothing with any other row."""
    return [
        Row(f"f-{day}-{i}", words(f"f{day}{i}", 40), 500 + 10 * int(day) + i) for i in range(count)
    ]


Night = tuple[str, dict[str, list[Row]], frozenset[str], set[str]]


def nights() -> list[Night]:
    """Return each night's rows of every day, the ids excluded and the days that changed."""
    none: frozenset[str] = frozenset()
    days: dict[str, list[Row]] = {
        "1": [
            Row("a1", A, 1, score=0.6),
            Row("b1", B, 2, score=0.5),
            Row("x1", words("x", 40), 3, content="x"),
            Row("x2", words("x", 40), 3, content="x", score=0.1),
            Row("c1", C, 4, score=0.4),
        ]
    }
    out = [("first night, exact semantic search", dict(days), none, {"1"})]
    # near duplicate of a1 ranking higher (a1 flips to near_duplicate), a semantic duplicate of b1
    # with other words, an exact duplicate of x1 from a trusted contributor (x1 flips), fillers
    # that take semantic search over the exact limit
    days["2"] = [
        Row("a2", changed(A, [5], "a2"), 9, score=0.9),
        Row("b2", words("beta-other", 60), 2, wobble=1, score=0.3),
        Row("x3", words("x", 40), 3, content="x", trust=0.8),
        *filler("2", 6),
    ]
    out.append(("the night semantic search turns to LSH", dict(days), none, {"2"}))
    # a bridge: near duplicate of a2 and semantic duplicate of c1, outranking both
    days["3"] = [
        Row("bridge", changed(A, [40], "bridge"), 4, wobble=2, score=0.95),
        *filler("3", 3),
    ]
    out.append(("a new row bridges two old components", dict(days), none, {"3"}))
    # a row sharing nothing: only it is decided
    days["4"] = [Row("alone", words("alone", 50), 900, gate_failed=True)]
    out.append(("an unrelated row", dict(days), none, {"4"}))
    # the bridge is excluded: its components split again, a2 and c1 lead again
    out.append(("an exclusion removes a representative", dict(days), frozenset({"bridge"}), set()))
    # day 1 is rewritten: a1 changes its words, x2 leaves (rows after it move up), a row arrives
    days["1"] = [
        Row("a1", words("alpha-new", 60), 1, score=0.6),
        Row("b1", B, 2, score=0.5),
        Row("x1", words("x", 40), 3, content="x"),
        Row("c1", C, 4, score=0.4, contaminated_by="evals/q.jsonl"),
        Row("b3", changed(B, [7], "b3"), 2, wobble=3, score=0.99),
    ]
    out.append(("an old partition is rewritten", dict(days), frozenset({"bridge"}), {"1"}))
    days["5"] = [Row("a3", changed(A, [20], "a3"), 1, wobble=4, score=0.2), *filler("5", 2)]
    out.append(("a night after the rewrite", dict(days), frozenset({"bridge"}), {"5"}))
    return out


def fates(keys: pl.DataFrame, vectors: RowVectors) -> pl.DataFrame:
    return decide(keys, vectors, semantic=True).fates


@pytest.fixture
def small_exact_limit(monkeypatch):
    """Semantic search turns to LSH above 8 near survivors (10,000 in the rules)."""
    monkeypatch.setattr(decide_module, "SEMANTIC_EXACT_LIMIT", 8)


def run_nights(
    *, rules_change_at: int | None = None, semantic: bool = True
) -> list[tuple[str, object]]:
    """Decide every night from the previous night's state; check each against `decide`."""
    state, seen = None, []
    for index, (name, days, excluded, changed_days) in enumerate(nights()):
        keys, vectors = frame(days, excluded)
        previous = None if index == rules_change_at else state
        linked = decide_links(
            keys, vectors, 1, semantic=semantic, previous=previous, changed=changed_days
        )
        expected = decide(keys, vectors, semantic=semantic)
        assert linked.decisions.fates.equals(expected.fates), name
        assert linked.decisions.semantic_exact == expected.semantic_exact, name
        stored = linked.links.drop("component").sort("partition", "product_row")
        assert stored.equals(expected.fates.sort("partition", "product_row")), name
        fingerprints = {day: f"{day}:{len(rows)}:{index}" for day, rows in days.items()}
        state = LinkState(linked.links, fingerprints, not linked.decisions.semantic_exact)
        seen.append((name, linked))
    return seen


def test_every_night_decides_exactly_what_deciding_everything_decides(small_exact_limit):
    seen = dict(run_nights())
    assert [(n, r.full, r.rows_decided, r.components_touched) for n, r in seen.items()] == [
        ("first night, exact semantic search", True, 5, 0),
        ("the night semantic search turns to LSH", True, 14, 0),
        # the bridge, three fillers; a1, a2 (near) and c1 (semantic): two old components
        ("a new row bridges two old components", False, 7, 2),
        ("an unrelated row", False, 1, 0),
        # the bridge's component without it: a1, a2, c1
        ("an exclusion removes a representative", False, 3, 1),
        # day 1's five new rows; the components of its five old rows: a2, b2, x3 beside them
        ("an old partition is rewritten", False, 8, 4),
        # a3 and two fillers; a2 (near) and the new a1 (semantic)
        ("a night after the rewrite", False, 5, 2),
    ]


def test_without_semantic_dedup_every_night_is_exact_and_decides_fewer_rows():
    """As `rlds` runs (the config that keeps the link state): no exact-search limit applies."""
    seen = run_nights(semantic=False)
    assert [(linked.full, linked.rows_decided) for _, linked in seen] == [
        (True, 5),
        # nine new rows; a1 (near a2), x1 and x2 (exact x3): no exact-search night in between
        (False, 12),
        # the bridge, three fillers; a1 and a2 (near): c1 is linked by semantic dedup alone
        (False, 6),
        (False, 1),
        (False, 2),
        # day 1's five new rows; a2 and x3, whose components lost a row
        (False, 7),
        (False, 4),
    ]


def test_a_night_that_only_removes_rows_down_to_the_exact_limit_decides_everything(monkeypatch):
    """Nothing is left to decide again, but the run's near survivors are back at the limit, where
    semantic search is exact over all pairs: the full path runs."""
    monkeypatch.setattr(decide_module, "SEMANTIC_EXACT_LIMIT", 9)
    days = {"1": filler("1", 10)}
    keys, vectors = frame(days)
    first = decide_links(keys, vectors, 1, semantic=True, previous=None, changed={"1"})
    assert not first.decisions.semantic_exact
    state = LinkState(first.links, {"1": "f"}, True)
    keys, vectors = frame(days, frozenset({"f-1-0"}))
    linked = decide_links(keys, vectors, 1, semantic=True, previous=state, changed=set())
    assert (linked.full, linked.rows_decided, linked.decisions.semantic_exact) == (True, 9, True)


def test_the_planted_fates_flip_as_intended(small_exact_limit):
    seen = dict(run_nights())

    def fate(name: str) -> dict[str, tuple[str | None, str | None]]:
        links = seen[name].links
        _, days, excluded, _ = next(night for night in nights() if night[0] == name)
        keys, _ = frame(days, excluded)
        joined = links.join(
            keys.select("partition", "product_row", "id"), on=["partition", "product_row"]
        )
        return {i: (r, k) for i, r, k in joined.select("id", "reason", "kept_id").iter_rows()}

    first = fate("first night, exact semantic search")
    assert first["x2"] == ("exact_duplicate", "x1")
    assert first["a1"] == (None, None)
    lsh = fate("the night semantic search turns to LSH")
    assert lsh["a1"] == ("near_duplicate", "a2")
    assert lsh["b2"] == ("semantic_duplicate", "b1")
    assert (lsh["x1"], lsh["x2"]) == (("exact_duplicate", "x3"), ("exact_duplicate", "x3"))
    bridged = fate("a new row bridges two old components")
    assert bridged["a2"] == ("near_duplicate", "bridge")
    assert bridged["a1"] == ("near_duplicate", "bridge")
    assert bridged["c1"] == ("semantic_duplicate", "bridge")
    excluded = fate("an exclusion removes a representative")
    assert (excluded["a2"], excluded["c1"], excluded["a1"]) == (
        (None, None),
        (None, None),
        ("near_duplicate", "a2"),
    )
    rewritten = fate("an old partition is rewritten")
    assert rewritten["a1"] == (None, None)
    assert rewritten["b1"] == ("near_duplicate", "b3")
    assert rewritten["b2"] == ("semantic_duplicate", "b3")
    assert rewritten["c1"] == ("contaminated", None)


def test_a_rules_change_or_a_lost_state_decides_everything_again(small_exact_limit):
    seen = run_nights(rules_change_at=3)
    assert [linked.full for _, linked in seen] == [True, True, False, True, False, False, False]


def test_exact_semantic_search_links_rows_sharing_no_key(monkeypatch):
    """Why the full path runs up to `SEMANTIC_EXACT_LIMIT` near survivors: there, two rows at
    cosine > 0.99 that share no LSH bucket are still duplicates, so their candidate components
    are not independent; above the limit (LSH) they are two published rows."""
    base = embedding(7, 0).astype(np.float64)
    tilts = np.stack([direction(20_000 + i) for i in range(20_000)])
    tilts -= np.outer(tilts @ base, base)
    tilts /= np.linalg.norm(tilts, axis=1, keepdims=True)
    cosine = 0.9905
    candidates = (cosine * base + np.sqrt(1 - cosine**2) * tilts).astype(np.float32)
    apart = (semantic_keys(candidates) != semantic_keys(base[None, :].astype(np.float32))).all(1)
    other = candidates[np.flatnonzero(apart)[0]]
    keys, vectors = frame({"1": [Row("p", words("p", 40), 7), Row("q", words("q", 40), 7)]})
    vectors = with_embeddings(vectors, np.stack([base.astype(np.float32), other]))
    assert candidate_components(keys, vectors, semantic=True).tolist() == [0, 1]
    assert decide(keys, vectors).fates.get_column("reason").to_list() == [
        None,
        "semantic_duplicate",
    ]
    monkeypatch.setattr(decide_module, "SEMANTIC_EXACT_LIMIT", 1)
    assert decide(keys, vectors).fates.get_column("reason").to_list() == [None, None]


def with_embeddings(vectors: RowVectors, embeddings: np.ndarray) -> RowVectors:
    """Return `vectors` with other embeddings (and their keys and bound parts)."""
    head, tail = bound_parts(embeddings)
    return replace(
        vectors,
        semantic_keys=semantic_keys(embeddings),
        embedding_head=head,
        embedding_tail=tail,
        source=ArraySource({**vectors.source.columns, "embedding": embeddings}),
    )


def test_a_bucket_head_blocks_links_so_buckets_not_similar_pairs_must_stay_together(monkeypatch):
    """Finding: only whole LSH buckets decompose. In one semantic bucket, the head h (ranked
    first) is not similar to x or z, which are similar to each other: `decide` links members to
    their bucket's head only, so x and z both stay. Decided without h (as a graph of similar
    pairs alone would put them), x heads the bucket and z goes."""
    base = embedding(3, 0).astype(np.float64)
    tilt = direction(30_000) - direction(30_000).dot(base) * base
    tilt /= np.linalg.norm(tilt)
    x = base.astype(np.float32)
    z = (0.999 * base + np.sqrt(1 - 0.999**2) * tilt).astype(np.float32)
    h = (0.9 * base + np.sqrt(1 - 0.9**2) * tilt).astype(np.float32)
    rows = [Row("h", words("h", 40), 0, score=0.9), Row("x", words("x", 40), 0, score=0.5)]
    keys, vectors = frame({"1": [*rows, Row("z", words("z", 40), 0, score=0.1)]})
    # one band holding all three in one bucket (16 sign bits put two rows at cosine 0.9 in one
    # bucket with probability ~0.08, so at scale such buckets exist)
    vectors = replace(
        with_embeddings(vectors, np.stack([h, x, z])), semantic_keys=np.full((3, 1), 5, np.uint64)
    )
    monkeypatch.setattr(decide_module, "SEMANTIC_EXACT_LIMIT", 0)
    assert decide(keys, vectors).fates.get_column("reason").to_list() == [None, None, None]
    alone = decide(keys[1:], vectors.take(np.array([1, 2])))
    assert alone.fates.get_column("reason").to_list() == [None, "semantic_duplicate"]


def test_semantic_lsh_keys_join_most_rows_of_a_large_history_in_one_component():
    """Finding: random-direction embeddings (cosine ~0) share one of 12 16-bit semantic bands
    with probability ~12 / 2^16 per pair, so above ~5,500 rows the candidate graph has a giant
    component; the decomposition is valid only above `SEMANTIC_EXACT_LIMIT` (10,000) rows."""
    count = 12_000
    bits = splitmix64(np.arange(count * DIM, dtype=np.uint64) + np.uint64(99))
    vectors = ((bits >> np.uint64(11)).astype(np.float64) / float(1 << 53) - 0.5).reshape(
        count, DIM
    )
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    head, tail = bound_parts(vectors)
    rows = RowVectors(
        np.zeros((count, 1), np.uint64),
        np.zeros(count, bool),
        semantic_keys(vectors),
        head,
        tail,
        ArraySource({}),
        np.arange(count),
    )
    keys = pl.DataFrame({"content_hash": [str(i) for i in range(count)]})
    labels = candidate_components(keys, rows, semantic=True)
    assert np.bincount(labels).max() > count // 2
    assert np.bincount(candidate_components(keys, rows, semantic=False)).max() == 1
