"""Build `distillation_examples` from a few inline records (the unit tests' one helper)."""

from __future__ import annotations

from typing import Any

import polars as pl

from distill_assets.contracts.escalations import RECORD_SCHEMA
from distill_assets.defs.escalations.examples import distillation_examples

SOURCE_FILE = "escalations/2026-11-19/a.jsonl"
CREATED_AT = 1795076100.0


def example_frame(
    *records: dict[str, Any], id_prefix: str = "e", query: str = "q", time_step: float = 0.0
) -> pl.DataFrame:
    """Return the examples of `records` (bronze fields over defaults; line n gets id
    `<id_prefix><n>` and created_at `CREATED_AT + n * time_step`; `{n}` in `query` is the line)."""
    rows = []
    for line_no, fields in enumerate(records, start=1):
        row: dict[str, Any] = dict.fromkeys(RECORD_SCHEMA)
        row.update(
            source_file=SOURCE_FILE,
            line_no=line_no,
            utf8_replaced=False,
            id=f"{id_prefix}{line_no}",
            id_derived=False,
            created_at=CREATED_AT + line_no * time_step,
            query=query.format(n=line_no),
        )
        row.update(fields)
        rows.append(row)
    return distillation_examples(pl.DataFrame(rows, schema=RECORD_SCHEMA).lazy()).collect()
