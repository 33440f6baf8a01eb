"""Telemetry triage rules (docs/sources/telemetry.md#triage).

Candidates: decision, trajectory_step, reasoning and dialogue_turn events that passed validation.
The first matching rule decides, in this order:

always process (`process`):
- `high_ambiguity`: a decision with ambiguity_score > AMBIGUITY_THRESHOLD, or a dialogue turn whose
  ambiguity_level is in AMBIGUOUS_DIALOGUE_LEVELS (High and Critical, the levels the dialogue
  score weighs 0.75 and 1.0, above the same threshold);
- `player_reasoning`: a reasoning event, or a decision with non-blank player reasoning;
- `innovation_quest`: scenario_id / quest_id / episode_id starting with INNOVATION_PREFIX;
- `peer_flagged`: a decision on a scenario the same player has a peer_prediction for that day;
- `high_karma`: an event of a player whose highest karma_state that day is >= HIGH_KARMA (the
  seed's "trust premium"; karma is what the day's events carry, so triage stays a function of the
  day alone and is independent of the order partitions are processed in);
- `quest_dialogue`: a dialogue turn carrying a quest_id (the seed's SFT capture trigger
  "Quest-related dialogue");
- `negotiation_dialogue`: a dialogue turn whose social_context names a contract or negotiation
  (NEGOTIATION_CONTEXT, case-insensitive: the capture trigger "Contract/negotiation
  conversations").
skip (`skip`):
- `routine_movement`: a step whose action_type is in ROUTINE_MOVEMENT_TYPES;
- `repeated_action`: a step whose action (type and details) equals the episode's previous step's;
- `low_tier_routine_crafting`: a step whose action_type is in ROUTINE_CRAFT_TYPES by a player whose
  highest skill level in the step's skill_state is <= LOW_TIER_MAX_SKILL;
- `seen_scenario`: a decision whose game_state_hash an earlier decision that day already had.
probabilistic (`sample`): a step whose state entropy — the Euclidean norm of the change of its
numeric `observation.game_state` values from the episode's previous step — exceeds
ENTROPY_THRESHOLD is sampled at SAMPLE_RATE by a stable hash of its event id
(`sampled_high_entropy`; the others skip as `high_entropy_not_sampled`).
everything else skips as `no_trigger`.
audit: AUDIT_RATE of the skips, by a second stable hash of the event id, become `audit`
(reason `audit:<skip reason>`), the seed's "5% sample of skipped for validation".

Triage gates the products (docs/sources/telemetry.md#triage): an episode goes to `rlds` and
`episode_pairs` only when at least one of its steps passed (process | sample) - an episode of
skipped routine steps is never published -, a conversation goes to `sft` only when at least one of
its turns passed - small talk outside any quest, negotiation or ambiguity is never published (the
seed's first capture trigger, 3+ exchanges, is the dialogue builder's own minimum) - and a
reasoning trace goes to `cot` only when it passed.
Competence still classes every episode, which evaluates the audit sample: an audited step is a
false negative when its episode did not pass and competence classes it in AUDIT_VALUABLE_CLASSES
(the seed's "false negative rate (missed valuable data)"), reported per action type; an audited
dialogue turn is one when its conversation did not pass and, fully built, would be a row whose
content quality_score is at least AUDIT_VALUABLE_DIALOGUE_SCORE.

The pass rate (process + sample over candidates) should stay below PASS_RATE_ALERT ("If pass rate
> 40%, tighten filters"); an asset check warns above it.
"""

from __future__ import annotations

AMBIGUITY_THRESHOLD = 0.7
INNOVATION_PREFIX = "innovation"
HIGH_KARMA = 100
ROUTINE_MOVEMENT_TYPES: tuple[str, ...] = ("move", "walk", "navigation")
ROUTINE_CRAFT_TYPES: tuple[str, ...] = ("craft", "gather", "wheel_manipulation")
LOW_TIER_MAX_SKILL = 1
ENTROPY_THRESHOLD = 0.1
SAMPLE_RATE = 0.15
AUDIT_RATE = 0.05
AUDIT_VALUABLE_CLASSES: tuple[str, ...] = ("expert", "hard_negative")
AMBIGUOUS_DIALOGUE_LEVELS: tuple[str, ...] = ("High", "Critical")
NEGOTIATION_CONTEXT = r"(?i)negotiat|contract|trade|barter|deal"
AUDIT_VALUABLE_DIALOGUE_SCORE = 0.6
PASS_RATE_ALERT = 0.40
HASH_BUCKETS = 10_000
SAMPLE_SALT = "triage-sample"
AUDIT_SALT = "triage-audit"
