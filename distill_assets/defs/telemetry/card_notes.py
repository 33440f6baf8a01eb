"""Dataset card notes for the telemetry rows of `rlds`, `dpo` and `cot`.

See docs/sources/telemetry.md#what-each-config-gets.

Given per config to the release in `definitions.py` (`RELEASE_CONTRIBUTIONS`); the card renders
the notes of every config the version holds (`defs/release/notes.py`).
"""

from distill_assets.defs.telemetry.tfrecord import feature_spec
from distill_assets.rules import action_tokens as tokens
from distill_assets.rules import telemetry_competence as competence
from distill_assets.rules import telemetry_novelty as novelty
from distill_assets.rules import telemetry_taxonomy as taxonomy
from distill_assets.rules import telemetry_trust as trust

_CLASSES = ", ".join(f"`{name}`" for name in taxonomy.VALUE_CLASSES)
TELEMETRY_METADATA = f"""Every telemetry row's metadata also holds `trust` (the player's trust
at the time; rows below {trust.TRUST_FLOOR} are not published, and `quality_score` is scaled by
min(trust / {trust.INITIAL_TRUST}, 1)), `validation_flags` (checks flagged on its events) and
`value_class`, one of the seed's five data classes: {_CLASSES}. A `dpo` pair holds
`trust_chosen` and `trust_rejected` instead; the lower one scales its score."""


def _feature_table() -> str:
    """Return the TFDS folder's features (`rlds/feature_spec.json`) as a markdown table."""
    rows = [
        f"| `{f['path']}` | {f['dtype']}{' (JSON)' if f['encoding'] == 'json' else ''} | "
        f"{tuple(f['shape'])} | {f['description']} |"
        for f in feature_spec()["features"]
    ]
    return "\n".join(["| feature | dtype | shape | meaning |", "| --- | --- | --- | --- |", *rows])


RLDS_NOTES = f"""### `rlds`: game trajectories (telemetry)

One row per episode (`episode_id`, `task_description`, `success`), `steps` in step order, each
`{{step_index, is_first, is_last, is_terminal, observation{{game_state, game_state_values,
inventory, skill_state, skill_state_values, natural_language_instruction}}, action{{action_type,
action_details, action_tokens}}, reward, discount}}`, with RLDS step semantics: an episode of N
recorded actions has N + 1 steps. Exactly one step has `is_first`; the last step has `is_last`
and is observation-only (the last observation again: the game reports none after the final
action; `action_type` "", `action_details` "{{}}", every token the pad, reward 0, discount 0), so
RLDS tools that ignore the `is_last` step's action and reward lose nothing. `is_terminal` is true
on that step when the game ended the episode (success or failure) and false everywhere in a
truncated episode (no end event). `discount` is {tokens.DISCOUNT}, and 0 on the last action of an
ended episode (its transition ends the episode). `game_state`, `skill_state` and
`action_details` are JSON object strings; the numbers of `game_state` at
{", ".join(tokens.GAME_STATE_KEYS)} and of `skill_state` at {", ".join(tokens.SKILL_STATE_KEYS)}
are also typed fields (`game_state_values`, `skill_state_values`; null when absent).

The same episodes and splits are a TFDS dataset folder, written without TensorFlow:
`tfds.builder_from_directory("<version>/rlds/tfds").as_dataset(split="train")` gives episodes
with a nested `steps` dataset that `rlds` accepts (missing numbers are NaN there, floats are
float32, `inventory` is a JSON array string so every step feature has one shape).
`rlds/feature_spec.json` lists every feature (path, dtype, shape, meaning) and
`rlds/action_space.json` the token axes, ranges, bins and pad.

Action tokens (RT-2 / Gato / Open X-Embodiment style): vocabulary {tokens.VOCAB_SIZE} =
{tokens.AXES} axes x {tokens.BINS} bins - 0-255 primary (craft: tool pressure; combat: swing
power; navigation: forward velocity), 256-511 secondary (movement rate; lateral movement;
lateral velocity), 512-767 tertiary (rotation; guard position; vertical), 768-1023 interaction
state (tool selection; weapon state; interaction). Keys the mapping does not name take the free
axes in payload order. Values are normalised to [-1, 1] (documented ranges mapped linearly),
Gaussian-smoothed along the episode (sigma {tokens.SMOOTHING_SIGMA} steps), then binned:
`token = axis * {tokens.BINS} + min({tokens.BINS - 1}, floor((v + 1) / 2 * {tokens.BINS}))`.
`action_tokens` always has {tokens.TOKENS_PER_STEP} entries, entry i for axis i, and
{tokens.PAD_TOKEN} (the pad, outside the vocabulary) where no key took the axis. Decode: `axis =
token // {tokens.BINS}`, `v = (token % {tokens.BINS} + 0.5) / {tokens.BINS} * 2 - 1` (within one
bin of the smoothed value; `distill_assets.defs.telemetry.tokenize.decode_token`).

Features of the TFDS folder (per episode, or per step under `steps/`; the Parquet config has the
same fields with float64 numbers, null for a missing number and `inventory` as a list):

{_feature_table()}

Competence (metadata `competence`, `competence_score`, `score_source`): the game's own score,
else the embedder similarity of the episode to its task (a MineCLIP stand-in). Above
{competence.EXPERT_ABOVE} `expert`; below {competence.NOISE_BELOW} `noise` (not published);
failed after a high intermediate reward with a score of at most {competence.HARD_NEGATIVE_AT_MOST}
`hard_negative` (paired with a success in `dpo`). Only episodes triage passed are published.

{TELEMETRY_METADATA}"""

DPO_NOTES = f"""### `dpo`: telemetry decision pairs

`source = telemetry` rows come from game decisions: `prompt` is the situation, `chosen` /
`rejected` the two actions. Ghost replays (`metadata.pair_kind = ghost_replay`, source_ref
`decisions:<chosen event>+<rejected event>`): two players on the same scenario with different
choices and outcomes, the better reward chosen (ties: higher trust). Counterfactuals
(`counterfactual`, `decision:<event>:<option>`): the chosen option vs an alternative whose outcome
the game reported. Hard negatives (`hard_negative`, `episodes:<success>+<failure>`): a
successful episode vs a failed one of the same task, actions one step per line. metadata holds
the seed's keys `chosen_policy_outcome`, `rejected_policy_outcome`, `reward_diff`,
`user_id_chosen`, `user_id_rejected` (pseudonymous player keys), `game_state_hash`,
`ambiguity_score`, `karma_impact` `{{chosen, rejected}}`, the seed's `chosen` / `rejected`
objects (content, reasoning, outcome) and `novelty_score` (a row with cosine >
{novelty.DUPLICATE_ABOVE} to an earlier row of the same players is not published).

{TELEMETRY_METADATA}"""

COT_NOTES = f"""### `cot`: telemetry reasoning

`source = telemetry` rows are player reasoning traces: `thought_process` the player's steps,
`conclusion` (also `output`) the decision, `outcome` its result. When a decision of the same
player on the same scenario exists, `instruction` is that decision's prompt, `input` the
reasoning context and `outcome` falls back to the decision's outcome (metadata
`decision_event_id`, `decision_label`, `decision_reward`); otherwise `instruction` is the context.
metadata also holds `novelty_score`.

{TELEMETRY_METADATA}"""
