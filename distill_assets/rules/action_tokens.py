"""Action tokenization rules (docs/sources/telemetry.md#action-tokens).

Continuous `action_details` values become integer tokens for Large Action Models (RT-2, Gato,
Open X-Embodiment compatible): a vocabulary of VOCAB_SIZE = AXES x BINS tokens, one block of BINS
per axis (0-255 primary, 256-511 secondary, 512-767 tertiary, 768-1023 interaction state).

1. Axis. The action's category (CATEGORY_OF_ACTION_TYPE; craft | combat | navigation) selects the
   seed's game-specific mapping AXIS_OF_KEY[category]: `action_details` key -> axis. Keys the table
   does not name (and every key of an unknown category) take the axes still free, in ascending
   axis order, in the payload's key order. A key whose named axis an earlier key of the same step
   already took is treated as unnamed. A step with more keys than free axes keeps the first ones
   and is flagged `too_many_action_keys` (the extra keys get no token).
2. Normalise to [-1, 1]. A key in VALUE_RANGES is mapped linearly from its (lo, hi) range; any
   other key is taken as already in [-1, 1]. Both are clipped to [-1, 1].
3. Smooth. Along the steps of one episode (in step order), each key's normalised values are
   convolved with a Gaussian of SMOOTHING_SIGMA steps, truncated at SMOOTHING_RADIUS steps and
   renormalised over the neighbours that exist (the episode's edges, steps without the key), so
   a constant signal is unchanged.
4. Bin uniformly: token = axis * BINS + min(BINS - 1, floor((v + 1) / 2 * BINS)).
   `action_tokens` has exactly TOKENS_PER_STEP = AXES entries, entry i the token of axis i, or
   PAD_TOKEN when no key of the step took axis i (fixed length, so batches and reverb patterns
   see one shape; PAD_TOKEN = VOCAB_SIZE lies just outside the action vocabulary).
Decoding: a token's axis is token // BINS and its value the centre of its bin,
(bin + 0.5) / BINS * 2 - 1, within one bin width (2 / BINS) of the smoothed value.

Worked example (the seed's pottery step, craft): hand_pressure 0.6 in [0, 1] -> 0.2 -> bin 153 ->
token 153; lift_rate 0.3 in [0, 1] -> -0.4 -> bin 76 -> token 332; wheel_speed_adjust 0.0 ->
bin 128 -> token 640; no interaction key -> PAD_TOKEN: [153, 332, 640, 1024].

RLDS step encoding of the published episodes (`rlds` config and the release's TFDS folder):
an episode of N recorded actions is N + 1 steps; the last (`is_last`) holds the final observation
(the game reports none after the last action, so the last recorded one is repeated), no action
(`action_type` "", `action_details` "{}", every token PAD_TOKEN), reward 0 and discount 0, as
RLDS treats the action, reward and discount of an `is_last` step as invalid. It is `is_terminal`
when the game ended the episode (an `episode_end`, success or failure); a truncated episode has
no terminal step. A recorded step's discount is DISCOUNT (the seed's 0.99), except the last
recorded action of an ended episode, whose transition ends the episode: 0 (dm_env/RLDS).
Numeric observations: GAME_STATE_KEYS and SKILL_STATE_KEYS name the `game_state` and
`skill_state` numbers published as typed fields (`game_state_values`, `skill_state_values`;
null in Parquet and NaN in TFDS when a step lacks the key or its value is not a number); the
full maps stay as JSON object strings beside them.
"""

from __future__ import annotations

VOCAB_SIZE = 1024
AXES = 4
BINS = VOCAB_SIZE // AXES
AXIS_NAMES: tuple[str, ...] = ("primary", "secondary", "tertiary", "interaction_state")
SMOOTHING_SIGMA = 1.0
SMOOTHING_RADIUS = 3
TOO_MANY_KEYS_FLAG = "too_many_action_keys"
DISCOUNT = 0.99
TOKENS_PER_STEP = AXES
PAD_TOKEN = VOCAB_SIZE
# observation keys published as numbers (the seed's Schema 3 example: pottery on the fast wheel)
GAME_STATE_KEYS: tuple[str, ...] = ("clay_moisture", "wheel_speed", "wall_thickness", "symmetry")
SKILL_STATE_KEYS: tuple[str, ...] = ("pottery", "wheel_throwing")

# action_type -> category of the seed's game-specific mapping
CATEGORY_OF_ACTION_TYPE: dict[str, str] = {
    "wheel_manipulation": "craft",
    "craft": "craft",
    "shape": "craft",
    "carve": "craft",
    "forge": "craft",
    "combat": "combat",
    "attack": "combat",
    "block": "combat",
    "parry": "combat",
    "navigation": "navigation",
    "move": "navigation",
    "walk": "navigation",
    "swim": "navigation",
    "climb": "navigation",
}
# category -> action_details key -> axis (seed: craft / combat / navigation actions)
AXIS_OF_KEY: dict[str, dict[str, int]] = {
    "craft": {  # tool pressure/force | movement speed/rate | rotation/angle | tool/hand selection
        "hand_pressure": 0,
        "tool_pressure": 0,
        "force": 0,
        "lift_rate": 1,
        "movement_rate": 1,
        "speed": 1,
        "wheel_speed_adjust": 2,
        "rotation": 2,
        "angle": 2,
        "tool_selection": 3,
        "hand_selection": 3,
    },
    "combat": {  # thrust/swing power | lateral movement | guard position | weapon/shield state
        "swing_power": 0,
        "thrust_power": 0,
        "lateral_movement": 1,
        "lateral_velocity": 1,
        "guard_position": 2,
        "weapon_state": 3,
        "shield_state": 3,
    },
    "navigation": {  # forward/backward | left/right | vertical (jump/crouch) | interaction
        "forward_velocity": 0,
        "lateral_velocity": 1,
        "vertical_velocity": 2,
        "jump": 2,
        "interaction": 3,
    },
}
# action_details key -> (lo, hi) physical range, mapped linearly onto [-1, 1]
VALUE_RANGES: dict[str, tuple[float, float]] = {
    "hand_pressure": (0.0, 1.0),
    "tool_pressure": (0.0, 1.0),
    "lift_rate": (0.0, 1.0),
    "swing_power": (0.0, 1.0),
    "thrust_power": (0.0, 1.0),
}
