"""Data taxonomy: the five value classes of telemetry rows (docs/sources/telemetry.md#taxonomy).

Every telemetry feed row gets `metadata.value_class`, the first matching rule deciding:
- `ambiguity_resolution` (class 1, "decisions where multiple valid value systems conflict"): a
  decision pair whose ambiguity_score is above AMBIGUITY_ABOVE (the triage threshold);
- `novel_strategy_generation` (class 2, "innovation quests"): an episode or reasoning trace whose
  episode / scenario id starts with INNOVATION_PREFIX;
- `social_manipulation_deception` (class 3, "multi-turn persuasion ... merchant negotiation"): a
  player-NPC dialogue (every `sft` row: 3+ exchanges);
- `embodied_failure_recovery` (class 5, "failures and micro-corrections", hard negatives): an
  episode that ended in failure, and every hard-negative episode pair;
- `long_horizon_causal_chains` (class 4, "delayed consequences, chain-of-thought, planning"):
  everything else - successful or truncated episodes, decision pairs at or below the ambiguity
  threshold (a choice judged by its later outcome), reasoning traces.
"""

from __future__ import annotations

AMBIGUITY_ABOVE = 0.7
INNOVATION_PREFIX = "innovation"
VALUE_CLASSES: tuple[str, ...] = (
    "ambiguity_resolution",
    "novel_strategy_generation",
    "social_manipulation_deception",
    "long_horizon_causal_chains",
    "embodied_failure_recovery",
)
