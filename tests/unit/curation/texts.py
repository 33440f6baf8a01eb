"""Deterministic synthetic texts with a known word-shingle Jaccard similarity."""

from __future__ import annotations

import hashlib
import re

from distill_assets.rules.curation import SHINGLE_WORDS


def words(seed: str, count: int) -> list[str]:
    """Return `count` distinct pseudo-words derived from `seed` (no randomness)."""
    return [hashlib.sha256(f"{seed}:{i}".encode()).hexdigest()[:7] for i in range(count)]


def changed(text_words: list[str], positions: list[int], seed: str) -> list[str]:
    """Return `text_words` with the words at `positions` replaced by new pseudo-words."""
    out = list(text_words)
    for n, position in enumerate(positions):
        out[position] = words(f"{seed}-changed", len(positions))[n]
    return out


def shingles(text: str, size: int = SHINGLE_WORDS) -> set[tuple[str, ...]]:
    """Return the word shingles of `text` as the curation rules define them."""
    tokens = re.findall(r"\w+", text.lower())
    if len(tokens) < size:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)}


def jaccard(a: str, b: str) -> float:
    """Return the Jaccard similarity of two texts' shingle sets."""
    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)
