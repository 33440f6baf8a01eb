"""Player trust and payouts (docs/sources/telemetry.md#trust): trust, quality and payout formulas.

Trust C(player), recomputed from all history in event-time order (server_ts, then event_id):
starts at INITIAL_TRUST (the seed gives the range but no start; 0.5 is its midpoint, neither
trusted nor distrusted) and moves by TRUST_DELTAS per signal, clamped to [TRUST_MIN, TRUST_MAX]
after every update:
- gold standard: a `gold_standard_result` event, passed or failed;
- peer prediction: the responses of one `pairing_id` (each player's latest choice; a lone response
  carrying `peer_choice` counts the peer's choice as a second response) are clustered by choice; a
  response in the strictly largest cluster is a match, one in a smaller cluster a mismatch, and a
  tie for the largest cluster is no signal (the seed's edge case: "cluster responses, pay if in
  majority cluster"). The client's own `matched` claim is not trusted.
A player is flagged `gold_accuracy_below_70` when their gold-standard accuracy is below
GOLD_ACCURACY_FLAG, and `bot_signature` when validation rejected them as a bot on any day.

Payout per task = BASE_RATES[task type] * U * (1 + NOVELTY_LAMBDA * H) * C:
- tasks: a decision with its outcome (`decision`), an episode with its `episode_end` (`episode`);
- U: success 1.0; high-quality failure HIGH_QUALITY_FAILURE_UTILITY; low-effort failure 0.0.
  A decision's outcome label in SUCCESS_LABELS is success, in NEAR_MISS_LABELS a high-quality
  failure, anything else a low-effort failure. A failed episode is a high-quality failure when its
  highest step reward before the last step is above NEAR_MISS_REWARD_FRACTION of MAX_STEP_REWARD
  and it failed in the final NEAR_MISS_FINAL_FRACTION of its steps (its last step index + 1 is at
  least (1 - NEAR_MISS_FINAL_FRACTION) * total_steps);
- H: the surprisal -ln p of the chosen option under the decision's ai_policy_probs (normalised to
  sum 1; the KL divergence of the player's choice from the AI policy), divided by the surprisal of
  NOVELTY_FLOOR_PROBABILITY (the seed's "<0.01% probability" novel strategies) and clipped to
  [0, 1]; 0 where no policy is given (episodes);
- C: the player's trust after every signal up to and including the task's time.
A decision pays zero, whatever the formula gives, when the player's peer-prediction response on
its scenario is a mismatch (seed, Validation Mechanism 1, payoff_matrix: "mismatch: Zero SILA");
the payout row names PEER_MISMATCH_REASON among its `zero_reasons`
(docs/sources/telemetry.md#payouts).

Trust weights the data (docs/sources/telemetry.md#trust; the seed's gold-standard consequences:
"trust score decreases, data weighted down"): every `sft`, `rlds` and `cot` feed row carries in
`metadata` its player's `trust` after every signal of the row's ingest day up to its event time
(each day's walk starts at INITIAL_TRUST: days ingest in parallel, so a day's rows depend on that
day alone) and the `validation_flags` of its events. Its `quality_score` is multiplied by
min(trust / INITIAL_TRUST, 1) (rounded to QUALITY_DECIMALS): a player with no signals keeps the
content score, distrust lowers it in proportion, trust above the start never raises it above what
the content earns. Rows of a player whose trust at that time is below TRUST_FLOOR are left out
(0.3 is the start less two gold-standard failures, so a third net failure drops a player's data;
the seed gives no number).
"""

from __future__ import annotations

INITIAL_TRUST = 0.5
TRUST_MIN = 0.1
TRUST_MAX = 1.0
TRUST_DELTAS: dict[str, float] = {
    "gold_pass": 0.05,
    "gold_fail": -0.10,
    "peer_match": 0.03,
    "peer_mismatch": -0.08,
}
GOLD_ACCURACY_FLAG = 0.70
TRUST_DECIMALS = 6

BASE_RATES: dict[str, float] = {"decision": 10.0, "episode": 25.0}
NOVELTY_LAMBDA = 0.5
HIGH_QUALITY_FAILURE_UTILITY = 0.8
SUCCESS_LABELS: tuple[str, ...] = ("Success",)
NEAR_MISS_LABELS: tuple[str, ...] = ("Partial",)
MAX_STEP_REWARD = 1.0
NEAR_MISS_REWARD_FRACTION = 0.7
NEAR_MISS_FINAL_FRACTION = 0.2
NOVELTY_FLOOR_PROBABILITY = 1e-4
PAYOUT_DECIMALS = 6
PEER_MISMATCH_REASON = "peer_mismatch"

# trust weighting of feed rows (see the module docstring)
TRUST_FLOOR = 0.3
QUALITY_DECIMALS = 4
