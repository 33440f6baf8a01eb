"""Chain-of-thought rules (docs/sources/telemetry.md#reasoning).

A `reasoning` event becomes one `cot` row. It is linked to the decision it explains when a
triaged decision of the same player in the same partition has its `scenario_id` (the earliest one).
quality_score = round(STEPS_WEIGHT x min(thought steps / STEPS_SATURATION, 1)
    + OUTCOME_WEIGHT x [an outcome is known] + LINK_WEIGHT x [linked to a decision], SCORE_DECIMALS)
- more explicit steps, a known result and a known situation make a trace more useful to train on.
"""

from __future__ import annotations

STEPS_SATURATION = 5
STEPS_WEIGHT = 0.6
OUTCOME_WEIGHT = 0.2
LINK_WEIGHT = 0.2
SCORE_DECIMALS = 4
