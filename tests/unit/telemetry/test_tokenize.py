"""Action tokenization (docs/sources/telemetry.md#action-tokens; `rules/action_tokens.py`)."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

from distill_assets.defs.telemetry.tokenize import decode_token, denormalise, tokenize_steps
from distill_assets.rules import action_tokens as rules

POTTERY = {"hand_pressure": 0.6, "lift_rate": 0.3, "wheel_speed_adjust": 0.0}


def steps(episode: str, action_type: str, details: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "episode_id": [episode] * len(details),
            "step_index": list(range(len(details))),
            "action_type": [action_type] * len(details),
            "action_details": [json.dumps(d) for d in details],
        }
    )


def test_constant_episode_gives_exactly_the_expected_tokens() -> None:
    out = tokenize_steps(steps("ep", "wheel_manipulation", [POTTERY] * 5))
    # hand_pressure 0.6 in [0,1] -> 0.2 -> bin 153; lift_rate 0.3 -> -0.4 -> bin 76 (+256);
    # wheel_speed_adjust 0.0 -> bin 128 (+512); smoothing leaves the constants unchanged;
    # no key on the interaction axis: the pad
    assert out.get_column("action_tokens").to_list() == [[153, 332, 640, 1024]] * 5
    assert out.get_column("action_flag").to_list() == [None] * 5


def test_pottery_step_keys_go_on_the_seed_craft_axes() -> None:
    # key order in the payload must not matter for named keys
    details = {"wheel_speed_adjust": 0.0, "lift_rate": 0.3, "hand_pressure": 0.6}
    tokens = tokenize_steps(steps("ep", "wheel_manipulation", [details]))
    tokens = tokens.item(0, "action_tokens").to_list()
    assert [decode_token(t)[0] for t in tokens[:3]] == [0, 1, 2]  # pressure, rate, rotation
    assert tokens == [153, 332, 640, rules.PAD_TOKEN]


def test_unknown_category_and_unnamed_keys_take_free_axes_in_key_order() -> None:
    out = tokenize_steps(
        pl.concat(
            [
                steps("a", "dance", [{"z": -1.0, "a": 1.0}]),
                steps("b", "navigation", [{"torch": 0.0, "forward_velocity": 0.5}]),
            ]
        )
    )
    assert out.get_column("action_tokens").to_list() == [
        [0, 256 + 255, 1024, 1024],  # z -> axis 0 (bin 0), a -> axis 1 (v = 1 -> bin 255)
        [192, 256 + 128, 1024, 1024],  # forward_velocity named axis 0; torch: first free, 1
    ]


def test_more_than_four_keys_is_a_flag_not_a_crash() -> None:
    details = {"a": 0.0, "b": 0.0, "c": 0.0, "d": 0.0, "e": 0.0}
    out = tokenize_steps(steps("ep", "dance", [details]))
    assert out.item(0, "action_tokens").to_list() == [128, 384, 640, 896]
    assert out.item(0, "action_flag") == rules.TOO_MANY_KEYS_FLAG


def test_out_of_range_values_are_clipped_and_tokens_stay_in_vocab() -> None:
    values = [-7.0, -1.0, -0.999, 0.0, 0.999, 1.0, 3.5]
    out = tokenize_steps(steps("ep", "dance", [{"x": v, "y": -v} for v in values]))
    rows = out.get_column("action_tokens").to_list()
    assert all(len(row) == rules.TOKENS_PER_STEP for row in rows)
    assert all(0 <= t < rules.VOCAB_SIZE for row in rows for t in row[:2])
    assert all(row[2:] == [rules.PAD_TOKEN] * 2 for row in rows)


def test_smoothing_is_gaussian_along_the_episode() -> None:
    out = tokenize_steps(steps("ep", "dance", [{"x": 0.0}, {"x": 1.0}, {"x": 0.0}]))
    w1 = math.exp(-0.5)
    middle = 1.0 / (1.0 + 2 * w1)  # the neighbours at -1 and +1 hold 0
    expected = math.floor((middle + 1) / 2 * 256)
    assert out.item(1, "action_tokens").to_list() == [expected, 1024, 1024, 1024]


def test_decoding_round_trips_within_one_bin_width() -> None:
    grid = [i / 50 - 1 for i in range(101)]
    out = tokenize_steps(
        pl.concat([steps(f"ep{i}", "dance", [{"x": v}]) for i, v in enumerate(grid)])
    )
    for value, tokens in zip(grid, out.get_column("action_tokens").to_list(), strict=True):
        axis, decoded = decode_token(tokens[0])
        assert axis == 0
        assert abs(decoded - value) <= 2 / rules.BINS
    assert denormalise("hand_pressure", decode_token(153)[1]) == pytest.approx(0.6, abs=1 / 256)
    with pytest.raises(ValueError):
        decode_token(rules.PAD_TOKEN)


def test_bad_action_details_give_no_tokens() -> None:
    frame = steps("ep", "dance", [{"x": 0.0}]).with_columns(
        pl.lit("[1, 2]").alias("action_details")
    )
    assert tokenize_steps(frame).item(0, "action_tokens").to_list() == [rules.PAD_TOKEN] * 4


def test_tokens_have_a_fixed_length_with_the_documented_pad() -> None:
    # issue 26: variable-length token lists (one per used axis) broke reverb patterns
    out = tokenize_steps(steps("ep", "dance", [{"x": 0.0}, {"x": 0.0, "y": 0.0, "z": 0.0}]))
    assert out.get_column("action_tokens").to_list() == [
        [128, 1024, 1024, 1024],
        [128, 384, 640, 1024],
    ]
    assert rules.PAD_TOKEN == rules.VOCAB_SIZE == 1024
