"""Near-duplicate detection benchmark: distill's MinHash LSH against datasketch and rensa.

Generates documents of ~1 KB (160 words drawn from a 50k-word vocabulary with a Zipf-like skew)
with planted clusters: 8% of the documents are bases with 1-3 variants each (1 or 2 words
replaced, so every pair in a cluster has word-3-shingle Jaccard >= 0.8) and 2% are "hard
negatives" that keep half of a base's words (Jaccard <= 0.5). The generator uses a seeded NumPy
generator (bench data only; the pipeline itself never draws random numbers).

Every method reads the same texts and is timed from text to duplicate pairs, tokenizing included:

- `distill`: `lib.minhash.text_signatures` + `near_duplicate_components` with the parameters of
  `rules/curation.py` (one-permutation MinHash, 128 bins, 32 bands x 4 rows, candidates verified
  at an estimated Jaccard >= 0.75); predicted pairs are the pairs inside each cluster;
- `datasketch`: `MinHash(num_perm=128)` per document updated with its shingles, `MinHashLSH()`
  with its defaults (threshold 0.9, 128 permutations), every document inserted then queried;
- `rensa`: `RMinHash(num_perm=128, seed=42)` per document, `RMinHashLSH(threshold=0.8,
  num_perm=128, num_bands=16)`, insert then query.

Wall seconds give docs/s; CPU seconds (all threads of the process) are shown beside them because
the machine is shared. Recall and precision are over pairs with exact Jaccard >= 0.8: the true
pairs are found among all pairs of each planted group plus every pair any method predicted
(unrelated random documents share almost no 3-word shingle, so no true pair lies elsewhere); each
pair's exact Jaccard is computed with Python sets. Runs on whatever cores the machine has (2 in
the figures recorded).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from itertools import combinations

import numpy as np
import polars as pl

WORDS_PER_DOC = 160
VOCABULARY = 50_000
CLUSTER_SHARE = 0.08
NEGATIVE_SHARE = 0.02
JACCARD = 0.8
FULL_DOCS = 200_000
QUICK_DOCS = 5_000
SEED = 13
TOKEN = re.compile(r"\w+")


def generate(docs: int) -> tuple[list[str], list[list[int]]]:
    """Return `docs` texts and the planted groups (lists of document indices)."""
    rng = np.random.default_rng(SEED)
    weights = 1.0 / (np.arange(VOCABULARY) + 20.0)
    weights /= weights.sum()
    vocabulary = np.array([f"w{i:x}" for i in range(VOCABULARY)])
    matrix = rng.choice(VOCABULARY, size=(docs, WORDS_PER_DOC), p=weights)
    groups: list[list[int]] = []
    position = docs - 1
    for base in range(int(docs * CLUSTER_SHARE)):
        group = [base]
        for _ in range(int(rng.integers(1, 4))):
            if position <= base:
                break
            matrix[position] = matrix[base]
            changed = rng.choice(WORDS_PER_DOC, size=int(rng.integers(1, 3)), replace=False)
            matrix[position, changed] = rng.integers(0, VOCABULARY, size=len(changed))
            group.append(position)
            position -= 1
        groups.append(group)
    for base in range(int(docs * CLUSTER_SHARE), int(docs * (CLUSTER_SHARE + NEGATIVE_SHARE))):
        if position <= base:
            break
        matrix[position] = matrix[base]
        half = rng.choice(WORDS_PER_DOC, size=WORDS_PER_DOC // 2, replace=False)
        matrix[position, half] = rng.integers(0, VOCABULARY, size=len(half))
        groups.append([base, position])
        position -= 1
    texts = [" ".join(row) for row in vocabulary[matrix]]
    return texts, groups


def shingles(text: str) -> set[str]:
    """Return the 3-word shingles of a text (the curation rules' tokens)."""
    tokens = TOKEN.findall(text.lower())
    return {" ".join(tokens[i : i + 3]) for i in range(len(tokens) - 2)}


def run_distill(texts: list[str]) -> set[tuple[int, int]]:
    """Return the pairs distill clusters together."""
    from distill_assets.lib.minhash import near_duplicate_components, text_signatures
    from distill_assets.rules.curation import (
        LSH_BANDS,
        LSH_ROWS,
        MINHASH_BINS,
        NEAR_DUPLICATE_MIN_ESTIMATE,
        SHINGLE_WORDS,
    )

    signatures = text_signatures(pl.Series(texts), SHINGLE_WORDS, MINHASH_BINS)
    labels = near_duplicate_components(signatures, LSH_BANDS, LSH_ROWS, NEAR_DUPLICATE_MIN_ESTIMATE)
    members: dict[int, list[int]] = defaultdict(list)
    for doc in np.flatnonzero(labels != np.arange(len(labels))):
        members[int(labels[doc])].append(int(doc))
    return {
        pair for head, docs in members.items() for pair in combinations(sorted([head, *docs]), 2)
    }


def run_datasketch(texts: list[str]) -> set[tuple[int, int]]:
    """Return the pairs datasketch's MinHashLSH (defaults) reports."""
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(num_perm=128)
    hashes = []
    for index, text in enumerate(texts):
        minhash = MinHash(num_perm=128)
        minhash.update_batch([s.encode() for s in shingles(text)])
        lsh.insert(index, minhash)
        hashes.append(minhash)
    return {
        (min(i, j), max(i, j))
        for i, minhash in enumerate(hashes)
        for j in lsh.query(minhash)
        if i != j
    }


def run_rensa(texts: list[str]) -> set[tuple[int, int]]:
    """Return the pairs rensa's RMinHashLSH (16 bands x 8 rows, threshold 0.8) reports."""
    from rensa import RMinHash, RMinHashLSH

    lsh = RMinHashLSH(threshold=JACCARD, num_perm=128, num_bands=16)
    hashes = []
    for index, text in enumerate(texts):
        minhash = RMinHash(num_perm=128, seed=42)
        minhash.update(list(shingles(text)))
        lsh.insert(index, minhash)
        hashes.append(minhash)
    return {
        (min(i, j), max(i, j))
        for i, minhash in enumerate(hashes)
        for j in lsh.query(minhash)
        if i != j
    }


def exact_jaccard(texts: list[str], pairs: set[tuple[int, int]]) -> dict[tuple[int, int], float]:
    """Return the exact shingle Jaccard of each pair."""
    cache: dict[int, set[str]] = {}

    def of(i: int) -> set[str]:
        if i not in cache:
            cache[i] = shingles(texts[i])
        return cache[i]

    return {(a, b): len(of(a) & of(b)) / len(of(a) | of(b)) for a, b in pairs}


def run(quick: bool = False, docs: int | None = None) -> str:
    """Run the benchmark and return its Markdown section."""
    count = docs or (QUICK_DOCS if quick else FULL_DOCS)
    texts, groups = generate(count)
    methods = {"distill": run_distill, "datasketch": run_datasketch, "rensa": run_rensa}
    predicted, seconds, cpu = {}, {}, {}
    for name, method in methods.items():
        start, start_cpu = time.perf_counter(), time.process_time()
        predicted[name] = method(texts)
        seconds[name] = time.perf_counter() - start
        cpu[name] = time.process_time() - start_cpu
    universe = {pair for group in groups for pair in combinations(sorted(group), 2)}
    for pairs in predicted.values():
        universe |= pairs
    similarity = exact_jaccard(texts, universe)
    true = {pair for pair, j in similarity.items() if j >= JACCARD}
    base = count / seconds["datasketch"]
    lines = [
        f"### Near-duplicate detection, {count:,} documents of ~1 KB "
        f"({len(true):,} pairs with Jaccard >= {JACCARD})",
        "",
        "| method | seconds | CPU seconds | docs/s | x datasketch | recall | precision |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, pairs in predicted.items():
        hits = len(pairs & true)
        recall = hits / len(true) if true else 1.0
        precision = hits / len(pairs) if pairs else 1.0
        rate = count / seconds[name]
        lines.append(
            f"| {name} | {seconds[name]:.1f} | {cpu[name]:.1f} | {rate:,.0f} | {rate / base:.1f} | "
            f"{recall:.4f} | {precision:.4f} |"
        )
    return "\n".join(lines)
