"""Each telemetry feed row gets one of the five value classes (rules/telemetry_taxonomy.py)."""

import json

import polars as pl
import pytest

from distill_assets.defs.telemetry.taxonomy import class_counts, with_value_class


def classes(rows: pl.DataFrame, table: str) -> list[str]:
    out = with_value_class(rows, table)
    return [json.loads(m)["value_class"] for m in out.get_column("metadata")]


def test_decision_pairs_above_the_ambiguity_threshold_resolve_ambiguity() -> None:
    rows = pl.DataFrame(
        {"metadata": ['{"ambiguity_score":0.71}', '{"ambiguity_score":0.7}', '{"a":1}']}
    )
    assert classes(rows, "decision_pairs") == [
        "ambiguity_resolution",
        "long_horizon_causal_chains",
        "long_horizon_causal_chains",
    ]


def test_episodes_innovation_failure_and_the_rest() -> None:
    rows = pl.DataFrame(
        {
            "episode_id": ["innovation-canal", "ep-fail", "ep-cut", "ep-ok"],
            "success": [False, False, False, True],
            "metadata": [
                '{"truncated":false}',
                '{"truncated":false}',
                '{"truncated":true}',
                '{"truncated":false}',
            ],
        }
    )
    assert classes(rows, "episodes") == [
        "novel_strategy_generation",
        "embodied_failure_recovery",
        "long_horizon_causal_chains",  # truncated: its end is unknown
        "long_horizon_causal_chains",
    ]


def test_dialogues_pairs_and_reasoning() -> None:
    one = pl.DataFrame({"metadata": ['{"k":1}']})
    assert classes(one, "dialogues") == ["social_manipulation_deception"]
    assert classes(one, "episode_pairs") == ["embodied_failure_recovery"]
    traces = pl.DataFrame(
        {"metadata": ['{"scenario_id":"innovation_kiln"}', '{"scenario_id":null}']}
    )
    assert classes(traces, "reasoning") == [
        "novel_strategy_generation",
        "long_horizon_causal_chains",
    ]
    out = with_value_class(one, "dialogues")
    assert json.loads(out.item(0, "metadata")) == {
        "k": 1,
        "value_class": "social_manipulation_deception",
    }
    assert class_counts(out) == {
        "ambiguity_resolution": 0,
        "novel_strategy_generation": 0,
        "social_manipulation_deception": 1,
        "long_horizon_causal_chains": 0,
        "embodied_failure_recovery": 0,
    }
    with pytest.raises(ValueError, match="telemetry/payouts"):
        with_value_class(one, "payouts")
