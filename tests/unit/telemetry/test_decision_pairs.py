"""Decision preference pairs (`rules/telemetry_pairs.py`).

See docs/sources/telemetry.md#decisions-and-pairs.
"""

from __future__ import annotations

import json

import polars as pl

from distill_assets.defs.telemetry.decisions import DECISIONS_SCHEMA, decision_pairs
from distill_assets.rules import telemetry_pairs as rules


def made(rows: list[dict]) -> pl.DataFrame:
    base = {
        "session_id": "s",
        "source_ref": "f:1",
        "game_state_hash": "h",
        "prompt": "Who do you feed?",
        "reasoning": None,
        "ambiguity_score": 0.8,
        "outcome": "o",
        "karma_delta": 0,
        "trust_score": None,
        "counterfactuals": [],
    }
    full = [
        {**base, "event_time": float(i), "chosen_text": r["chosen_option"], **r}
        for i, r in enumerate(rows)
    ]
    return pl.DataFrame(full, schema=DECISIONS_SCHEMA)


def decision(event_id, player, option, reward, *, label="L", trust=None, scenario="famine"):
    return {
        "event_id": event_id,
        "player_key": player,
        "scenario_id": scenario,
        "chosen_option": option,
        "reward": reward,
        "label": label,
        "trust_score": trust,
    }


def refs(rows: pl.DataFrame) -> list[str]:
    return rows.get_column("source_ref").to_list()


def test_ties_in_reward_go_to_the_more_trusted_player() -> None:
    rows = decision_pairs(
        made(
            [
                decision("e1", "p1", "opt_1", 0.5, label="Partial", trust=0.4),
                decision("e2", "p2", "opt_2", 0.5, label="Success", trust=0.9),
            ]
        )
    )
    assert refs(rows) == ["decisions:e2+e1"]
    meta = json.loads(rows.item(0, "metadata"))
    assert (meta["user_id_chosen"], meta["user_id_rejected"]) == ("p2", "p1")
    assert meta["reward_diff"] == 0.0
    assert rows.item(0, "subject") == "dpo:p2+p1"


def test_same_choice_same_player_or_same_outcome_form_no_pair() -> None:
    rows = decision_pairs(
        made(
            [
                decision("e1", "p1", "opt_1", 1.0),
                decision("e2", "p2", "opt_1", 0.0),  # same choice
                decision("e3", "p1", "opt_2", 0.5),  # same player as e1
                decision("e4", "p3", "opt_3", 1.0, scenario="other"),
                decision("e5", "p4", "opt_2", 1.0, scenario="other"),  # same outcome
            ]
        )
    )
    assert refs(rows) == ["decisions:e3+e2"]


def test_each_decision_is_in_a_bounded_number_of_pairs_and_order_does_not_matter() -> None:
    many = [decision(f"e{i:02d}", f"p{i}", f"opt_{i % 3}", i / 20) for i in range(20)]
    rows = decision_pairs(made(many))
    reversed_rows = decision_pairs(made(list(reversed(many))))
    assert refs(rows) == refs(reversed_rows)
    assert rows.get_column("id").to_list() == reversed_rows.get_column("id").to_list()
    events = (
        rows.select(pl.col("source_ref").str.strip_prefix("decisions:").str.split("+"))
        .explode("source_ref")
        .get_column("source_ref")
        .value_counts()
    )
    assert events.get_column("count").max() <= 2 * rules.MAX_PARTNERS


def test_counterfactual_pair_prefers_the_better_reward() -> None:
    cf = [
        {
            "option_id": "opt_2",
            "text": "Feed the sick.",
            "outcome": "the canal failed",
            "label": "Failure",
            "reward": 0.0,
            "karma_delta": -9,
        },
        {
            "option_id": "opt_3",
            "text": "Feed the children.",
            "outcome": "better",
            "label": "Success",
            "reward": 0.9,
            "karma_delta": 2,
        },
    ]
    row = {**decision("e1", "p1", "opt_1", 0.5, label="Partial"), "counterfactuals": cf}
    rows = decision_pairs(made([row])).sort("source_ref")
    assert refs(rows) == ["decision:e1:opt_2", "decision:e1:opt_3"]
    assert rows.get_column("chosen").to_list() == ["opt_1", "Feed the children."]
    assert rows.get_column("rejected").to_list() == ["Feed the sick.", "opt_1"]
    metas = [json.loads(m) for m in rows.get_column("metadata")]
    assert [m["reward_diff"] for m in metas] == [0.5, 0.4]
    assert metas[0]["karma_impact"] == {"chosen": 0, "rejected": -9}


def test_excluded_players_take_no_part_in_pairing() -> None:
    rows = decision_pairs(
        made(
            [
                decision("e1", "p1", "opt_1", 1.0),
                decision("e2", "p2", "opt_2", 0.5),
                decision("e3", "p3", "opt_3", 0.4),
                decision("e4", "p4", "opt_1", 0.0),
            ]
        ),
        excluded=pl.DataFrame({"player_key": ["p2", "p3"]}),
    )
    assert refs(rows) == []  # p1 and p4 made the same choice
