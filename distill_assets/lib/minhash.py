r"""Vectorized MinHash over word n-gram shingles, LSH banding and connected components.

Everything runs on whole columns in NumPy over Arrow buffers (no per-document Python):

1. words: the `\w+` runs of the lowercased text, each hashed by a polynomial over its UTF-8 bytes
   (mod 2^64) and mixed with splitmix64. Pure-ASCII documents are tokenized and hashed in NumPy
   straight from the Arrow bytes (one prefix sum per chunk); others go through Polars' Unicode
   regex and hash each distinct word once (`np.add.reduceat`); both give the same hashes;
2. shingles: `n` consecutive word hashes of one document are folded into one 64-bit hash (a
   document shorter than `n` words is one shingle of all its words);
3. signature: one-permutation hashing (Li, Owen, Zhang 2012) — the top bits of a shingle's hash
   pick one of `k` bins, the low 32 bits are its value, and a bin keeps its minimum; empty bins are
   filled by optimal densification (Shrivastava 2017): each borrows the value of the first
   non-empty bin of a fixed pseudo-random probe sequence. Cost is one pass over the shingles
   instead of `k`;
4. banding: `bands` bands of `rows` bins each are folded into one 64-bit bucket key; documents
   sharing a key in some band are candidates; each candidate is linked to its bucket's first
   document and kept when the fraction of equal bins (the Jaccard estimate) reaches a threshold;
5. clusters: connected components of the kept links by minimum-label propagation.

A document of several parts compared together (a preference pair's prompt, chosen and rejected)
gets one signature per part, interleaved bin by bin (`part_signatures`): every band then spans
every part, and the Jaccard estimate of a candidate is the smallest over its parts
(`estimated_jaccard(..., parts=k)`), so two documents are near duplicates only when each part is.

All hash constants are fixed, so signatures and clusters depend only on the texts, never on row
order or process (no Python `hash`, no Polars `.hash()`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

_WORD_PRIME = np.uint64(0x100000001B3)
_SHINGLE_PRIME = np.uint64(0x9E3779B97F4A7C15)
_EMPTY = np.uint32(0xFFFFFFFF)
MAX_PROBES = 4096
# documents with at most this many non-empty bins are densified by `_densify_sparse`
SPARSE_BINS = 16
# documents `_densify_sparse` handles at once (bounds its memory)
SPARSE_DOCS = 8192
# documents per thread of `text_signatures` at least (smaller inputs are signed in one pass)
SLICE_DOCS = 20_000
# candidate links compared per chunk, so memory stays bounded however many candidates there are
VERIFY_CHUNK = 65_536
# bytes of each side's gathered vectors per chunk at most (`verify_rows`): wide vectors (a
# three-part signature, a 768-float embedding) get fewer links per chunk, not more memory
VERIFY_BYTES = 16 << 20
# values mixed per in-place pass of `splitmix64` (512 KiB of uint64: stays in cache)
MIX_BLOCK = 65_536
WORD_PATTERN = r"\w+"
# bytes of pure-ASCII text tokenized per NumPy pass (bounds the uint64 temporaries to ~8 x this)
ASCII_CHUNK_BYTES = 1 << 23
_WORD_INVERSE = np.uint64(pow(int(_WORD_PRIME), -1, 1 << 64))
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A") : ord("Z") + 1] += 32
_WORD_BYTE = np.isin(
    np.arange(256), np.frombuffer(b"0123456789_abcdefghijklmnopqrstuvwxyz", np.uint8)
)


def splitmix64(values: np.ndarray) -> np.ndarray:
    """Return the splitmix64 finalizer of uint64 `values` (every input bit moves every output).

    Computed in place, block by block of `MIX_BLOCK` values, so the temporaries stay in cache.
    """
    return _mix_in_place(np.array(values, dtype=np.uint64, order="C"))


def _mix_in_place(out: np.ndarray) -> np.ndarray:
    """Apply `splitmix64` to the C-contiguous uint64 array `out` in place and return it."""
    flat = out.reshape(-1)
    spare = np.empty(min(flat.size, MIX_BLOCK), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, flat.size, MIX_BLOCK):
            z = flat[start : start + MIX_BLOCK]
            shifted = spare[: z.size]
            z += np.uint64(0x9E3779B97F4A7C15)
            np.right_shift(z, np.uint64(30), out=shifted)
            z ^= shifted
            z *= np.uint64(0xBF58476D1CE4E5B9)
            np.right_shift(z, np.uint64(27), out=shifted)
            z ^= shifted
            z *= np.uint64(0x94D049BB133111EB)
            np.right_shift(z, np.uint64(31), out=shifted)
            z ^= shifted
    return out


def _arrow_strings(series: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return (offsets, bytes) of a non-null string series as NumPy views."""
    array = series.to_arrow().cast(pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    values = array.buffers()[2]
    data = (
        np.zeros(0, dtype=np.uint8)
        if values is None
        else np.frombuffer(values, dtype=np.uint8)[offsets[0] : offsets[-1]]
    )
    return offsets - offsets[0], data


def _hash_strings(strings: pa.Array) -> np.ndarray:
    """Return a uint64 hash of each (non-null) string from its UTF-8 bytes."""
    offsets, data = _arrow_strings(pl.Series(strings))
    lengths = np.diff(offsets)
    if len(data) == 0:
        return splitmix64(lengths.astype(np.uint64))
    longest = int(lengths.max())
    powers = _powers(_WORD_PRIME, longest)
    with np.errstate(over="ignore"):
        # byte j of a string weighs prime^(bytes after it), so it hashes like a Horner loop
        ends = np.repeat(offsets[1:], lengths)
        weights = powers[ends - 1 - np.arange(len(data))]
        terms = data.astype(np.uint64) * weights
    sums = np.add.reduceat(terms, np.minimum(offsets[:-1], len(data) - 1))
    sums = np.where(lengths > 0, sums, 0).astype(np.uint64)
    return splitmix64(sums ^ lengths.astype(np.uint64))


def _polars_word_hashes(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    r"""Return `word_hashes` of any texts, tokenized by Polars (Unicode `\w+`, Unicode lowercase).

    Only distinct words are hashed (Arrow dictionary encoding), so the cost is one pass over the
    words plus the vocabulary.
    """
    words = texts.cast(pl.String).fill_null("").str.to_lowercase().str.extract_all(WORD_PATTERN)
    counts = words.list.len().fill_null(0).to_numpy().astype(np.int64)
    doc_offsets = np.concatenate([[0], np.cumsum(counts)])
    flat = words.explode().drop_nulls()
    if flat.is_empty():
        return doc_offsets, np.zeros(0, dtype=np.uint64)
    encoded = pc.dictionary_encode(flat.to_arrow())
    if isinstance(encoded, pa.ChunkedArray):
        encoded = encoded.combine_chunks()
    vocabulary = _hash_strings(encoded.dictionary)
    return doc_offsets, vocabulary[encoded.indices.to_numpy(zero_copy_only=False)]


def _powers(base: np.uint64, count: int) -> np.ndarray:
    """Return `base**k mod 2**64` for k in 0..count-1."""
    powers = np.full(count, base, dtype=np.uint64)
    powers[:1] = 1
    with np.errstate(over="ignore"):
        return np.cumprod(powers, dtype=np.uint64)


def _ascii_chunk_hashes(
    data: np.ndarray, doc_offsets: np.ndarray, skipped: np.ndarray, powers: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""Return `(words_per_doc, hashes)` of the documents concatenated in `data`.

    Words are runs of `[0-9A-Za-z_]` (what `\w` matches in ASCII), lowercased; documents in
    `skipped` (not pure ASCII) get no words here. Each word's polynomial hash (the one
    `_hash_strings` computes) comes from one prefix sum: with `Q` the inverse of the odd prime
    `P` modulo 2^64, `sum b[i] P^(end-1-i) = P^(end-1) (S[end] - S[start])` where `S` is the
    running sum of `b[i] Q^i`, so there is no per-word loop. `powers` holds `(Q^k, P^k)` rows
    for at least `len(data)` values of k.
    """
    lowered = _LOWER[data]
    word = _WORD_BYTE[lowered]
    for doc in skipped:
        word[doc_offsets[doc] : doc_offsets[doc + 1]] = False
    size = len(data)
    inner = np.zeros(size + 1, dtype=bool)
    inner[1:size] = word[1:] & word[:-1]
    inner[doc_offsets] = False
    begins = np.flatnonzero(word & ~inner[:size])
    ends = np.flatnonzero(word & ~inner[1:]) + 1
    counts = np.diff(np.searchsorted(begins, doc_offsets))
    if len(begins) == 0:
        return counts, np.zeros(0, dtype=np.uint64)
    # bytes outside words are summed too, but no word's range of the prefix spans them
    terms = lowered.astype(np.uint64)
    prefix = np.zeros(size + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.multiply(terms, powers[0, :size], out=terms)
        np.cumsum(terms, out=prefix[1:])
        sums = (prefix[ends] - prefix[begins]) * powers[1, ends - 1]
    lengths = (ends - begins).astype(np.uint64)
    sums ^= lengths
    return counts, _mix_in_place(sums)


def word_hashes(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    r"""Return `(doc_offsets, hashes)`: the uint64 hash of every word, documents concatenated.

    Words are the `\w+` runs of the lowercased text; a null text has no words. Document `d` owns
    `hashes[doc_offsets[d]:doc_offsets[d + 1]]`. Pure-ASCII documents are tokenized and hashed
    in NumPy over their bytes, in runs of documents of about `ASCII_CHUNK_BYTES`
    (`_ascii_chunk_hashes`); the others by Polars (`_polars_word_hashes`); both give the same
    hashes for the same words.
    """
    texts = texts.cast(pl.String).fill_null("")
    offsets, data = _arrow_strings(texts)
    other = np.zeros(len(texts), dtype=bool)
    other[np.searchsorted(offsets, np.flatnonzero(data >= 0x80), side="right") - 1] = True
    counts = np.zeros(len(texts), dtype=np.int64)
    chunks = _chunks(offsets)
    longest = max((int(offsets[c[-1] + 1] - offsets[c[0]]) for c in chunks), default=0)
    powers = np.stack([_powers(_WORD_INVERSE, longest), _powers(_WORD_PRIME, longest)])
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for chunk in chunks:
        base = offsets[chunk[0]]
        local = offsets[chunk[0] : chunk[-1] + 2] - base
        skipped = np.flatnonzero(other[chunk])
        chunk_counts, hashes = _ascii_chunk_hashes(
            data[base : base + local[-1]], local, skipped, powers
        )
        counts[chunk] += chunk_counts
        parts.append((chunk, chunk_counts, hashes))
    if other.any():
        unicode_docs = np.flatnonzero(other)
        local_offsets, hashes = _polars_word_hashes(texts.gather(unicode_docs))
        unicode_counts = np.diff(local_offsets)
        counts[unicode_docs] = unicode_counts
        parts.append((unicode_docs, unicode_counts, hashes))
    doc_offsets = np.concatenate([[0], np.cumsum(counts)])
    result = np.zeros(int(doc_offsets[-1]), dtype=np.uint64)
    for docs, words, hashes in parts:
        local = np.concatenate([[0], np.cumsum(words)])
        where = np.repeat(doc_offsets[docs] - local[:-1], words) + np.arange(local[-1])
        result[where] = hashes
    return doc_offsets, result


def _chunks(offsets: np.ndarray) -> list[np.ndarray]:
    """Split the documents into runs of about `ASCII_CHUNK_BYTES` bytes (at least one each)."""
    docs = len(offsets) - 1
    if docs <= 0:
        return []
    group = offsets[:-1] // ASCII_CHUNK_BYTES
    cuts = np.flatnonzero(np.diff(group)) + 1
    return np.split(np.arange(docs), cuts)


def shingle_hashes(
    doc_offsets: np.ndarray, words: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Return `(doc_of_shingle, hashes)` of every `size`-word shingle of every document.

    A document with fewer than `size` words (but at least one) has one shingle of all its words;
    a document with no words has none.
    """
    counts = np.diff(doc_offsets)
    total = len(words)
    # full shingles start wherever `size` words of the same document follow
    full = np.ones(total, dtype=bool)
    for back in range(1, size):
        ends = doc_offsets[1:][counts >= back] - back
        full[ends[ends >= 0]] = False
    short = np.flatnonzero((counts > 0) & (counts < size))
    starts = np.flatnonzero(full)
    if len(short):
        starts = np.sort(np.concatenate([starts, doc_offsets[short]]))
    folded = np.array(words, dtype=np.uint64)
    with np.errstate(over="ignore"):
        # in place: shingle i = sum of words[i + offset] * prime^(size - 1 - offset)
        for offset in range(1, size):
            folded *= _SHINGLE_PRIME
            folded[: max(total - offset, 0)] += words[offset:]
        folded = folded[starts]
        # a short document's shingle stops at its last word: zero the words beyond it
        if len(short):
            where = np.searchsorted(starts, doc_offsets[short])
            folded[where] = 0
            for offset in range(size):
                inside = offset < counts[short]
                term = np.where(
                    inside, words[np.minimum(doc_offsets[short] + offset, total - 1)], 0
                )
                folded[where] = folded[where] * _SHINGLE_PRIME + term.astype(np.uint64)
    per_doc = np.maximum(counts - size + 1, 0) + ((counts > 0) & (counts < size))
    return np.repeat(np.arange(len(counts)), per_doc), _mix_in_place(folded)


def signatures(doc_of_shingle: np.ndarray, hashes: np.ndarray, docs: int, bins: int) -> np.ndarray:
    """Return the (docs, bins) uint32 one-permutation MinHash signatures, densified.

    `bins` must be a power of two. A document without shingles has every bin `0xFFFFFFFF`.
    """
    if bins <= 0 or bins & (bins - 1):
        raise ValueError(f"bins must be a power of two, not {bins}")
    shift = np.uint64(64 - int(bins).bit_length() + 1)
    # the bin of each shingle (< bins, so the int64 view of the shifted hash is exact)
    slot = (hashes >> shift).view(np.int64)
    slot += doc_of_shingle.astype(np.int64, copy=False) * bins
    values = (hashes & np.uint64(0xFFFFFFFE)).astype(np.uint32)
    flat = np.full(docs * bins, _EMPTY, dtype=np.uint32)
    np.minimum.at(flat, slot, values)
    return _densify(flat.reshape(docs, bins))


def _probe(bins_: np.ndarray, attempt: int, bins: int) -> np.ndarray:
    """Return the bin that empty bin `bins_` borrows from on `attempt` (same for every document)."""
    seed = bins_.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(attempt)
    return (splitmix64(seed) & np.uint64(bins - 1)).astype(np.int64)


def _densify(sig: np.ndarray) -> np.ndarray:
    """Fill each empty bin by optimal densification (Shrivastava 2017).

    An empty bin `i` probes bins `probe(i, 0), probe(i, 1), ...` (a fixed pseudo-random sequence,
    the same for every document) and takes the value of the first non-empty one, so two documents
    agree on a bin with probability equal to their Jaccard similarity even when they have few
    shingles. After `MAX_PROBES` misses (practically never) the first non-empty bin is used.

    Documents with at most `SPARSE_BINS` non-empty bins (short texts: most bins empty, many
    probes each) take, for every empty bin, the non-empty bin its sequence reaches first
    (`_first_probes`); the others probe attempt by attempt. Both give what probing one bin at a
    time gives.
    """
    bins = sig.shape[1]
    filled = sig.copy()
    occupied = sig != _EMPTY
    counts = occupied.sum(axis=1)
    reached = _first_probes(bins, MAX_PROBES)
    for count in range(1, min(SPARSE_BINS, bins - 1) + 1):
        docs = np.flatnonzero(counts == count)
        for lo in range(0, len(docs), SPARSE_DOCS):
            chunk = docs[lo : lo + SPARSE_DOCS]
            filled[chunk] = _densify_sparse(sig[chunk], occupied[chunk], count, reached, MAX_PROBES)
    dense = counts > min(SPARSE_BINS, bins - 1)
    empty = np.flatnonzero(~occupied & dense[:, None])
    flat_sig, flat_filled = sig.reshape(-1), filled.reshape(-1)
    every_bin = np.arange(bins)
    for attempt in range(MAX_PROBES):
        if len(empty) == 0:
            return filled
        # the probe of a bin depends on the bin and the attempt only: one table per attempt
        columns = empty % bins
        values = flat_sig[empty - columns + _probe(every_bin, attempt, bins)[columns]]
        found = values != _EMPTY
        flat_filled[empty[found]] = values[found]
        empty = empty[~found]
    rows, columns = np.divmod(empty, bins)
    first_bin = np.argmax(occupied[rows], axis=1)
    filled[rows, columns] = sig[rows, first_bin]
    return filled


@cache
def _first_probes(bins: int, probes: int) -> np.ndarray:
    """Return `reached[j, i]`: the first attempt at which empty bin `i` probes bin `j`.

    `probes` when bin `j` is not among its first `probes` probes (`_probe`). Read-only, one per
    (bins, probes) and process.
    """
    every_bin = np.arange(bins)
    reached = np.full((bins, bins), probes, dtype=np.min_scalar_type(probes))
    for attempt in reversed(range(probes)):
        reached[_probe(every_bin, attempt, bins), every_bin] = attempt
    reached.setflags(write=False)
    return reached


def _densify_sparse(
    sig: np.ndarray, occupied: np.ndarray, count: int, reached: np.ndarray, probes: int
) -> np.ndarray:
    """Return `sig` densified, for documents with exactly `count` non-empty bins each.

    An empty bin `i` takes the value of the non-empty bin its probe sequence reaches first (the
    smallest `reached[j, i]` over the document's non-empty bins `j`: one attempt probes one bin,
    so there is no tie), or of the first non-empty bin when none is reached within `probes`.
    """
    docs, bins = sig.shape
    nonempty = np.nonzero(occupied)[1].reshape(docs, count)
    source = np.repeat(nonempty[:, :1], bins, axis=1)
    nearest = np.full((docs, bins), probes, dtype=reached.dtype)
    for j in range(count):
        attempt = reached[nonempty[:, j]]
        closer = attempt < nearest
        np.copyto(nearest, attempt, where=closer)
        np.copyto(source, nonempty[:, j : j + 1], where=closer)
    borrowed = np.take_along_axis(sig, source, axis=1)
    return np.where(occupied, sig, borrowed)


def text_signatures(
    texts: pl.Series, shingle_words: int, bins: int, workers: int | None = None
) -> np.ndarray:
    """Return the densified MinHash signatures of `texts` (see the module docstring).

    A document's signature depends on its text only, so contiguous slices of at least
    `SLICE_DOCS` documents are signed in `workers` threads (default: the CPUs this process may
    run on) — NumPy and Polars release the GIL — and stacked: the same signatures as one pass.
    """
    workers = workers or len(os.sched_getaffinity(0))
    parts = max(1, min(workers, len(texts) // SLICE_DOCS))
    if parts == 1:
        return _text_signatures(texts, shingle_words, bins)
    bounds = np.linspace(0, len(texts), parts + 1).astype(np.int64)
    with ThreadPoolExecutor(parts) as pool:
        slices = pool.map(
            lambda i: _text_signatures(
                texts.slice(int(bounds[i]), int(bounds[i + 1] - bounds[i])), shingle_words, bins
            ),
            range(parts),
        )
        return np.vstack(list(slices))


def _text_signatures(texts: pl.Series, shingle_words: int, bins: int) -> np.ndarray:
    doc_offsets, words = word_hashes(texts)
    doc_of_shingle, hashes = shingle_hashes(doc_offsets, words, shingle_words)
    return signatures(doc_of_shingle, hashes, len(texts), bins)


def part_signatures(parts: list[pl.Series], shingle_words: int, bins: int) -> np.ndarray:
    """Return the signatures of documents of `len(parts)` parts, interleaved bin by bin.

    `parts[p][i]` is part p of document i; each part is signed on its own with `bins` bins and
    bin b of part p is column `b * len(parts) + p`, so consecutive bins (a band) cover every
    part. One part gives `text_signatures` unchanged.
    """
    signed = [text_signatures(part, shingle_words, bins) for part in parts]
    return np.stack(signed, axis=2).reshape(len(parts[0]), bins * len(parts))


def band_keys(sig: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """Return the (docs, bands) uint64 bucket key of each band of `rows` consecutive bins."""
    docs, bins = sig.shape
    if bands * rows > bins:
        raise ValueError(f"{bands} bands x {rows} rows exceed {bins} bins")
    keys = np.zeros((docs, bands), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for row in range(rows):
            column = sig[:, row : bands * rows : rows].astype(np.uint64)
            keys = splitmix64(keys * _SHINGLE_PRIME + column)
    return keys


def bucket_links(docs: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return links `(head, doc)`: every document to the smallest document sharing a bucket.

    `keys[i, j]` (uint64) is the bucket of document `docs[i]` in band `j`; buckets of different
    bands are distinct. Links are distinct and sorted (by head, then document). Each band is one
    sort of its keys (cache-sized, rather than one sort of all bands' keys; bands are sorted in
    threads, NumPy sorts without the GIL), and the links are deduplicated by one sort of their
    int64 codes, so the result does not depend on the threads.
    """
    if keys.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    docs = docs.astype(np.int64)
    span = np.int64(docs.max()) + 1
    bands = np.ascontiguousarray(keys.T)
    with ThreadPoolExecutor(min(len(bands), len(os.sched_getaffinity(0)))) as pool:
        codes = list(pool.map(lambda band: _band_codes(band, docs, span), bands))
    links = np.sort(np.concatenate(codes))
    distinct = np.ones(len(links), dtype=bool)
    distinct[1:] = links[1:] != links[:-1]
    links = links[distinct]
    return links // span, links % span


def _band_codes(band: np.ndarray, docs: np.ndarray, span: np.int64) -> np.ndarray:
    """Return the links of one band as `head * span + doc` codes."""
    order = np.argsort(band)
    sorted_keys, sorted_docs = band[order], docs[order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = sorted_keys[1:] != sorted_keys[:-1]
    # the order inside a bucket is arbitrary (unstable sort): its head is its smallest document
    heads = np.minimum.reduceat(sorted_docs, np.flatnonzero(starts))[np.cumsum(starts) - 1]
    linked = sorted_docs != heads
    return heads[linked] * span + sorted_docs[linked]


def shingled(sig: np.ndarray, parts: int = 1) -> np.ndarray:
    """Return whether each signature has a shingle (an empty document's bins are all empty).

    For signatures of `parts` interleaved parts (`part_signatures`): whether every part has one.
    """
    return (sig[:, :parts] != _EMPTY).all(axis=1)


def gather_pairs(
    fetch: Callable[[np.ndarray], np.ndarray], a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fetch the rows of pairs `(a[i], b[i])` once each; return them and the pairs' indexes.

    `fetch(rows)` returns the vectors of sorted distinct `rows`; the result is `(vectors, left,
    right)` with `vectors[left[i]]` the vector of `a[i]` and `vectors[right[i]]` that of `b[i]`.
    """
    rows = np.unique(np.concatenate([a, b]))
    return fetch(rows), np.searchsorted(rows, a), np.searchsorted(rows, b)


def verify_rows(vectors: np.ndarray) -> int:
    """Return how many links are compared per chunk over `vectors` (one row per vector).

    At most `VERIFY_CHUNK`, and at most `VERIFY_BYTES` of each side's gathered rows, so a chunk's
    memory is bounded by a constant whatever the vectors' width. Each link's result depends on
    its two rows alone, so the chunking never changes it.
    """
    row_bytes = max(1, int(np.prod(vectors.shape[1:], dtype=np.int64)) * vectors.itemsize)
    return max(1, min(VERIFY_CHUNK, VERIFY_BYTES // row_bytes))


def estimated_jaccard(sig: np.ndarray, a: np.ndarray, b: np.ndarray, parts: int = 1) -> np.ndarray:
    """Return the fraction of equal bins of documents `a[i]` and `b[i]`.

    For signatures of `parts` interleaved parts (`part_signatures`), the smallest fraction over
    the parts: the documents are as similar as their least similar part. Links are compared in
    chunks of `verify_rows`.
    """
    estimate = np.zeros(len(a), dtype=np.float64)
    chunk = verify_rows(sig)
    for lo in range(0, len(a), chunk):
        part = slice(lo, lo + chunk)
        equal = sig[a[part]] == sig[b[part]]
        estimate[part] = equal.reshape(len(equal), -1, parts).mean(axis=1).min(axis=1)
    return estimate


def components(nodes: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Return each node's component label: the smallest node index connected to it."""
    labels = np.arange(nodes, dtype=np.int64)
    if len(a) == 0:
        return labels
    while True:
        low = np.minimum(labels[a], labels[b])
        updated = labels.copy()
        np.minimum.at(updated, a, low)
        np.minimum.at(updated, b, low)
        updated = updated[updated]
        while not np.array_equal(updated, updated[updated]):
            updated = updated[updated]
        if np.array_equal(updated, labels):
            return labels
        labels = updated


def near_duplicate_components(
    sig: np.ndarray, bands: int, rows: int, threshold: float
) -> np.ndarray:
    """Return the component label of every document: linked when estimated Jaccard ≥ threshold.

    `near_components` over every row of `sig`, all held in memory.
    """
    return near_components(
        shingled(sig), band_keys(sig, bands, rows), np.arange(len(sig)), sig.__getitem__, threshold
    )


def near_components(
    has_shingles: np.ndarray,
    keys: np.ndarray,
    members: np.ndarray,
    fetch: Callable[[np.ndarray], np.ndarray],
    threshold: float,
    *,
    parts: int = 1,
) -> np.ndarray:
    """Return the near-duplicate component label of each member (member i is row `members[i]`).

    Of every row, `has_shingles` says whether it has a shingle (`shingled`) and `keys` are its
    `band_keys`; `fetch(rows)` returns the signatures of sorted distinct rows. Members sharing a
    band bucket are linked to its first member (a document without shingles is in no bucket)
    when their estimated Jaccard (over `parts` interleaved parts: the least similar part's)
    reaches `threshold`; only the linked rows' signatures are read.
    """
    valid = np.flatnonzero(has_shingles[members])
    a, b = bucket_links(valid, keys[members[valid]])
    sig, left, right = gather_pairs(fetch, members[a], members[b])
    keep = estimated_jaccard(sig, left, right, parts) >= threshold
    return components(len(members), a[keep], b[keep])
