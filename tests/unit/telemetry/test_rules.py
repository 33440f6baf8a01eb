"""The dialogue quality score (rules/telemetry.py)."""

import polars as pl
import pytest

from distill_assets.rules.telemetry import dialogue_quality_score


@pytest.mark.parametrize(
    ("exchanges", "ambiguity", "mean_chars", "expected"),
    [
        (3, "High", 80.0, 0.5875),  # 0.35·0.5 + 0.35·0.75 + 0.30·0.5
        (6, "Critical", 160.0, 1.0),
        (12, "Critical", 900.0, 1.0),  # every component saturates at 1
        (3, "Low", 40.0, 0.35 * 0.5 + 0.35 * 0.25 + 0.30 * 0.25),
        (4, None, None, round(0.35 * 4 / 6, 4)),  # unknown ambiguity and no player text count 0
        (5, "Unheard-of", 16.0, round(0.35 * 5 / 6 + 0.30 * 0.1, 4)),
    ],
)
def test_quality_score(
    exchanges: int, ambiguity: str | None, mean_chars: float | None, expected: float
) -> None:
    frame = pl.DataFrame(
        {"exchanges": [exchanges], "ambiguity": [ambiguity], "chars": [mean_chars]},
        schema={"exchanges": pl.UInt32, "ambiguity": pl.String, "chars": pl.Float64},
    )
    score = frame.select(
        dialogue_quality_score(pl.col("exchanges"), pl.col("ambiguity"), pl.col("chars"))
    ).item()
    assert score == pytest.approx(expected, abs=1e-9)
