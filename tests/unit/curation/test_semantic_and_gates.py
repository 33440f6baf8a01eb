import numpy as np
import polars as pl

from distill_assets.defs.curation import products
from distill_assets.defs.curation.decide import (
    ArraySource,
    RowVectors,
    semantic_keys,
    semantic_links,
)
from distill_assets.defs.curation.decontaminate import NO_EVAL_SETS
from distill_assets.defs.curation.pipeline import curate
from distill_assets.defs.curation.products import ProductContext
from distill_assets.lib.cosine_lsh import bound_parts
from distill_assets.lib.embed import Embedder
from distill_assets.rules.curation import QualityGate
from tests.unit.curation.feeds import feed_frame, feed_row
from tests.unit.curation.texts import words


def lazy(config: str, rows: list[dict[str, object]]) -> pl.LazyFrame:
    frame = feed_frame(config, rows).lazy()
    return frame.with_columns(pl.lit("2026-11-19").alias("partition"))


def test_semantic_links_join_rows_above_the_cosine_threshold_only():
    vectors = np.array(
        [[1.0, 0.0, 0.0], [0.999, 0.0447, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]],
        dtype=np.float32,
    )
    vectors[1] /= np.linalg.norm(vectors[1])
    head, tail = bound_parts(vectors)
    rows = RowVectors(
        band_keys=np.zeros((4, 1), np.uint64),
        shingled=np.ones(4, bool),
        semantic_keys=semantic_keys(vectors),
        embedding_head=head,
        embedding_tail=tail,
        source=ArraySource({"embedding": vectors}),
        source_rows=np.arange(4),
    )
    for exact in (True, False):  # exact search, then LSH screened by the stored bound parts
        a, b = semantic_links(rows, np.arange(4), exact=exact)
        assert sorted(zip(a.tolist(), b.tolist(), strict=True)) == [(0, 1)], exact
        # members are rows in any order; links are member indexes
        a, b = semantic_links(rows, np.array([3, 1, 2, 0]), exact=exact)
        assert sorted(zip(a.tolist(), b.tolist(), strict=True)) == [(1, 3)], exact


class FirstWordEmbedder(Embedder):
    """A test embedder: texts with the same first word get the same vector."""

    name = "first-word"
    dim = 8

    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            if text:
                out[row, sum(text.split()[0].encode()) % self.dim] = 1.0
        return out


def test_rows_whose_embeddings_are_nearly_identical_are_semantic_duplicates():
    rows = [
        feed_row(
            "instruction",
            "s1",
            "apple " + " ".join(words("x", 30)),
            source="escalations",
            group="a",
            score=0.9,
        ),
        feed_row(
            "instruction",
            "s2",
            "apple " + " ".join(words("y", 30)),
            source="escalations",
            group="b",
        ),
        feed_row(
            "instruction", "o", "pear " + " ".join(words("z", 30)), source="escalations", group="c"
        ),
    ]
    context = ProductContext("instruction", FirstWordEmbedder(), NO_EVAL_SETS)
    result = curate(lazy("instruction", rows), "instruction", context=context)
    assert sorted(result.curated["id"].to_list()) == ["o", "s1"]
    assert result.duplicates.select("id", "reason", "kept_id").rows() == [
        ("s2", "semantic_duplicate", "s1")
    ]
    assert result.removed["near_duplicate"] == 0


def test_the_quality_gate_removes_low_scores_and_rows_missing_a_required_flag(monkeypatch):
    gate = QualityGate(min_score=0.5, required_flags=("approved",))
    monkeypatch.setitem(products.QUALITY_GATES, "dpo", gate)
    rows = [
        feed_row(
            "dpo",
            "ok",
            "alpha",
            source="revisions",
            group="1",
            score=0.6,
            metadata={"approved": True},
        ),
        feed_row(
            "dpo",
            "low",
            "beta",
            source="revisions",
            group="2",
            score=0.4,
            metadata={"approved": True},
        ),
        feed_row(
            "dpo",
            "unflagged",
            "gamma",
            source="revisions",
            group="3",
            score=0.9,
            metadata={"approved": False},
        ),
        feed_row("dpo", "missing", "delta", source="revisions", group="4", score=0.9),
    ]
    result = curate(lazy("dpo", rows), "dpo")
    assert result.curated["id"].to_list() == ["ok"]
    assert result.duplicates.select("id", "reason").sort("id").rows() == [
        ("low", "below_threshold"),
        ("missing", "below_threshold"),
        ("unflagged", "below_threshold"),
    ]
    assert result.funnel["below_threshold"] == 1


def test_rows_holding_a_replacement_character_fail_the_quality_gate():
    rows = [
        feed_row("dpo", "clean", "alpha", source="revisions", group="1"),
        feed_row("dpo", "garbled", "caf\ufffd au lait", source="revisions", group="2"),
        feed_row("dpo", "twice", "na\ufffdve \ufffdcole", source="revisions", group="3"),
    ]
    result = curate(lazy("dpo", rows), "dpo")
    assert result.curated["id"].to_list() == ["clean"]
    assert result.duplicates.select("id", "reason").sort("id").rows() == [
        ("garbled", "below_threshold"),
        ("twice", "below_threshold"),
    ]
    # counted per partition (rows and characters: the text is in prompt, chosen and rejected)
    assert result.replacement_chars == {"2026-11-19": {"rows": 2, "chars": 3 + 6}}


def test_products_count_replacement_characters_per_row():
    rows = [
        feed_row("dpo", "clean", "alpha", source="revisions", group="1"),
        feed_row("dpo", "twice", "na\ufffdve \ufffdcole", source="revisions", group="3"),
    ]
    context = ProductContext("dpo", FirstWordEmbedder(), NO_EVAL_SETS)
    made = products.compute_products(lazy("dpo", rows), context)
    assert made.select("id", "replacement_chars", "gate_failed").rows() == [
        ("clean", 0, False),
        ("twice", 6, True),
    ]
