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
   `action_tokens` lists one token per used axis, in axis order.
Decoding: a token's axis is token // BINS and its value the centre of its bin,
(bin + 0.5) / BINS * 2 - 1, within one bin width (2 / BINS) of the smoothed value.

Worked example (the seed's pottery step, craft): hand_pressure 0.6 in [0, 1] -> 0.2 -> bin 153 ->
token 153; lift_rate 0.3 in [0, 1] -> -0.4 -> bin 76 -> token 332; wheel_speed_adjust 0.0 ->
bin 128 -> token 640.
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
