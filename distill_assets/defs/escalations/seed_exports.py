"""The seed's dated JSONL exports, written into every published version (a release extra).

`exports/instruction_YYYYMMDD.jsonl`, `preference_…`, `cot_…`, `correction_…`
(docs/sources/escalations.md#seed-jsonl-exports), each with exactly the original export keys per
line, from the escalation rows of the configs being published (both splits, ordered by id). YYYYMMDD
is the newest input partition of the release (`00000000` before any), never the wall clock, so a
re-built version is byte-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import polars as pl

SOURCE = "escalations"
EXPORTS_DIR = "exports"
NO_DATE = "00000000"
# seed export name -> (release config, the seed's keys)
SEED_EXPORTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "instruction": ("instruction", ("instruction", "input", "output")),
    "preference": ("dpo", ("prompt", "chosen", "rejected")),
    "cot": ("cot", ("instruction", "input", "output")),
    "correction": ("correction", ("instruction", "input", "output")),
}


def _seed_text(key: str, dtype: pl.DataType) -> pl.Expr:
    """Return a published column as the seed's plain string (messages: their contents joined).

    `dpo` publishes conversational pairs (one message per side); the seed's preference lines hold
    the strings.
    """
    if isinstance(dtype, pl.List):
        contents = pl.col(key).list.eval(pl.element().struct.field("content"))
        return contents.list.join("\n\n").alias(key)
    return pl.col(key)


def write_seed_exports(
    curated: Mapping[str, pl.DataFrame], newest_partition: str | None, out_dir: Path
) -> list[Path]:
    """Write the four seed exports that have rows; return their paths."""
    day = newest_partition.replace("-", "") if newest_partition else NO_DATE
    written = []
    for name, (config, keys) in SEED_EXPORTS.items():
        frame = curated.get(config)
        if frame is None or frame.is_empty():
            continue
        rows = (
            frame.filter(pl.col("source") == SOURCE)
            .sort("id")
            .select(_seed_text(key, frame.schema[key]) for key in keys)
        )
        if rows.is_empty():
            continue
        path = out_dir / EXPORTS_DIR / f"{name}_{day}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        rows.write_ndjson(path)
        written.append(path)
    return written
