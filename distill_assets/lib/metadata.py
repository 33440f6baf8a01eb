"""Materialization metadata a data engineer reads in the UI: funnels, histograms, previews.

Previews are scrubbed like published text (`preview`).
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
import polars as pl

from distill_assets.lib.scrub import scrub

HISTOGRAM_BINS = 10


def funnel(counts: Mapping[str, int], label: str = "reason") -> dg.MetadataValue:
    """Render value → count as a Markdown table whose first column is headed `label`.

    The default is for drop or quarantine reasons; counts of anything else (splits, tools,
    kinds) name what they count, so the UI's table header says what the column holds.
    """
    rows = "\n".join(f"| {value} | {count} |" for value, count in sorted(counts.items()))
    return dg.MetadataValue.md(f"| {label} | rows |\n| --- | --- |\n{rows}" if rows else "none")


def reason_counts(frame: pl.DataFrame | pl.LazyFrame, column: str = "reason") -> dict[str, int]:
    """Count rows per value of `column` (a reason code)."""
    lazy = frame.lazy() if isinstance(frame, pl.DataFrame) else frame
    counted = lazy.group_by(column).agg(pl.len().alias("n")).collect()
    return {str(r): int(n) for r, n in counted.iter_rows()}


def column_counts(
    frame: pl.DataFrame | pl.LazyFrame, column: str, label: str | None = None
) -> dg.MetadataValue:
    """Render the rows per value of `column` as a table headed by what it counts.

    The header is `label`, else the column's name in words (`event_type` → "event type").
    """
    return funnel(reason_counts(frame, column), label or column.replace("_", " "))


def histogram(values: pl.Series, lo: float = 0.0, hi: float = 1.0) -> dg.MetadataValue:
    """Render a fixed-range histogram of scores in [lo, hi] as a Markdown table."""
    clean = values.drop_nulls().cast(pl.Float64)
    if clean.is_empty():
        return dg.MetadataValue.md("no scores")
    width = (hi - lo) / HISTOGRAM_BINS
    bins = ((clean - lo) / width).floor().clip(0, HISTOGRAM_BINS - 1).cast(pl.Int64)
    counts = dict(bins.value_counts().iter_rows())
    lines = [
        f"| [{lo + i * width:.1f}, {lo + (i + 1) * width:.1f}) | {counts.get(i, 0)} |"
        for i in range(HISTOGRAM_BINS)
    ]
    return dg.MetadataValue.md("| score | rows |\n| --- | --- |\n" + "\n".join(lines))


def preview(frame: pl.DataFrame, rows: int = 5, width: int = 80) -> dg.MetadataValue:
    """Render the first rows as Markdown, scrubbed, long cells cut to `width` characters.

    A preview is stored in the Dagster instance (run storage, shown in the UI), which is not a
    scrubbed place: every cell goes through the release's scrubber (`lib/scrub.py`) before it
    is cut, so no secret or personal datum, nor the start of one, is stored.
    """
    # Lists and structs (e.g. chat `messages`) cannot be cast to String: show them as JSON.
    text = frame.head(rows).select(
        (
            pl.struct(pl.col(name).alias("v"))
            .struct.json_encode()
            .str.strip_prefix('{"v":')
            .str.strip_suffix("}")
            if dtype.is_nested()
            else pl.col(name).cast(pl.String, strict=False)
        ).alias(name)
        for name, dtype in frame.schema.items()
    )
    columns = dict.fromkeys(text.columns, pl.String())
    head = (
        scrub(text.lazy(), columns)
        .select(pl.col(name).str.slice(0, width) for name in text.columns)
        .collect()
    )
    if head.is_empty():
        return dg.MetadataValue.md("no rows")
    header = "| " + " | ".join(head.columns) + " |\n|" + " --- |" * len(head.columns)
    body = "\n".join(
        "| "
        + " | ".join(("" if v is None else v.replace("|", "\\|").replace("\n", " ")) for v in r)
        + " |"
        for r in head.iter_rows()
    )
    return dg.MetadataValue.md(f"{header}\n{body}")
