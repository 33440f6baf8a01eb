import numpy as np

from distill_assets.lib import minhash
from distill_assets.lib.cosine_lsh import (
    bound_parts,
    hyperplanes,
    lsh_keys,
    member_pairs,
    similar_pairs,
)


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def planted(n: int = 600, pairs: int = 50) -> tuple[np.ndarray, set[tuple[int, int]]]:
    """Fixed vectors (no RNG); the last `pairs` rows are slightly moved copies of the first."""
    base = unit(hyperplanes(64, n).T.astype(np.float64))
    noise = hyperplanes(64, pairs).T[::-1] * 0.002
    twins = unit(base[:pairs] + noise)
    vectors = np.vstack([base, twins, np.zeros((1, 64), dtype=np.float32)])
    return vectors, {(i, n + i) for i in range(pairs)}


def test_hyperplanes_are_fixed():
    assert np.array_equal(hyperplanes(8, 4), hyperplanes(8, 4))
    assert hyperplanes(8, 4).shape == (8, 4)


def test_exact_and_lsh_search_find_the_same_near_identical_pairs():
    vectors, expected = planted()
    for limit in (10_000, 10):  # exact, then LSH
        a, b = similar_pairs(vectors, 0.99, exact_limit=limit, bands=12, bits=16)
        found = {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)}
        assert found == expected, limit


def test_members_are_searched_by_row_index_like_copied_rows():
    vectors, expected = planted()
    # every twin and its original, the zero row, and a few others, in reverse order
    members = np.array(sorted({i for pair in expected for i in pair} | {650, 3, 70}, reverse=True))
    by_member = {members[i]: i for i in range(len(members))}
    want = {tuple(sorted((by_member[x], by_member[y]))) for x, y in expected}
    head, tail = bound_parts(vectors)
    keys = lsh_keys(vectors, 12, 16)
    for limit in (10_000, 10):  # exact, then LSH
        fetched = []

        def fetch(rows, fetched=fetched):
            fetched.extend(rows.tolist())
            return vectors[rows]

        a, b = member_pairs(
            0.99,
            exact_limit=limit,
            members=members,
            keys=keys,
            head=head,
            tail=tail,
            fetch=fetch,
        )
        found = {(min(x, y), max(x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)}
        assert found == want, limit
        copied = similar_pairs(vectors[members], 0.99, exact_limit=limit, bands=12, bits=16)
        assert np.array_equal(np.sort(copied[0]), np.sort(a)), limit
        # LSH reads the full vectors of the rows whose bound may pass only: the twins
        if limit == 10:
            assert sorted(fetched) == sorted(i for pair in expected for i in pair)


def test_verification_in_small_chunks_finds_exactly_the_same_pairs(monkeypatch):
    # one 64-float row per chunk side (256 bytes): every candidate link is its own chunk
    vectors, _ = planted()
    keys, (head, tail) = lsh_keys(vectors, 12, 8), bound_parts(vectors)
    fetched: list[int] = []

    def search() -> tuple[np.ndarray, np.ndarray]:
        return member_pairs(
            0.99,
            exact_limit=0,
            members=np.arange(len(vectors)),
            keys=keys,
            head=head,
            tail=tail,
            fetch=lambda rows: fetched.append(len(rows)) or vectors[rows],
        )

    a, b = search()
    monkeypatch.setattr(minhash, "VERIFY_BYTES", 256)
    small_a, small_b = search()
    assert len(a) == 50
    assert np.array_equal(a, small_a)
    assert np.array_equal(b, small_b)
    # the full vectors are still fetched once per search
    assert len(fetched) == 2
    assert fetched[0] == fetched[1]


def test_a_verification_chunk_holds_at_most_verify_bytes_of_each_side():
    wide = np.zeros((3, 768), dtype=np.float32)
    assert minhash.verify_rows(wide) == minhash.VERIFY_BYTES // (768 * 4)
    assert minhash.verify_rows(np.zeros((3, 4), dtype=np.float32)) == minhash.VERIFY_CHUNK
    assert minhash.verify_rows(np.zeros((3, 1 << 24), dtype=np.float32)) == 1
