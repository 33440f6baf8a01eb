"""Dedup across contributors of rows compared part by part: `dpo` pairs and `rlds` episodes.

A preference pair is compared on its prompt, chosen and rejected together, an episode on its task,
action sequence and outcome (`rules.curation.NEAR_DUPLICATE_PARTS`); the representative of a
cluster is the most trusted contributor's row (issue 30).
"""

from __future__ import annotations

import json

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.curation.pipeline import curate
from tests.unit.curation.feeds import feed_frame, feed_row
from tests.unit.curation.texts import changed, jaccard, words

DAY1, DAY2 = "2026-11-19", "2026-11-20"
PROMPT, CHOSEN, REJECTED = words("prompt", 300), words("chosen", 60), words("rejected", 12)


def pair(row_id: str, prompt: list[str], chosen: list[str], rejected: list[str], **kw):
    """A telemetry pair whose players' lower trust is `trust`."""
    trust = kw.pop("trust")
    row = feed_row(
        "dpo",
        row_id,
        "",
        source="telemetry",
        group=f"scenario-{row_id}",
        metadata={"trust_chosen": trust, "trust_rejected": 1.0},
        **kw,
    )
    return {
        **row,
        "prompt": " ".join(prompt),
        "chosen": " ".join(chosen),
        "rejected": " ".join(rejected),
    }


def lazy(config: str, rows: list[dict[str, object]], partition: str) -> pl.LazyFrame:
    frame = feed_frame(config, rows).lazy()
    return frame.with_columns(pl.lit(partition).alias("partition"))


def test_cross_player_near_duplicate_pairs_collapse_to_the_most_trusted_players_pair():
    colluder = pair(
        "copy",
        changed(PROMPT, [5], "p"),
        changed(CHOSEN, [7], "c"),
        REJECTED,
        trust=0.9,
        score=0.6,
        event_time=9.0,
    )
    original = pair("orig", PROMPT, CHOSEN, REJECTED, trust=0.4, score=0.9, event_time=1.0)
    # same prompt and chosen, another alternative rejected; same prompt, another choice
    other_rejected = pair("alt", PROMPT, CHOSEN, words("other", 12), trust=0.5, event_time=2.0)
    other_choice = pair("choice", PROMPT, words("choice", 60), REJECTED, trust=0.5, event_time=3.0)
    whole = {
        r["id"]: f"{r['prompt']}\n{r['chosen']}\n{r['rejected']}"
        for r in [original, other_rejected]
    }
    # as one text the distinct pair would be a near duplicate: only its parts tell them apart
    assert jaccard(whole["orig"], whole["alt"]) > 0.8
    frames = [
        lazy("dpo", [original, other_rejected], DAY1),
        lazy("dpo", [colluder, other_choice], DAY2),
    ]
    result = curate(pl.concat(frames), "dpo")
    assert sorted(result.curated["id"].to_list()) == ["alt", "choice", "copy"]
    assert result.duplicates.select("id", "reason", "kept_id").rows() == [
        ("orig", "near_duplicate", "copy")
    ]
    assert result.removed["near_duplicate"] == 1
    assert result.funnel["near_duplicate"] == result.funnel["exact_duplicate"] - 1


def test_equally_trusted_duplicates_keep_the_earliest_and_untrusted_rows_rank_last():
    later = pair("later", PROMPT, CHOSEN, REJECTED, trust=0.5, score=0.5, event_time=5.0)
    earlier = pair(
        "earlier", changed(PROMPT, [0], "e"), CHOSEN, REJECTED, trust=0.5, event_time=1.0
    )
    # a row without trust (another source) loses to a trusted one whatever its score
    untrusted = {
        **pair("plain", changed(PROMPT, [1], "u"), CHOSEN, REJECTED, trust=0.0, score=1.0),
        "metadata": "{}",
        "source": "revisions",
    }
    result = curate(lazy("dpo", [later, earlier, untrusted], DAY1), "dpo")
    assert result.curated["id"].to_list() == ["earlier"]
    assert sorted(result.duplicates.select("id", "kept_id").rows()) == [
        ("later", "earlier"),
        ("plain", "earlier"),
    ]


def step(index: int, action: str, details: str, state: str, *, last: bool, terminal: bool):
    return {
        "step_index": index,
        "is_first": index == 0,
        "is_last": last,
        "is_terminal": terminal and last,
        "observation": {
            "game_state": state,
            "game_state_values": None,
            "inventory": [],
            "skill_state": "{}",
            "skill_state_values": None,
            "natural_language_instruction": "shape the pot",
        },
        "action": {"action_type": action, "action_details": details, "action_tokens": [1024] * 4},
        "reward": 0.1 * index,
        "discount": 0.99,
    }


def episode(row_id: str, actions: list[str], *, trust: float, success: bool, seed: str, **kw):
    """An ended episode of `actions`; observations differ per `seed` (same play, other clock).

    `details` (one JSON text per action) defaults to the step's index.
    """
    details = kw.get("details") or [json.dumps({"v": i}) for i in range(len(actions))]
    steps = [
        step(
            i,
            action,
            details[i],
            json.dumps({"clock": f"{seed}{i}"}),
            last=False,
            terminal=False,
        )
        for i, action in enumerate(actions)
    ]
    steps.append(step(len(actions), "", "{}", "{}", last=True, terminal=True))
    return {
        "id": row_id,
        "source": "telemetry",
        "source_ref": f"telemetry/{row_id}",
        "quality_score": kw.get("score", 0.5),
        "metadata": json.dumps({"trust": trust}),
        "episode_id": row_id,
        "task_description": "throw a bowl on the wheel",
        "success": success,
        "steps": steps,
        "split_group": f"task-{row_id}",
        "event_time": kw.get("event_time", 0.0),
    }


def test_cross_player_episodes_are_compared_on_their_actions_and_outcome():
    actions = words("action", 40)
    first = episode("first", actions, trust=0.5, success=True, seed="a", event_time=1.0)
    # another player replays it: other observations, one action changed, more trusted
    replay = episode(
        "replay", changed(actions, [20], "x"), trust=0.7, success=True, seed="b", event_time=2.0
    )
    failed = episode("failed", actions, trust=0.5, success=False, seed="c", event_time=3.0)
    other = episode("other", words("other", 40), trust=0.5, success=True, seed="d", event_time=4.0)
    frame = pl.DataFrame([first, replay, failed, other], schema=feed_schema("rlds"))
    result = curate(frame.lazy().with_columns(pl.lit(DAY1).alias("partition")), "rlds")
    assert sorted(result.curated["id"].to_list()) == ["failed", "other", "replay"]
    assert result.duplicates.select("id", "reason", "kept_id").rows() == [
        ("first", "near_duplicate", "replay")
    ]


def wheel_details(steps: int, pressure: int, lift: int) -> list[str]:
    """A wheel play's action details: values in [0.30, 0.80) stepping by `pressure` / `lift`."""
    return [
        json.dumps(
            {
                "hand_pressure": (30 + (i * pressure) % 50) / 100,
                "lift_rate": (10 + (i * lift) % 40) / 100,
            }
        )
        for i in range(steps)
    ]


def test_plays_of_one_task_with_other_action_values_are_distinct_episodes(monkeypatch):
    actions = ["wheel_manipulation"] * 24
    first = wheel_details(24, 7, 11)
    # a replay: the same values but two steps
    replayed = [*first[:5], wheel_details(24, 3, 5)[5], *first[6:15], first[3], *first[16:]]
    plays = [
        episode("first", actions, trust=0.5, success=True, seed="a", details=first),
        episode("replay", actions, trust=0.7, success=True, seed="b", details=replayed),
        episode(
            "other", actions, trust=0.5, success=True, seed="c", details=wheel_details(24, 13, 17)
        ),
    ]
    frame = pl.DataFrame(plays, schema=feed_schema("rlds")).lazy()
    frame = frame.with_columns(pl.lit(DAY1).alias("partition"))
    result = curate(frame, "rlds")
    assert sorted(result.curated["id"].to_list()) == ["other", "replay"]
    assert result.duplicates.select("id", "reason", "kept_id").rows() == [
        ("first", "near_duplicate", "replay")
    ]
    # why rlds skips semantic dedup: the text embedder sees the two plays as one text
    monkeypatch.setattr("distill_assets.defs.curation.pipeline.SEMANTIC_SKIPPED_CONFIGS", ())
    result = curate(frame, "rlds")
    assert result.duplicates.select("id", "reason").sort("id").rows() == [
        ("first", "near_duplicate"),
        ("other", "semantic_duplicate"),
    ]
