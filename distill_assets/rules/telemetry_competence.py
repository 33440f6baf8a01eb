"""Competence filter rules (docs/sources/telemetry.md#competence).

Every episode gets a score in [0, 1]: the game's own `competence_score` when its `episode_end`
carries one (`score_source` = `game`), else the cosine similarity between the episode's text (its
action types and step instructions, in step order) and its task description under the project's
embedder (`score_source` = `embedder`) - distill's offline stand-in for the seed's MineCLIP-style
reward model, which compares gameplay to a text description.

Class and reason, the first matching rule deciding:
- `expert` (`score_above_expert_threshold`): score > EXPERT_ABOVE - demonstrations for behaviour
  cloning / SFT;
- `noise` (`score_below_noise_threshold`): score < NOISE_BELOW - discarded, never published;
- `hard_negative` (`late_failure_after_high_reward`): the episode ended in failure, its score is
  in the seed's hard-negative band [NOISE_BELOW, HARD_NEGATIVE_AT_MOST] ("0.40-0.70 + failure ->
  Hard Negative for DPO"), and the highest step reward over its first (1 - LATE_FAILURE_FRACTION)
  of steps is above HIGH_INTERMEDIATE_FRACTION x REWARD_MAX (the seed's definition: "high
  intermediate reward but terminal failure", failing in the final 20% of steps) - paired with the
  MAX_PARTNERS best-scored successful, published episodes of the same task as `dpo` rows (chosen =
  the success). The band reads the score whatever its source: where the game supplies no
  `competence_score`, the embedder cosine stands in for the seed's similarity on the same [0, 1]
  scale (docs/sources/telemetry.md#competence). A failure scored above the band is `ordinary`.
- `ordinary` (`between_thresholds`): everything else.
A truncated episode (no `episode_end`) is never a hard negative (its end is unknown).
"""

from __future__ import annotations

EXPERT_ABOVE = 0.85
NOISE_BELOW = 0.40
HARD_NEGATIVE_AT_MOST = 0.70
HIGH_INTERMEDIATE_FRACTION = 0.70
LATE_FAILURE_FRACTION = 0.20
REWARD_MAX = 1.0  # the games' step reward scale (rewards are in [0, REWARD_MAX])
SCORE_DECIMALS = 4
MAX_PARTNERS = 2
CLASSES: tuple[str, ...] = ("expert", "hard_negative", "ordinary", "noise")
REASONS: dict[str, str] = {
    "expert": "score_above_expert_threshold",
    "noise": "score_below_noise_threshold",
    "hard_negative": "late_failure_after_high_reward",
    "ordinary": "between_thresholds",
}
# published configs per class (noise is discarded)
PUBLISHED_CLASSES: tuple[str, ...] = ("expert", "hard_negative", "ordinary")
