import numpy as np
import polars as pl
import pytest

from distill_assets.lib import minhash
from distill_assets.lib.minhash import (
    band_keys,
    components,
    estimated_jaccard,
    near_components,
    near_duplicate_components,
    part_signatures,
    shingle_hashes,
    shingled,
    text_signatures,
    word_hashes,
)
from distill_assets.rules.curation import LSH_BANDS, LSH_ROWS, MINHASH_BINS, SHINGLE_WORDS
from tests.unit.curation.texts import changed, jaccard, words


def test_word_hashes_depend_on_the_word_only_and_case_is_ignored():
    offsets, hashes = word_hashes(pl.Series(["Alpha beta", None, "beta ALPHA gamma", ""]))
    assert offsets.tolist() == [0, 2, 2, 5, 5]
    assert hashes[0] == hashes[3] and hashes[1] == hashes[2]
    assert len(set(hashes.tolist())) == 3


@pytest.mark.parametrize("chunk_bytes", [5, 64, 1 << 23])
def test_ascii_fast_path_tokenizes_and_hashes_like_polars(monkeypatch, chunk_bytes):
    monkeypatch.setattr(minhash, "ASCII_CHUNK_BYTES", chunk_bytes)
    texts = pl.Series(
        [
            "Hello, World! foo_bar 42",
            None,
            "",
            "  \t\n",
            "Déjà vu — Ünïcode STRASSE straße hello",
            "x",
            "MiXeD-case__words;;and 3.14 numbers",
            "émoji 🙂 end",
            "tail_",
        ]
    )
    fast_offsets, fast = minhash.word_hashes(texts)
    offsets, hashes = minhash._polars_word_hashes(texts)
    assert fast_offsets.tolist() == offsets.tolist() == [0, 4, 4, 4, 4, 10, 11, 17, 19, 20]
    assert fast.tolist() == hashes.tolist()
    # "hello" hashes the same in an ASCII document (fast path) and a Unicode one (Polars)
    assert fast[9] == fast[0]
    assert len(set(fast.tolist())) == 19


def test_a_short_document_is_one_shingle_and_an_empty_one_has_none():
    offsets, hashes = word_hashes(pl.Series(["one two", "", "a b c d"]))
    doc, shingles = shingle_hashes(offsets, hashes, 3)
    assert doc.tolist() == [0, 2, 2]
    assert len(set(shingles.tolist())) == 3


def test_signatures_estimate_jaccard_and_are_fixed_whatever_the_batch():
    base = words("doc", 120)
    variant = changed(base, [10, 50, 90], "v")
    other = words("other", 120)
    texts = [" ".join(base), " ".join(variant), " ".join(other), ""]
    sig = text_signatures(pl.Series(texts), SHINGLE_WORDS, MINHASH_BINS)
    alone = text_signatures(pl.Series([texts[1]]), SHINGLE_WORDS, MINHASH_BINS)
    assert np.array_equal(sig[1], alone[0])
    estimate = estimated_jaccard(sig, np.array([0, 0]), np.array([1, 2]))
    assert abs(estimate[0] - jaccard(texts[0], texts[1])) < 0.1
    assert estimate[1] < 0.1
    assert (sig[3] == np.uint32(0xFFFFFFFF)).all()


def test_part_signatures_interleave_parts_and_the_estimate_is_the_least_similar_part():
    prompt, chosen, rejected = words("p", 120), words("c", 120), words("r", 120)
    docs = [
        (prompt, chosen, rejected),
        (prompt, chosen, words("other", 120)),  # same prompt and chosen, another rejected
        (changed(prompt, [60], "x"), chosen, rejected),
        (prompt, [], rejected),  # a part without text
    ]
    parts = [pl.Series([" ".join(doc[p]) for doc in docs]) for p in range(3)]
    sig = part_signatures(parts, SHINGLE_WORDS, MINHASH_BINS)
    assert sig.shape == (4, 3 * MINHASH_BINS)
    alone = text_signatures(parts[1], SHINGLE_WORDS, MINHASH_BINS)
    assert np.array_equal(sig[:, 1::3], alone)
    whole = estimated_jaccard(sig, np.array([0, 0]), np.array([1, 2]))
    by_part = estimated_jaccard(sig, np.array([0, 0]), np.array([1, 2]), parts=3)
    assert whole[0] > 0.6 and by_part[0] < 0.1
    assert by_part[1] == estimated_jaccard(sig[:, ::3], np.array([0]), np.array([2]))[0]
    assert by_part[1] > 0.9
    assert shingled(sig, 3).tolist() == [True, True, True, False]
    assert shingled(sig).tolist() == [True, True, True, True]


def test_components_label_each_node_with_the_smallest_connected_node():
    labels = components(7, np.array([5, 1, 3, 6]), np.array([3, 2, 1, 6]))
    assert labels.tolist() == [0, 1, 1, 1, 4, 1, 6]


def test_near_duplicates_cluster_and_distinct_texts_do_not():
    base = words("doc", 100)
    texts = [
        " ".join(base),
        " ".join(changed(base, [20, 70], "a")),
        " ".join(words("x", 50) + base[:50]),  # shares half: Jaccard < 0.5
        " ".join(words("other", 100)),
    ]
    assert jaccard(texts[0], texts[1]) >= 0.8
    assert jaccard(texts[0], texts[2]) <= 0.5
    sig = text_signatures(pl.Series(texts), SHINGLE_WORDS, MINHASH_BINS)
    labels = near_duplicate_components(sig, LSH_BANDS, LSH_ROWS, 0.75)
    assert labels.tolist() == [0, 0, 2, 3]
    # members by row index, with stored keys and fetched signatures, cluster like copied rows
    sig = np.vstack([sig, text_signatures(pl.Series([""]), SHINGLE_WORDS, MINHASH_BINS)])
    keys = band_keys(sig, LSH_BANDS, LSH_ROWS)
    members = np.array([4, 1, 3, 0])
    fetched = []

    def fetch(rows):
        fetched.append(rows.tolist())
        return sig[rows]

    labels = near_components(shingled(sig), keys, members, fetch, 0.75)
    assert labels.tolist() == [0, 1, 2, 1]
    assert np.array_equal(
        labels, near_duplicate_components(sig[members], LSH_BANDS, LSH_ROWS, 0.75)
    )
    assert fetched == [[0, 1]]  # only the rows of candidate links are read


def test_threads_sign_slices_to_the_same_signatures(monkeypatch):
    texts = pl.Series([" ".join(words(i, 40)) for i in range(101)] + ["", "é unicode ü"])
    one_pass = text_signatures(texts, SHINGLE_WORDS, MINHASH_BINS, workers=1)
    monkeypatch.setattr(minhash, "SLICE_DOCS", 10)
    threaded = text_signatures(texts, SHINGLE_WORDS, MINHASH_BINS, workers=3)
    assert threaded.shape == (103, MINHASH_BINS)
    assert np.array_equal(threaded, one_pass)


def _probed_one_bin_at_a_time(sig: np.ndarray, probes: int) -> np.ndarray:
    """Densification by its definition: each empty bin probes attempt after attempt."""
    bins = sig.shape[1]
    filled = sig.copy()
    for doc, row in enumerate(sig):
        occupied = np.flatnonzero(row != 0xFFFFFFFF)
        if len(occupied) == 0:
            continue
        for empty in np.flatnonzero(row == 0xFFFFFFFF):
            source = occupied[0]
            for attempt in range(probes):
                probe = int(minhash._probe(np.array([empty]), attempt, bins)[0])
                if row[probe] != 0xFFFFFFFF:
                    source = probe
                    break
            filled[doc, empty] = row[source]
    return filled


@pytest.mark.parametrize("probes", [minhash.MAX_PROBES, 3])
def test_densify_borrows_the_first_probed_non_empty_bin(monkeypatch, probes):
    # documents of every fill, from one non-empty bin (densified from its sequence's first hit)
    # to full; with 3 probes most empty bins fall back to the first non-empty bin
    monkeypatch.setattr(minhash, "MAX_PROBES", probes)
    rng = np.random.default_rng(7)
    bins, counts = 32, [0, 1, 2, 3, 5, 8, 12, 13, 20, 31, 32]
    sig = rng.integers(0, 0xFFFFFFFE, size=(len(counts) * 3, bins), dtype=np.uint64)
    sig = sig.astype(np.uint32)
    for doc in range(len(sig)):
        sig[doc, rng.permutation(bins)[counts[doc % len(counts)] :]] = 0xFFFFFFFF
    monkeypatch.setattr(minhash, "SPARSE_BINS", 12)
    monkeypatch.setattr(minhash, "SPARSE_DOCS", 2)
    expected = _probed_one_bin_at_a_time(sig, probes)
    assert (expected != 0xFFFFFFFF).sum(axis=1).tolist() == [
        0 if c == 0 else bins for c in counts
    ] * 3
    assert np.array_equal(minhash._densify(sig), expected)
    # the sparse path alone (every document) and the probing loop alone give the same
    monkeypatch.setattr(minhash, "SPARSE_BINS", bins)
    assert np.array_equal(minhash._densify(sig), expected)
    monkeypatch.setattr(minhash, "SPARSE_BINS", 0)
    assert np.array_equal(minhash._densify(sig), expected)


def test_estimates_in_small_chunks_are_the_same(monkeypatch):
    texts = [" ".join(words(f"w{i % 7}", 40 + i)) for i in range(30)]
    sig = part_signatures([pl.Series(texts)] * 3, SHINGLE_WORDS, MINHASH_BINS)
    a, b = np.repeat(np.arange(30), 30), np.tile(np.arange(30), 30)
    whole = estimated_jaccard(sig, a, b, parts=3)
    # two links' rows per chunk (3 * MINHASH_BINS uint32 each)
    monkeypatch.setattr(minhash, "VERIFY_BYTES", 2 * 3 * MINHASH_BINS * 4)
    assert minhash.verify_rows(sig) == 2
    assert np.array_equal(estimated_jaccard(sig, a, b, parts=3), whole)
    assert whole[0] == 1.0
    assert (whole < 1.0).any()
