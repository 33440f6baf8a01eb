"""The default text embedder's parameters (`distill_assets.lib.embed.HashedNgramEmbedder`).

Curation embeds rows to find duplicates (cosine > 0.99, docs/curation-and-release.md#dedup),
telemetry to score novelty and competence, and the principles memory retrieves principles by
semantic similarity (docs/sources/revisions.md#retrieval). distill's default embedder must work
offline with no model download, so it is a feature-hashing embedder: the text is lowercased,
whitespace runs collapse to one space, a space pads each end, and every byte n-gram of the sizes
below is hashed (FNV-1a over the bytes, then a 32-bit avalanche mix salted with the n-gram size) to
one of `DIMENSIONS` buckets with a sign (the hash's top bit); the bucket sums are L2-normalized.
Texts that share words share n-grams (`"price comparison"` and `"compare prices"` share `" pric"`,
`"compar"`, …), so cosine similarity follows lexical overlap and word-form variants, and two texts
differing in a few characters stay near 1.0.

Changing a value changes every vector: embeddings stored in the lake record the embedder's `name`
(which encodes these values) and are recomputed when it differs.
"""

from __future__ import annotations

DIMENSIONS = 256
NGRAM_SIZES: tuple[int, ...] = (3, 4, 5)
# Texts are embedded in batches of about this many bytes (bounded memory: ~40 bytes per byte).
BATCH_BYTES = 8 << 20
