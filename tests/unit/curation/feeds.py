"""Synthetic feed tables for curation and release tests (no dependency on the source rooms)."""

from __future__ import annotations

import json

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.lib.lake import partition_path, write_parquet_atomic


def feed_row(
    config: str,
    row_id: str,
    text: str,
    *,
    source: str,
    group: str,
    score: float = 0.5,
    event_time: float = 0.0,
    metadata: dict[str, object] | None = None,
) -> dict[str, object]:
    """Return one feed row of `config` whose content is derived from `text`."""
    core: dict[str, object] = {
        "sft": {
            "messages": [
                {"role": "user", "content": text},
                {"role": "assistant", "content": f"answer to {text}"},
            ]
        },
        "dpo": {"prompt": text, "chosen": f"good {text}", "rejected": f"bad {text}"},
        "instruction": {"instruction": text, "input": "", "output": f"output for {text}"},
    }[config]
    return {
        "id": row_id,
        "source": source,
        "source_ref": f"{source}/{row_id}",
        "quality_score": score,
        "metadata": json.dumps(metadata or {"n": row_id}, sort_keys=True),
        **core,
        "split_group": group,
        "event_time": event_time,
    }


def feed_frame(config: str, rows: list[dict[str, object]]) -> pl.DataFrame:
    """Return rows as a frame with exactly the feed schema of `config`."""
    return pl.DataFrame(rows, schema=feed_schema(config))


def write_feed(lake_root: str, source: str, table: str, day: str, frame: pl.DataFrame) -> None:
    """Write one partition of a feed table into the lake."""
    write_parquet_atomic(frame, partition_path(lake_root, source, table, day))
