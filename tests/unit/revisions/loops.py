"""Build validation loops and their revision pairs for the principle tests (tiny, inline)."""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.revisions import VALIDATIONS_SCHEMA
from distill_assets.defs.revisions.pairing import pair_turns

LAPTOP_QUERY = "find the cheapest gaming laptops"
LAPTOP_ORIGINAL = (
    "The MSI Thin costs $749.99 at Amazon. The ASUS TUF Dash F15 costs $799.99 at Best Buy. "
    "The Lenovo IdeaPad Gaming 3 costs $649.99 at Amazon."
)
LAPTOP_REVISED = (
    "| Laptop | Price | Retailer |\n|--------|-------|----------|\n"
    "| Lenovo IdeaPad Gaming 3 | $649.99 | Amazon |\n| MSI Thin | $749.99 | Amazon |\n"
    "| ASUS TUF Dash F15 | $799.99 | Best Buy |"
)
LAPTOP_HINTS = ("Use table format for price comparisons",)


def loop(
    turn: str,
    query: str,
    original: str,
    revised: str,
    hints: tuple[str, ...],
    *,
    focus: str | None = None,
    ts: float = 1_795_076_043.0,
) -> list[dict[str, object]]:
    """Return the two validations of a REVISE → APPROVE turn."""

    def validation(iteration: int, decision: str, response: str) -> dict[str, object]:
        ref = f"revisions/2026-11-19/a.jsonl:{turn}.{iteration}"
        return {
            "id": ref,
            "source": "revisions",
            "source_ref": ref,
            "source_file": "revisions/2026-11-19/a.jsonl",
            "line_no": iteration,
            "utf8_replaced": False,
            "turn_id": turn,
            "ts": ts + iteration,
            "iteration": iteration,
            "decision": decision,
            "query": query,
            "response": response,
            "revision_hints": list(hints) if decision == "REVISE" else [],
            "revision_focus": focus if decision == "REVISE" else None,
            "extra": "{}",
        }

    return [validation(1, "REVISE", original), validation(2, "APPROVE", revised)]


def laptop_loop(turn: str = "turn_001234", ts: float = 1_795_076_043.0) -> list[dict[str, object]]:
    """Return the original revisions example loop."""
    return loop(
        turn, LAPTOP_QUERY, LAPTOP_ORIGINAL, LAPTOP_REVISED, LAPTOP_HINTS, focus="formatting", ts=ts
    )


def pairs_of(validations: list[dict[str, object]]) -> pl.DataFrame:
    """Return the `dpo` revision pairs of some validations."""
    pairs, _ = pair_turns(pl.DataFrame(validations, schema=VALIDATIONS_SCHEMA).lazy())
    return pairs


BULLETS = "1. Open the settings\n2. Choose Network\n3. Press Reset\n"
TABLE = "| Option | Score |\n|---|---|\n| A | 1 |\n| B | 2 |"
SOURCES = "It is 72 hours [1].\n\n[1] https://example.org/law"
# (query, original, revised, hints, focus): lessons on topics other than price comparisons
OTHER_TOPICS: tuple[tuple[str, str, str, tuple[str, ...], str | None], ...] = (
    ("how do I reset my router", "Open settings then reset.", BULLETS, ("Number the steps",), None),
    ("summarize the quarterly report", "x " * 300, "Revenue grew 4%.", ("Shorter",), None),
    ("my order arrived broken", "Send a photo.", "Sorry! Send a photo.", ("Apologize",), "tone"),
    ("what does HIPAA require for records", "Keep them safe.", SOURCES, ("Cite it",), None),
    ("how far is the moon", "1,000 km.", "About 384,400 km.", ("That is wrong",), "accuracy"),
    ("fix this python function", "Use a loop.", "Use `range(n)`.", ("Wrong index",), "accuracy"),
    ("recommend a beginner camera", "Any.", "A used Canon R50.", ("Mention a model",), None),
    ("explain recursion to a child", "It recurses.", "Dolls in dolls.", ("Avoid jargon",), None),
    ("is it safe to mix bleach and ammonia", "Yes.", "No: toxic gas.", ("Add a warning",), None),
    ("write a tweet about our launch", "We launched.", "We launched! 🚀", ("Be warmer",), "tone"),
    ("draft an email declining the offer", "No.", "Thank you, but no.", ("Be polite",), "tone"),
    ("who wrote pride and prejudice", "Bronte.", "Jane Austen.", ("Incorrect author",), None),
    ("translate hello into japanese", "Hola.", "Konnichiwa.", ("Wrong language",), "accuracy"),
    ("plan a three day trip to rome", "See Rome.", "Day 1: Forum.", ("Include each day",), None),
    ("list the planets of the solar system", "Earth, Mars.", BULLETS, ("Make a list",), None),
    ("explain how vaccines work", "Magic.", "They train immunity.", ("Clarify",), "clarity"),
    ("give me a sql query for top customers", "Use SQL.", "SELECT ...", ("Show code",), None),
    ("when did the berlin wall fall", "1991.", "1989.", ("Wrong year",), None),
    ("describe the water cycle", "Rain.", "Evaporation, condensation.", ("More steps",), None),
    ("what are the symptoms of flu", "Cough.", "Fever, cough.", ("Add a disclaimer",), None),
    ("rate these three project ideas", "All good.", TABLE, ("Use a table",), "formatting"),
    ("name a good sorting algorithm", "Bubble.", "Merge sort.", ("Be accurate",), None),
    ("compare python and rust for web servers", "Rust is faster.", TABLE, ("Use a table",), None),
    ("convert 5 miles to kilometers", "5 km.", "8.05 km.", ("Units are wrong",), None),
    ("tips for better sleep", "Sleep more.", BULLETS, ("Use a list",), None),
    ("outline a blog post on composting", "Compost.", "## Intro\n## Steps\n", ("Headings",), None),
)


def other_topic_loops() -> list[dict[str, object]]:
    """Return one REVISE → APPROVE turn per entry of `OTHER_TOPICS`."""
    return [
        validation
        for index, (query, original, revised, hints, focus) in enumerate(OTHER_TOPICS)
        for validation in loop(
            f"turn_{index:06d}",
            query,
            original,
            revised,
            hints,
            focus=focus,
            ts=1_795_000_000.0 + 100 * index,
        )
    ]
