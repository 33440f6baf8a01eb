"""RLDS step semantics of the published `rlds` episodes (issue 26; `episodes.rlds_steps`)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from distill_assets.contracts.published import RLDS_STEPS_DTYPE, RldsRow
from distill_assets.defs.telemetry.episodes import rlds_steps
from distill_assets.rules import action_tokens as rules
from tests.unit.telemetry.rlds_frames import POTTERY_TOKENS, episodes_frame

PAD = [rules.PAD_TOKEN] * rules.TOKENS_PER_STEP
EPISODES = {"ended": ([1.0, 0.5, 1.5], True), "cut": ([0.25, 0.75], False)}


def rlds_return(steps: list[dict]) -> float:
    """The return as RLDS consumers compute it: the is_last step's reward is invalid."""
    return sum(s["reward"] for s in steps if not s["is_last"])


def test_recorded_steps_lose_the_last_action_under_rlds_rules() -> None:
    # the symptom: the last recorded step was is_last, so RLDS dropped its action and reward
    recorded = episodes_frame(EPISODES).get_column("steps").to_list()
    assert [rlds_return(s) for s in recorded] == [1.5, 0.25]  # data: 3.0 and 1.0


def test_every_action_and_reward_survive_rlds_rules() -> None:
    ended, cut = rlds_steps(episodes_frame(EPISODES)).to_list()
    assert [rlds_return(s) for s in (ended, cut)] == [3.0, 1.0]
    assert [len(ended), len(cut)] == [4, 3]  # N actions -> N + 1 steps
    assert [s["step_index"] for s in ended] == [0, 1, 2, 3]
    assert [s["is_first"] for s in ended] == [True, False, False, False]
    assert [s["is_last"] for s in ended] == [False, False, False, True]
    assert [s["is_terminal"] for s in ended] == [False, False, False, True]
    assert [s["is_terminal"] for s in cut] == [False, False, False]  # truncated
    assert [s["discount"] for s in ended] == [0.99, 0.99, 0.0, 0.0]
    assert [s["discount"] for s in cut] == [0.99, 0.99, 0.0]
    assert [s["reward"] for s in ended] == [1.0, 0.5, 1.5, 0.0]
    assert [s["action"]["action_tokens"] for s in ended] == [POTTERY_TOKENS] * 3 + [PAD]


def test_the_final_step_repeats_the_last_observation_without_an_action() -> None:
    ended, _ = rlds_steps(episodes_frame(EPISODES)).to_list()
    assert ended[3]["observation"] == ended[2]["observation"]
    assert ended[3]["action"] == {"action_type": "", "action_details": "{}", "action_tokens": PAD}
    assert ended[2]["observation"]["game_state_values"]["clay_moisture"] == 0.6


def test_steps_keep_the_published_dtype() -> None:
    assert rlds_steps(episodes_frame(EPISODES)).dtype == RLDS_STEPS_DTYPE


def test_the_published_contract_accepts_rlds_steps_and_rejects_short_tokens() -> None:
    steps = rlds_steps(episodes_frame(EPISODES)).to_list()[0]
    row = {
        "id": "x",
        "source": "telemetry",
        "source_ref": "episode:ended",
        "quality_score": 0.5,
        "metadata": "{}",
        "episode_id": "ended",
        "task_description": "make a jar",
        "success": True,
        "steps": steps,
    }
    assert len(RldsRow.model_validate(row).steps) == 4
    steps[0]["action"]["action_tokens"] = [153, 332, 640]  # the old variable length
    with pytest.raises(ValidationError):
        RldsRow.model_validate(row)
