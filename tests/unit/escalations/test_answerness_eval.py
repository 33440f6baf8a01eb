"""The answer-ness model on the labelled escalations (`bench/_escalation_labels.py`): pinned.

`python -m bench.answerness` prints these figures; the docs record them. Per split and kind the
number of rows kept out by the answer-ness model and out of every export is pinned (a change of
one row fails), and the issue 27 targets are asserted on every split: >= 90 % of junk kept out of
every export, >= 95 % of genuine answers kept by the answer-ness model and in the exports (the
quality minimum included).
"""

from __future__ import annotations

import polars as pl
import pytest

from bench.answerness import evaluate, kind_table, summary

# (split, kind): (rows, kept out by answer-ness, kept out of every export)
PINNED: dict[tuple[str, str], tuple[int, int, int]] = {
    ("tune", "acknowledgement"): (16, 16, 16),
    ("tune", "bug_report"): (16, 16, 16),
    ("tune", "dont_know"): (12, 12, 12),
    ("tune", "pasted_log"): (16, 16, 16),
    ("tune", "question_back"): (16, 16, 16),
    ("tune", "shell_command"): (16, 16, 16),
    ("tune", "user_request"): (16, 16, 16),
    ("tune", "user_wish"): (14, 14, 14),
    ("tune", "code_only"): (16, 0, 0),
    ("tune", "code_with_prose"): (16, 0, 0),
    ("tune", "conversational"): (16, 0, 0),
    ("tune", "explanation"): (16, 0, 0),
    ("tune", "first_then_finally"): (16, 0, 0),
    ("tune", "hedged"): (16, 0, 0),
    ("tune", "markdown_headers"): (16, 0, 0),
    ("tune", "numbered_steps"): (16, 0, 0),
    ("tune", "short_factual"): (16, 0, 0),
    ("holdout", "acknowledgement"): (6, 6, 6),
    ("holdout", "bug_report"): (14, 13, 14),
    ("holdout", "dont_know"): (6, 6, 6),
    ("holdout", "pasted_log"): (6, 6, 6),
    ("holdout", "question_back"): (6, 6, 6),
    ("holdout", "shell_command"): (6, 6, 6),
    ("holdout", "user_request"): (14, 12, 12),
    ("holdout", "user_wish"): (12, 12, 12),
    ("holdout", "code_only"): (6, 0, 0),
    ("holdout", "code_with_prose"): (6, 0, 0),
    ("holdout", "conversational"): (6, 0, 0),
    ("holdout", "explanation"): (6, 0, 0),
    ("holdout", "first_then_finally"): (6, 0, 0),
    ("holdout", "hedged"): (6, 0, 0),
    ("holdout", "markdown_headers"): (6, 0, 0),
    ("holdout", "numbered_steps"): (6, 0, 0),
    ("holdout", "short_factual"): (6, 0, 0),
    ("fresh", "acknowledgement"): (4, 4, 4),
    ("fresh", "bug_report"): (8, 8, 8),
    ("fresh", "dont_know"): (4, 4, 4),
    ("fresh", "pasted_log"): (4, 4, 4),
    ("fresh", "question_back"): (4, 4, 4),
    ("fresh", "shell_command"): (4, 4, 4),
    ("fresh", "user_request"): (8, 8, 8),
    ("fresh", "user_wish"): (8, 8, 8),
    ("fresh", "code_only"): (4, 0, 0),
    ("fresh", "code_with_prose"): (4, 0, 0),
    ("fresh", "conversational"): (4, 0, 0),
    ("fresh", "explanation"): (4, 0, 0),
    ("fresh", "first_then_finally"): (4, 0, 0),
    ("fresh", "hedged"): (4, 0, 0),
    ("fresh", "markdown_headers"): (4, 0, 0),
    ("fresh", "numbered_steps"): (4, 0, 0),
    ("fresh", "short_factual"): (4, 0, 0),
}


@pytest.fixture(scope="module")
def decided() -> pl.DataFrame:
    return evaluate()


def test_the_labelled_set_has_at_least_300_rows_of_every_kind(decided: pl.DataFrame) -> None:
    assert decided.height == 470
    assert decided.group_by("label").len().sort("label").rows() == [("answer", 234), ("junk", 236)]


def test_per_kind_figures_are_pinned(decided: pl.DataFrame) -> None:
    table = kind_table(decided).with_columns(
        (pl.col("answerness_out") * pl.col("rows")).round().cast(pl.Int64),
        (pl.col("export_out") * pl.col("rows")).round().cast(pl.Int64),
    )
    found = {(r[0], r[2]): (r[3], r[4], r[5]) for r in table.rows()}
    assert found == PINNED


def test_the_targets_hold_on_every_split(decided: pl.DataFrame) -> None:
    figures = summary(decided)
    exports = figures.filter(pl.col("decider") == "export")
    answerness = figures.filter(pl.col("decider") == "answerness")
    assert exports.get_column("junk_kept_out").min() >= 0.9
    assert answerness.get_column("answers_kept").min() >= 0.95
    assert exports.get_column("answers_kept").min() >= 0.95
    overall = answerness.filter(pl.col("split") == "all").row(0, named=True)
    assert overall["junk_kept_out"] == pytest.approx(233 / 236, abs=1e-9)
    assert overall["precision_kept_out"] == pytest.approx(1.0, abs=1e-9)
    # every genuine answer reaches the exports (short code answers included); the two junk rows
    # that do are the pasted config the answer-ness model misses ("use this config for it")
    overall = exports.filter(pl.col("split") == "all").row(0, named=True)
    assert overall["junk_kept_out"] == pytest.approx(234 / 236, abs=1e-9)
    assert overall["answers_kept"] == pytest.approx(1.0, abs=1e-9)
    assert overall["precision_kept_out"] == pytest.approx(1.0, abs=1e-9)
