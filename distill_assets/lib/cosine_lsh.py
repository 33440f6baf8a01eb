"""Pairs of unit vectors above a cosine threshold, without comparing all pairs.

Small sets are searched exactly (blocked matrix products, thresholded). Large sets use
random-hyperplane LSH (Charikar 2002): each vector gets `bands * bits` sign bits against fixed
pseudo-random hyperplanes (entries derived from splitmix64 of their index, so every process and
run draws the same planes); vectors sharing all bits of some band are candidates, and a candidate
is kept only when its exact cosine passes the threshold. Two vectors at angle θ agree on a bit with
probability 1 - θ/π, so at cosine 0.99 (θ ≈ 8.1°) a band of 16 bits matches with probability
0.48 and one of 12 bands matches with probability > 0.999.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from distill_assets.lib.minhash import bucket_links, gather_pairs, splitmix64, verify_rows

# candidate links verified per chunk, so memory stays bounded however many candidates there are
VERIFY_CHUNK = 65_536
# leading dimensions of the cheap upper bound that screens candidates before the exact cosine
BOUND_DIMS = 32
# how far below the threshold a bound may be and still be checked exactly (covers float32
# rounding of both the bound and the exact product, ~1e-5 for unit rows, with a wide margin)
BOUND_SLACK = 1e-3


def hyperplanes(dim: int, count: int) -> np.ndarray:
    """Return `count` fixed pseudo-random hyperplanes of `dim` dimensions, as a (dim, count) matrix.

    Entries are uniform in [-1, 1) from splitmix64 of their index (deterministic everywhere).
    """
    index = np.arange(dim * count, dtype=np.uint64)
    bits = splitmix64(index + np.uint64(0xC05135))
    uniform = (bits >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    return (2.0 * uniform - 1.0).reshape(dim, count).astype(np.float32)


def exact_pairs(
    vectors: np.ndarray, cosine: float, block_rows: int = 2048, *, inclusive: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Return every pair `(a, b)`, `a < b`, whose cosine exceeds `cosine` (blocked dot products).

    With `inclusive`, a cosine equal to `cosine` counts too. No sorting: each block of rows is
    multiplied with the rows after it and thresholded, so the cost is the matrix products alone
    and memory is `block_rows * len(vectors)` scores.
    """
    found_a, found_b = [], []
    for lo in range(0, len(vectors), block_rows):
        block = vectors[lo : lo + block_rows]
        sims = block @ vectors[lo:].T
        rows, columns = np.nonzero(sims >= cosine if inclusive else sims > cosine)
        a, b = rows + lo, columns + lo
        keep = a < b
        found_a.append(a[keep])
        found_b.append(b[keep])
    return np.concatenate(found_a), np.concatenate(found_b)


def band_signs(vectors: np.ndarray, planes: np.ndarray, bands: int, bits: int) -> np.ndarray:
    """Return the (rows, bands) uint64 key of each band: bit i set when plane i sees it positive.

    The sign bits are packed eight to a byte (little-endian bit order, so bit i weighs 2^i)
    and a band's bytes are summed into its key, never widening every bit to 64.
    """
    signs = (vectors @ planes) > 0
    packed = np.packbits(signs.reshape(len(vectors), bands, bits), axis=2, bitorder="little")
    keys = np.zeros((len(vectors), bands), dtype=np.uint64)
    for byte in range(packed.shape[2]):
        keys |= packed[:, :, byte].astype(np.uint64) << np.uint64(8 * byte)
    return keys


def lsh_keys(vectors: np.ndarray, bands: int, bits: int) -> np.ndarray:
    """Return the (rows, bands) LSH bucket keys of `vectors` (a row's keys depend on it alone)."""
    return band_signs(vectors, hyperplanes(vectors.shape[1], bands * bits), bands, bits)


def bound_parts(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return each row's head (its first `BOUND_DIMS` dimensions, contiguous) and tail norm.

    Together they bound every dot product (`verified_by_bound`); a row's parts depend on the row
    alone, so they can be computed once and stored beside the vectors.
    """
    if vectors.shape[1] <= BOUND_DIMS:
        return np.ascontiguousarray(vectors), np.zeros(len(vectors), dtype=vectors.dtype)
    head = np.ascontiguousarray(vectors[:, :BOUND_DIMS])
    return head, np.linalg.norm(vectors[:, BOUND_DIMS:], axis=1)


def verified_by_bound(
    head: np.ndarray,
    tail: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    cosine: float,
    *,
    fetch: Callable[[np.ndarray], np.ndarray],
) -> np.ndarray:
    """Return whether each link `(a[i], b[i])` has cosine > `cosine` (exact, unit rows).

    By Cauchy-Schwarz, x.y <= x[:d].y[:d] + |x[d:]| |y[d:]| for the first `BOUND_DIMS` dimensions
    d (`head`, `tail`: `bound_parts` of every row): a link whose bound is below
    `cosine - BOUND_SLACK` cannot pass and is never looked at whole; the rows of the others are
    fetched once (`fetch(rows)`: the full vectors of sorted distinct rows) and their exact
    product alone decides. Most candidates of a bucket are far below the threshold, so the full
    vectors of few rows are ever needed (they need not all be in memory).
    """

    def screen(lo: int) -> np.ndarray:
        left, right = a[lo : lo + VERIFY_CHUNK], b[lo : lo + VERIFY_CHUNK]
        bound = np.einsum("ij,ij->i", head[left], head[right]) + tail[left] * tail[right]
        return lo + np.flatnonzero(bound > cosine - BOUND_SLACK)

    # chunks are screened in threads (NumPy gathers and products release the GIL), in order
    with ThreadPoolExecutor(len(os.sched_getaffinity(0))) as pool:
        maybe = list(pool.map(screen, range(0, len(a), VERIFY_CHUNK)))
    candidates = np.concatenate(maybe) if maybe else np.zeros(0, dtype=np.int64)
    similar = np.zeros(len(a), dtype=bool)
    if not len(candidates):
        return similar
    full, left, right = gather_pairs(fetch, a[candidates], b[candidates])
    chunk = verify_rows(full)
    for lo in range(0, len(candidates), chunk):
        part = slice(lo, lo + chunk)
        exact = np.einsum("ij,ij->i", full[left[part]], full[right[part]])
        similar[candidates[part][exact > cosine]] = True
    return similar


def similar_pairs(
    vectors: np.ndarray,
    cosine: float,
    *,
    exact_limit: int,
    bands: int,
    bits: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Return pairs of rows of `vectors` (unit rows) whose cosine exceeds `cosine`.

    Exact search up to `exact_limit` rows, LSH with exact verification above it
    (`member_pairs` over every row, all held in memory). Zero rows (no text) pair with nothing.
    """
    head, tail = bound_parts(vectors)
    return member_pairs(
        cosine,
        exact_limit=exact_limit,
        members=np.arange(len(vectors)),
        keys=lsh_keys(vectors, bands, bits),
        head=head,
        tail=tail,
        fetch=vectors.__getitem__,
    )


def member_pairs(
    cosine: float,
    *,
    exact_limit: int,
    members: np.ndarray,
    keys: np.ndarray,
    head: np.ndarray,
    tail: np.ndarray,
    fetch: Callable[[np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """Return pairs `(a, b)` of members whose vectors' cosine exceeds `cosine` (member indexes).

    Member i is row `members[i]`; of every row, `keys` are its `lsh_keys`, `head` and `tail` its
    `bound_parts`, and `fetch(rows)` returns the full vectors of sorted distinct rows, so the
    vectors need not all be in memory. Up to `exact_limit` members every pair is compared
    exactly; above it, members are linked to the first member of each band bucket they share
    (not to every member: linear however large a bucket is) and a link is kept only when its
    exact cosine passes (`verified_by_bound`). Zero rows (no text) pair with nothing.
    """
    if len(members) < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    if len(members) <= exact_limit:
        order = np.argsort(members, kind="stable")
        fetched = fetch(members[order])
        vectors = np.empty(fetched.shape, fetched.dtype)
        vectors[order] = fetched
        return exact_pairs(vectors, cosine)
    nonzero = (tail > 0) | head.any(axis=1)
    linked = np.flatnonzero(nonzero[members])
    a, b = bucket_links(linked, keys[members[linked]])
    similar = verified_by_bound(head, tail, members[a], members[b], cosine, fetch=fetch)
    return a[similar], b[similar]
