import json

import polars as pl
import pytest

from distill_assets.defs.curation.decontaminate import (
    contaminated_by,
    eval_set_files,
    load_eval_ngrams,
)
from distill_assets.defs.curation.pipeline import curate
from distill_assets.defs.curation.products import ProductContext
from distill_assets.lib.embed import load_embedder
from tests.unit.curation.feeds import feed_frame, feed_row

QUESTION = (
    "A train leaves the station at nine and travels sixty miles per hour; how far has it "
    "gone by noon if it never stops"
)


def write_eval_sets(folder) -> None:
    folder.mkdir()
    rows = [{"id": 1, "question": QUESTION, "choices": ["180 miles", "120 miles"]}]
    (folder / "gsm_like.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pl.DataFrame({"prompt": ["Name the largest planet of the solar system"]}).write_parquet(
        folder / "trivia.parquet"
    )
    (folder / "notes.txt").write_text("not an eval set")


def test_eval_sets_are_the_jsonl_and_parquet_files_sorted_by_name(tmp_path):
    write_eval_sets(tmp_path / "evals")
    assert [p.name for p in eval_set_files(str(tmp_path / "evals"))] == [
        "gsm_like.jsonl",
        "trivia.parquet",
    ]
    assert eval_set_files("") == []
    with pytest.raises(ValueError, match="does not exist"):
        eval_set_files(str(tmp_path / "missing"))


def test_a_row_sharing_a_13_word_ngram_names_the_eval_file(tmp_path):
    write_eval_sets(tmp_path / "evals")
    evals = load_eval_ngrams(str(tmp_path / "evals"))
    texts = pl.Series(
        [
            f"Please solve this: {QUESTION.upper()}. Show your work.",
            # 12 consecutive words of the question only: not contaminated
            " ".join(QUESTION.split()[:12]) + " and then something else entirely",
            "name the largest planet of the solar system",  # whole short eval text
            None,
        ]
    )
    assert contaminated_by(texts, evals).to_list() == [
        "gsm_like.jsonl",
        None,
        "trivia.parquet",
        None,
    ]


def test_an_unreadable_eval_file_is_a_one_line_error(tmp_path):
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "broken.jsonl").write_text("{not json\n")
    with pytest.raises(ValueError, match=r"evaluation set broken\.jsonl is not readable"):
        load_eval_ngrams(str(folder))


def test_an_eval_question_planted_in_escalations_is_removed_as_contaminated(tmp_path):
    write_eval_sets(tmp_path / "evals")
    rows = [
        feed_row("instruction", "leak", QUESTION, source="escalations", group="s", score=0.9),
        feed_row("instruction", "ok", "Summarize the deploy log", source="escalations", group="s"),
    ]
    feeds = (
        feed_frame("instruction", rows).lazy().with_columns(pl.lit("2026-11-19").alias("partition"))
    )
    context = ProductContext(
        "instruction", load_embedder(), load_eval_ngrams(str(tmp_path / "evals"))
    )
    result = curate(feeds, "instruction", context=context)
    assert result.curated["id"].to_list() == ["ok"]
    assert result.duplicates.select("id", "reason", "kept_id", "eval_file").rows() == [
        ("leak", "contaminated", None, "gsm_like.jsonl")
    ]
    assert result.funnel["contaminated"] == 1 and result.funnel["published"] == 1
