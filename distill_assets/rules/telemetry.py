"""Telemetry rules (docs/sources/telemetry.md#dialogues).

Which conversations become SFT rows, how their turns become messages, and their quality score.

- A conversation qualifies with at least `MIN_EXCHANGES` exchanges (seed capture trigger: "Any
  player-NPC dialogue lasting 3+ exchanges"). An exchange is a player turn followed by an NPC turn,
  counted after consecutive same-speaker turns are merged (joined with `TURN_JOINER`) and after
  leading NPC turns and trailing player turns are trimmed, i.e. the number of assistant messages.
- `quality_score` (0..1, deterministic) weighs what the seed's data value hierarchy values:
  `depth` = min(exchanges / DEPTH_SATURATION_EXCHANGES, 1) - longer negotiations carry more theory
  of mind; `ambiguity` = AMBIGUITY_WEIGHTS[ambiguity_level] (0 when unknown) - "ambiguity
  resolution" is the highest-value class; `effort` = min(mean player message characters /
  EFFORT_SATURATION_CHARS, 1) - low-effort one-word replies teach little.
  score = round(Σ WEIGHTS[k] · k, SCORE_DECIMALS).
"""

from __future__ import annotations

import polars as pl

MIN_EXCHANGES = 3
TURN_JOINER = "\n"
DEPTH_SATURATION_EXCHANGES = 6
EFFORT_SATURATION_CHARS = 160
AMBIGUITY_WEIGHTS: dict[str, float] = {"Low": 0.25, "Medium": 0.5, "High": 0.75, "Critical": 1.0}
WEIGHTS: dict[str, float] = {"depth": 0.35, "ambiguity": 0.35, "effort": 0.30}
SCORE_DECIMALS = 4


def dialogue_quality_score(
    exchanges: pl.Expr, ambiguity_level: pl.Expr, mean_player_chars: pl.Expr
) -> pl.Expr:
    """Return the dialogue quality score expression (see the module docstring)."""
    depth = (exchanges.cast(pl.Float64) / DEPTH_SATURATION_EXCHANGES).clip(0.0, 1.0)
    ambiguity = ambiguity_level.replace_strict(
        AMBIGUITY_WEIGHTS, default=0.0, return_dtype=pl.Float64
    )
    effort = (mean_player_chars.cast(pl.Float64).fill_null(0.0) / EFFORT_SATURATION_CHARS).clip(
        0.0, 1.0
    )
    score = WEIGHTS["depth"] * depth + WEIGHTS["ambiguity"] * ambiguity + WEIGHTS["effort"] * effort
    return score.round(SCORE_DECIMALS)
