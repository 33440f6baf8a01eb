"""Decontamination: find rows that share a long word n-gram with an evaluation set.

The operator points `DISTILL_EVAL_SETS` at a folder of evaluation sets (`*.jsonl`, `*.parquet`);
every string field of every row is eval text. Eval texts and rows are cut into
`CONTAMINATION_NGRAM_WORDS`-word n-grams of the same words as near-dup shingles
(`distill_assets.lib.minhash`), hashed to 64 bits; a row whose n-gram hash set meets the eval set's
is contaminated, and the first eval file (by name) it meets is recorded. Rules:
`distill_assets.rules.curation`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import polars as pl
from upath import UPath

from distill_assets.lib.lake import read_parquet_table
from distill_assets.lib.minhash import shingle_hashes, word_hashes
from distill_assets.lib.text import core_text
from distill_assets.rules.curation import CONTAMINATION_NGRAM_WORDS, EVAL_SET_SUFFIXES

NGRAM_SCHEMA = {"ngram": pl.UInt64(), "eval_file": pl.String()}


@dataclass(frozen=True)
class EvalNgrams:
    """The n-gram hashes of every evaluation set, each with the first file holding it."""

    ngrams: pl.DataFrame
    fingerprint: str
    files: tuple[str, ...] = ()


NO_EVAL_SETS = EvalNgrams(pl.DataFrame(schema=NGRAM_SCHEMA), fingerprint="none")


def text_ngrams(texts: pl.Series, words: int = CONTAMINATION_NGRAM_WORDS) -> pl.DataFrame:
    """Return `doc, ngram`: the hash of every `words`-word n-gram of every text (distinct)."""
    doc_offsets, hashes = word_hashes(texts)
    doc, ngrams = shingle_hashes(doc_offsets, hashes, words)
    return pl.DataFrame({"doc": doc.astype("int64"), "ngram": ngrams}).unique(maintain_order=True)


def eval_set_files(folder: str) -> list[UPath]:
    """Return the evaluation set files of `folder`, sorted by name (none when unset or absent)."""
    if not folder:
        return []
    root = UPath(folder)
    if not root.exists():
        raise ValueError(f"DISTILL_EVAL_SETS={folder} does not exist")
    return sorted(
        (p for p in root.iterdir() if p.name.endswith(EVAL_SET_SUFFIXES)), key=lambda p: p.name
    )


def read_eval_texts(path: UPath) -> pl.Series:
    """Return one text per row of an eval file: every string field of the row, joined."""
    try:
        if path.name.endswith(".parquet"):
            frame = pl.from_arrow(read_parquet_table(path))
        else:
            with path.open("rb") as handle:
                frame = pl.read_ndjson(handle, infer_schema_length=None)
    except Exception as error:
        raise ValueError(f"evaluation set {path.name} is not readable: {error}") from error
    assert isinstance(frame, pl.DataFrame)
    return frame.select(core_text(dict(frame.schema)).alias("text")).to_series()


def load_eval_ngrams(folder: str, words: int = CONTAMINATION_NGRAM_WORDS) -> EvalNgrams:
    """Read every evaluation set of `folder` into one n-gram table (empty when unset)."""
    files = eval_set_files(folder)
    if not files:
        return NO_EVAL_SETS
    digest = hashlib.sha256()
    frames = []
    for path in files:
        digest.update(f"{path.name}\n".encode())
        with path.open("rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
        ngrams = text_ngrams(read_eval_texts(path), words)
        frames.append(ngrams.select("ngram", pl.lit(path.name).alias("eval_file")))
    table = (
        pl.concat(frames)
        .group_by("ngram")
        .agg(pl.col("eval_file").min())
        .sort("ngram")
        .cast(NGRAM_SCHEMA)
    )
    return EvalNgrams(table, digest.hexdigest(), tuple(p.name for p in files))


def contaminated_by(
    texts: pl.Series, evals: EvalNgrams, words: int = CONTAMINATION_NGRAM_WORDS
) -> pl.Series:
    """Return, per text, the first eval file sharing an n-gram with it (null when none)."""
    if evals.ngrams.is_empty():
        return pl.Series("contaminated_by", [None] * len(texts), dtype=pl.String)
    hits = (
        text_ngrams(texts, words)
        .join(evals.ngrams, on="ngram", how="inner")
        .group_by("doc")
        .agg(pl.col("eval_file").min())
    )
    return (
        pl.DataFrame({"doc": pl.int_range(len(texts), eager=True, dtype=pl.Int64)})
        .join(hits, on="doc", how="left", maintain_order="left")
        .get_column("eval_file")
        .alias("contaminated_by")
    )
