"""Decision preference pair rules (docs/sources/telemetry.md#decisions-and-pairs).

Pairs are formed within one ingest partition from triaged (process | sample) decisions that have
an outcome:
- `ghost_replay`: decisions of different players on the same `scenario_id` (the expert's original
  and a novice's replay share it), with different chosen options and different outcomes (reward or
  label). Decisions of a scenario are ranked by reward (desc), the player's trust (desc, unknown
  last), then event_id; each decision is paired with the next MAX_PARTNERS ranked decisions that
  qualify as partner, the better-ranked one chosen - so a decision is in at most 2 x MAX_PARTNERS
  ghost pairs and the pairing is deterministic.
- `counterfactual`: within one decision, the chosen option vs an alternative whose counterfactual
  outcome is known (an `outcome` with that `option_id`) and whose reward differs; the option with
  the higher reward is chosen. At most MAX_PARTNERS per decision (by option_id).
quality_score = round(AMBIGUITY_WEIGHT x ambiguity_score + REWARD_WEIGHT x min(|reward_diff| /
REWARD_SCALE, 1), SCORE_DECIMALS): ambiguous decisions with clearly different outcomes teach most.
"""

from __future__ import annotations

MAX_PARTNERS = 2
AMBIGUITY_WEIGHT = 0.5
REWARD_WEIGHT = 0.5
REWARD_SCALE = 1.0
SCORE_DECIMALS = 4
PASS_DECISIONS: tuple[str, ...] = ("process", "sample")
