"""The curation funnel of a config: rows left after each stage, for metadata and the card.

Stages, in order: `rows_in` → `scrubbed` (after removal by subject) → `exact_duplicate` →
`near_duplicate` → `semantic_duplicate` → `contaminated` → `below_threshold` → `published`; each
holds the rows left after it. The curation asset writes it to the global lake table
`curation/<config>_funnel` (`stage, rows`, in order), which the release reads for the card.
"""

from __future__ import annotations

import dagster as dg
import polars as pl
from upath import UPath

from distill_assets.lib.lake import global_path, write_parquet_atomic

FUNNEL_SCHEMA = {"stage": pl.String(), "rows": pl.Int64()}


def funnel_path(lake_root: str, config: str) -> UPath:
    """Return the lake file of a config's funnel."""
    return global_path(lake_root, "curation", f"{config}_funnel")


def write_funnel(lake_root: str, config: str, stages: dict[str, int]) -> None:
    """Write a config's funnel (stage order kept) atomically."""
    frame = pl.DataFrame(
        {"stage": list(stages), "rows": list(stages.values())}, schema=FUNNEL_SCHEMA
    )
    write_parquet_atomic(frame, funnel_path(lake_root, config))


def read_funnel(lake_root: str, config: str) -> dict[str, int]:
    """Return a config's funnel as written by curation (empty when it was never written)."""
    path = funnel_path(lake_root, config)
    if not path.exists():
        return {}
    with path.open("rb") as handle:
        frame = pl.read_parquet(handle)
    return {str(stage): int(rows) for stage, rows in frame.iter_rows()}


def funnel_table(stages: dict[str, int]) -> dg.MetadataValue:
    """Render the funnel as a Markdown table: stage, rows left, rows removed by the stage."""
    lines, previous = [], None
    for stage, rows in stages.items():
        removed = "" if previous is None else str(previous - rows)
        lines.append(f"| {stage} | {rows} | {removed} |")
        previous = rows
    return dg.MetadataValue.md("| stage | rows | removed |\n|---|---|---|\n" + "\n".join(lines))
