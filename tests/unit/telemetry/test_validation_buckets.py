"""Validation judges a large day's bot signatures in buckets of players, with the same rows."""

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from distill_assets.defs.telemetry import validation
from distill_assets.defs.telemetry.validation import validate_events

T0 = 1_800_000_000.0


def events() -> pl.LazyFrame:
    """A regular bot (1 event every 10 s), a fast one (10 a second), a human, a skewed clock."""
    rows = [(f"r{i:02d}", "regular", T0 + 10.0 * i) for i in range(25)]
    rows += [(f"f{i:02d}", "fast", T0 + 0.1 * i) for i in range(22)]
    rows += [(f"h{i:02d}", "human", T0 + 7.0 * i + (i % 3) * 11.0) for i in range(25)]
    return pl.LazyFrame(
        {
            "event_id": [r[0] for r in rows],
            "event_type": ["outcome"] * len(rows),
            "player_key": [r[1] for r in rows],
            "session_id": ["s"] * len(rows),
            "client_ts": [r[2] - (400.0 if r[0] == "h03" else 0.0) for r in rows],
            "server_ts": [r[2] for r in rows],
            "payload": ["{}"] * len(rows),
        }
    )


def test_bot_buckets_give_the_rows_of_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = validate_events(events())
    monkeypatch.setattr(validation, "BOT_BUCKET_ROWS", 7)
    bucketed = validate_events(events())
    assert_frame_equal(bucketed, whole)
    bots = whole.filter(pl.col("check") == "bot_signature")
    assert bots.group_by("player_key").len().sort("player_key").rows() == [
        ("fast", 22),
        ("regular", 25),
    ]
    signatures = bots.select("player_key", pl.col("reason").str.extract(r"^([a-z_+]+) ")).unique()
    assert signatures.sort("player_key").rows() == [
        ("fast", "inhuman_action_rate+regular_intervals"),
        ("regular", "regular_intervals"),
    ]
    assert whole.filter(pl.col("check") != "bot_signature").select("event_id", "check").rows() == [
        ("h03", "clock_skew")
    ]
