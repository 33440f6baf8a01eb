"""distill's one text embedder: texts → unit vectors, offline by default.

Every consumer (semantic dedup and novelty in curation, principle merging and retrieval in
revisions, query-response relevance in escalations, competence in telemetry) gets its embedder
from `load_embedder` (or the `embedder` resource) and compares vectors by cosine similarity, which
for these unit vectors is a dot product.

Backends:
- `hashed` (default): `HashedNgramEmbedder`, feature hashing of byte n-grams, vectorized in NumPy
  over Arrow buffers (no per-row Python), deterministic, no model and no download. Parameters and
  their rationale: `distill_assets.rules.embedding`.
- `model2vec`: a model2vec static model read from a local folder (`DISTILL_EMBEDDER_MODEL`); needs
  the optional `embeddings` extra. Nothing is ever downloaded: the folder must exist.

`Embedder.name` identifies the vector space (backend and parameters or model folder); store it
beside stored vectors and recompute when it differs.
"""

from __future__ import annotations

import itertools
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa

from distill_assets.rules import embedding as rules

HASHED_BACKEND = "hashed"
MODEL2VEC_BACKEND = "model2vec"
BACKENDS: tuple[str, ...] = (HASHED_BACKEND, MODEL2VEC_BACKEND)

_FNV_PRIME = np.uint32(0x01000193)
_GOLDEN = 0x9E3779B9
_MASK32 = 0xFFFFFFFF


def as_series(texts: pl.Series | Sequence[str | None]) -> pl.Series:
    """Return `texts` as a Polars String series (nulls kept)."""
    if isinstance(texts, pl.Series):
        return texts.cast(pl.String)
    return pl.Series("text", list(texts), dtype=pl.String)


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Return `vectors` as float32 rows of unit length (all-zero rows stay zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)


class Embedder(ABC):
    """Turns texts into unit vectors of `dim` floats; similar texts get a high dot product."""

    name: str
    dim: int

    @abstractmethod
    def embed(self, texts: pl.Series | Sequence[str | None]) -> np.ndarray:
        """Return a float32 array (len(texts), dim) of unit rows; a null or blank text is zeros."""


class HashedNgramEmbedder(Embedder):
    """Feature hashing of byte n-grams (see `distill_assets.rules.embedding`)."""

    def __init__(
        self,
        dim: int = rules.DIMENSIONS,
        ngram_sizes: tuple[int, ...] = rules.NGRAM_SIZES,
        batch_bytes: int = rules.BATCH_BYTES,
    ) -> None:
        """Configure the vector size (a power of two) and the n-gram sizes."""
        if dim <= 0 or dim & (dim - 1):
            raise ValueError(f"dim must be a power of two, not {dim}")
        if not ngram_sizes or min(ngram_sizes) < 1:
            raise ValueError(f"n-gram sizes must be positive, not {ngram_sizes}")
        self.dim = dim
        self.ngram_sizes = tuple(sorted(set(ngram_sizes)))
        self.batch_bytes = batch_bytes
        sizes = ",".join(str(n) for n in self.ngram_sizes)
        self.name = f"{HASHED_BACKEND}/v1/dim={dim}/n={sizes}"

    def embed(self, texts: pl.Series | Sequence[str | None]) -> np.ndarray:
        """Embed `texts` batch by batch (about `batch_bytes` of text each)."""
        normalized = normalize_text(as_series(texts))
        if normalized.is_empty():
            return np.zeros((0, self.dim), dtype=np.float32)
        sizes = normalized.str.len_bytes().cast(pl.Int64).to_numpy()
        batch_of = np.cumsum(sizes) // max(self.batch_bytes, 1)
        cuts = np.flatnonzero(np.diff(batch_of)) + 1
        bounds = [0, *cuts.tolist(), len(sizes)]
        parts = [
            self._embed_batch(normalized.slice(lo, hi - lo))
            for lo, hi in itertools.pairwise(bounds)
        ]
        return np.concatenate(parts) if len(parts) > 1 else parts[0]

    def _embed_batch(self, normalized: pl.Series) -> np.ndarray:
        offsets, data = _utf8_buffers(normalized)
        count = len(offsets) - 1
        total = len(data)
        lengths = np.diff(offsets)
        doc = np.repeat(np.arange(count, dtype=np.int64), lengths)
        # bytes from each position to the end of its text: an n-gram starting there fits if >= n
        room = offsets[1:][doc] - np.arange(total, dtype=np.int64)
        sums = np.zeros(count * self.dim, dtype=np.float64)
        as_words = data.astype(np.uint32)
        rolling = np.zeros(total, dtype=np.uint32)
        with np.errstate(over="ignore"):
            for size in range(1, max(self.ngram_sizes) + 1):
                starts = total - size + 1
                if starts <= 0:
                    break
                # FNV-1a over data[i : i + size], extended by one byte per round
                if size == 1:
                    rolling = (np.uint32(0x811C9DC5) ^ as_words) * _FNV_PRIME
                else:
                    rolling[:starts] = (rolling[:starts] ^ as_words[size - 1 :]) * _FNV_PRIME
                if size not in self.ngram_sizes:
                    continue
                fits = room[:starts] >= size
                mixed = _avalanche(rolling[:starts][fits] ^ np.uint32((size * _GOLDEN) & _MASK32))
                bucket = (mixed & np.uint32(self.dim - 1)).astype(np.int64)
                sign = 1.0 - 2.0 * (mixed >> np.uint32(31)).astype(np.float64)
                sums += np.bincount(
                    doc[:starts][fits] * self.dim + bucket, weights=sign, minlength=count * self.dim
                )
        return normalize_rows(sums.reshape(count, self.dim))


class Model2VecEmbedder(Embedder):
    """A model2vec static embedding model loaded from a local folder (never downloaded)."""

    def __init__(self, model_path: str) -> None:
        """Load the model in `model_path` (a folder written by `StaticModel.save_pretrained`)."""
        folder = Path(model_path)
        if not folder.is_dir():
            raise ValueError(f"embedder model folder {model_path!r} does not exist")
        try:
            from model2vec import StaticModel
        except ImportError as error:
            raise ValueError(
                "the model2vec embedder needs the optional extra: pip install 'distill[embeddings]'"
            ) from error
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        self.model = StaticModel.from_pretrained(str(folder.resolve()))
        self.dim = int(self.model.dim)
        self.name = f"{MODEL2VEC_BACKEND}/{folder.resolve()}"

    def embed(self, texts: pl.Series | Sequence[str | None]) -> np.ndarray:
        """Encode `texts` with the model (nulls and blank texts become zero rows)."""
        series = as_series(texts)
        out = np.zeros((series.len(), self.dim), dtype=np.float32)
        present = series.is_not_null() & (series.str.strip_chars().str.len_bytes() > 0)
        rows = np.flatnonzero(present.to_numpy())
        if len(rows):
            encoded = self.model.encode(series.filter(present).to_list())
            out[rows] = normalize_rows(encoded)
        return out


@cache
def load_embedder(backend: str = "", model_path: str = "") -> Embedder:
    """Return the embedder of a backend (`hashed` when empty); see the module docstring.

    Cached per process: a model is loaded once however many assets ask for it.
    """
    chosen = backend or HASHED_BACKEND
    if chosen == HASHED_BACKEND:
        if model_path:
            raise ValueError("the hashed embedder takes no model path (set DISTILL_EMBEDDER)")
        return HashedNgramEmbedder()
    if chosen == MODEL2VEC_BACKEND:
        if not model_path:
            raise ValueError("the model2vec embedder needs DISTILL_EMBEDDER_MODEL (a local folder)")
        return Model2VecEmbedder(model_path)
    raise ValueError(f"unknown embedder backend {chosen!r}; choose one of {', '.join(BACKENDS)}")


def top_k_cosine(
    queries: np.ndarray, corpus: np.ndarray, k: int, block_rows: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Return, per query row, the `k` most similar corpus rows (exact, by dot product).

    Both arrays hold unit rows. The result is `(indices, scores)`, each `(len(queries), k')` with
    `k' = min(k, len(corpus))`, best first; equal scores are ordered by corpus index, so the
    answer is deterministic. Memory is bounded by `block_rows * len(corpus)` scores at a time.
    """
    width = min(k, len(corpus))
    indices = np.zeros((len(queries), width), dtype=np.int64)
    scores = np.zeros((len(queries), width), dtype=np.float32)
    if width == 0:
        return indices, scores
    for lo in range(0, len(queries), block_rows):
        sims = queries[lo : lo + block_rows] @ corpus.T
        # stable sort on -score keeps the lower corpus index first among ties
        order = np.argsort(-sims, axis=1, kind="stable")[:, :width]
        indices[lo : lo + block_rows] = order
        scores[lo : lo + block_rows] = np.take_along_axis(sims, order, axis=1)
    return indices, scores


def normalize_text(texts: pl.Series) -> pl.Series:
    """Lowercase, collapse whitespace runs, trim, then pad with one space at each end."""
    cleaned = texts.fill_null("").str.to_lowercase().str.replace_all(r"\s+", " ")
    stripped = cleaned.str.strip_chars()
    return pl.select(
        pl.when(stripped.str.len_bytes() > 0).then(" " + stripped + " ").otherwise(pl.lit(""))
    ).to_series()


def _utf8_buffers(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return the (offsets, bytes) of a string series as NumPy views of one Arrow array."""
    array = texts.to_arrow().cast(pa.large_string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[
        array.offset : array.offset + len(array) + 1
    ]
    values = array.buffers()[2]
    if values is None:
        return offsets - offsets[0], np.zeros(0, dtype=np.uint8)
    data = np.frombuffer(values, dtype=np.uint8)[offsets[0] : offsets[-1]]
    return offsets - offsets[0], data


def _avalanche(values: np.ndarray) -> np.ndarray:
    """Mix 32-bit hashes (lowbias32) so that every input bit affects every output bit."""
    values = values ^ (values >> np.uint32(16))
    values = values * np.uint32(0x7FEB352D)
    values = values ^ (values >> np.uint32(15))
    values = values * np.uint32(0x846CA68B)
    return values ^ (values >> np.uint32(16))
