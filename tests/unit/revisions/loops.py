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
    """Return seed 002's example loop."""
    return loop(
        turn, LAPTOP_QUERY, LAPTOP_ORIGINAL, LAPTOP_REVISED, LAPTOP_HINTS, focus="formatting", ts=ts
    )


def pairs_of(validations: list[dict[str, object]]) -> pl.DataFrame:
    """Return the `dpo` revision pairs of some validations."""
    pairs, _ = pair_turns(pl.DataFrame(validations, schema=VALIDATIONS_SCHEMA).lazy())
    return pairs
