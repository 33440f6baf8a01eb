"""Tiny silver (`telemetry/accepted_events`) frames shared by the trust and payout unit tests."""

from __future__ import annotations

import json

import polars as pl


def silver(
    rows: list[tuple[str, str, float, str, dict]], partition: str | None = None
) -> pl.LazyFrame:
    """Return silver rows `(event_id, player_key, event_time, event_type, payload)` in order.

    With `partition`, every row also carries that ingest day (`partition` column).
    """
    frame = pl.LazyFrame(
        {
            "event_id": [r[0] for r in rows],
            "player_key": [r[1] for r in rows],
            "event_time": [r[2] for r in rows],
            "event_seq": list(range(len(rows))),
            "event_type": [r[3] for r in rows],
            "payload": [json.dumps(r[4]) for r in rows],
        }
    )
    return frame if partition is None else frame.with_columns(partition=pl.lit(partition))
