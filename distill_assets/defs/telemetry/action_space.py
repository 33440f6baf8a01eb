"""The action space of the `rlds` action tokens as data (`rlds/action_space.json` in a release).

Derived from `rules/action_tokens.py` only, so a rules change changes the file: per axis its
token range and the `action_details` keys each category maps onto it, the bins, the pad token,
the value ranges normalised onto [-1, 1], the smoothing, and the encode/decode formulas.
"""

from __future__ import annotations

from typing import Any

from distill_assets.rules import action_tokens as rules


def action_space() -> dict[str, Any]:
    """Return the machine-readable action space of `action.action_tokens`."""
    axes = []
    for axis, name in enumerate(rules.AXIS_NAMES):
        keys = {
            category: sorted(key for key, named in mapping.items() if named == axis)
            for category, mapping in sorted(rules.AXIS_OF_KEY.items())
        }
        axes.append(
            {
                "index": axis,
                "name": name,
                "token_range": [axis * rules.BINS, (axis + 1) * rules.BINS - 1],
                "keys_by_category": keys,
            }
        )
    return {
        "vocab_size": rules.VOCAB_SIZE,
        "bins_per_axis": rules.BINS,
        "tokens_per_step": rules.TOKENS_PER_STEP,
        "token_position": "entry i of action_tokens is axis i's token",
        "pad_token": rules.PAD_TOKEN,
        "pad_meaning": "no action_details key took the axis (and every entry of the final step)",
        "value_range": [-1.0, 1.0],
        "axes": axes,
        "category_of_action_type": dict(sorted(rules.CATEGORY_OF_ACTION_TYPE.items())),
        "unnamed_keys": "take the free axes in ascending order, in the payload's key order",
        "value_ranges": {key: list(bounds) for key, bounds in sorted(rules.VALUE_RANGES.items())},
        "unranged_values": "taken as already in [-1, 1]; every value is clipped to [-1, 1]",
        "smoothing": {
            "kind": "gaussian along the episode's steps, renormalised at the edges",
            "sigma_steps": rules.SMOOTHING_SIGMA,
            "radius_steps": rules.SMOOTHING_RADIUS,
        },
        "encode": f"token = axis * {rules.BINS} + min({rules.BINS - 1}, "
        f"floor((v + 1) / 2 * {rules.BINS}))",
        "decode": f"axis = token // {rules.BINS}; "
        f"v = (token % {rules.BINS} + 0.5) / {rules.BINS} * 2 - 1",
    }
