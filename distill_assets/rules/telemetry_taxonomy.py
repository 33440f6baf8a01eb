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

Payouts may weight by class: a paid task (docs/sources/telemetry.md#payouts) is classed as the
rows it feeds - a decision by its ambiguity_score (`ambiguity_resolution` above AMBIGUITY_ABOVE,
else `long_horizon_causal_chains`), an episode as above (`novel_strategy_generation` for an
innovation id, `embodied_failure_recovery` when it ended in failure, else
`long_horizon_causal_chains`) - and its payout is multiplied by PAYOUT_WEIGHTS[class]. The seed
gives the classes' projected value but no prices, so every weight is 1.0: payouts are the seed's
formula unchanged until the weights are set here.
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
# value class -> payout multiplier (1.0 each: the seed's formula unchanged)
PAYOUT_WEIGHTS: dict[str, float] = {
    "ambiguity_resolution": 1.0,
    "novel_strategy_generation": 1.0,
    "social_manipulation_deception": 1.0,
    "long_horizon_causal_chains": 1.0,
    "embodied_failure_recovery": 1.0,
}
