"""Telemetry training data end to end (issue 12): dpo pairs, rlds episodes, cot, exclusions.

One planted day goes through the real definitions (daily telemetry assets, the global ones,
curation and release); `load_dataset` then reads the release in a fresh process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from distill_assets.defs.curation.curated_table import read_curated
from distill_assets.defs.player_ids import DEVELOPMENT_KEY, KEY_ENV, player_key
from distill_assets.lib.settings import Settings
from tests.assets.test_telemetry import GLOBAL_TABLES
from tests.conftest import isolate, materialize
from tests.e2e.test_load_dataset import load_in_fresh_process
from tests.unit.telemetry.rlds_frames import read_examples

DAY = "2026-11-19"
ALICE, BOB, CAROL, DAVE, ERIN = "p_alice", "p_bob", "p_carol", "p_dave_bot", "p_erin"
FRED = "p_fred"
# colluders (issue 30): gina (trusted by a passed gold standard) and hugo replay each other
GINA, HUGO = "p_gina", "p_hugo"
ALL_TYPES = ["sft", "dpo", "rlds", "cot"]
POTTERY = {"hand_pressure": 0.6, "lift_rate": 0.3, "wheel_speed_adjust": 0.0}
TASK = "Create a large storage jar using the fast wheel"
GOAL = "Shape the walls upward while maintaining even thickness"
WALK = "Walk to the harbour"
FAMINE = "The grain stores are nearly empty. Who do you feed?"
CANAL = (
    "The old canal that feeds the eastern fields has silted up after the {season} floods and the "
    "farmers, the temple and the brewers all ask for the same workers this month. Dredging takes "
    "every hand for ten days, and the barley harvest cannot wait. Whom do you send first?"
)
KILN = "Fire a glazed bowl in the new kiln"
SMALL_TALK = "The weather in Ur has been fine for the festival"
PROMPTS = {
    "famine": FAMINE,
    "drought": "The river is low and three groups draw from one canal. Who gets the water?",
    "river": "Two neighbours dispute a boundary stone without witnesses. How do you judge?",
    # two scenarios whose prompts differ in one word: the colluders' pairs are near duplicates
    "canal": CANAL.format(season="spring"),
    "canal-copy": CANAL.format(season="summer"),
}
OPTIONS = [
    {"option_id": "opt_1", "text": "Feed the temple workers."},
    {"option_id": "opt_2", "text": "Feed the sick."},
    {"option_id": "opt_3", "text": "Feed the children."},
]
DAILY = [
    "events",
    "quarantine",
    "validation",
    "accepted_events",
    "triage",
    "decisions",
    "decision_pairs",
    "dialogues",
    "competence",
    "episodes",
    "episode_pairs",
    "reasoning",
]
GLOBAL = list(GLOBAL_TABLES)


def key(raw_id: str) -> str:
    return player_key(DEVELOPMENT_KEY.encode(), raw_id)


class Log:
    def __init__(self) -> None:
        self.t0 = datetime.fromisoformat(DAY).replace(tzinfo=UTC).timestamp() + 8 * 3600
        self.events: list[dict[str, Any]] = []

    def emit(self, player: str, event_type: str, at: float, payload: dict, session: str = "s"):
        event = {
            "event_id": f"e{len(self.events):04d}",
            "event_type": event_type,
            "schema_version": "1.4",
            "player_id": player,
            "session_id": f"{session}-{player}",
            "client_ts": round(self.t0 + at - 0.2, 3),
            "server_ts": round(self.t0 + at, 3),
            "payload": payload,
        }
        self.events.append(event)
        return event

    def decision(self, player, at, scenario, chosen, *, reward, label, karma=0, cf=None):
        made = self.emit(
            player,
            "decision",
            at,
            {
                "scenario_id": scenario,
                "game_state_hash": f"h-{scenario}-{len(self.events)}",
                "prompt": PROMPTS[scenario],
                "options": OPTIONS,
                "chosen_option": chosen,
                "reasoning": f"reasons about {scenario} at {at}",
                "ambiguity_score": 0.8,
                "ai_policy_probs": {"opt_1": 0.5, "opt_2": 0.3, "opt_3": 0.2},
            },
            session="dec",
        )
        outcome = {"decision_event_id": made["event_id"], "outcome": f"{label} at {at}"}
        self.emit(
            player,
            "outcome",
            at + 30,
            {**outcome, "label": label, "reward": reward, "karma_delta": karma},
            session="dec",
        )
        for option, cf_reward in (cf or {}).items():
            self.emit(
                player,
                "outcome",
                at + 40,
                {
                    **outcome,
                    "option_id": option,
                    "outcome": f"had {option}",
                    "label": "Failure",
                    "reward": cf_reward,
                    "karma_delta": -3,
                },
                session="dec",
            )

    def conversation(self, player, at, conversation, **context):
        for turn in range(6):
            speaker = "player" if turn % 2 == 0 else "npc"
            self.emit(
                player,
                "dialogue_turn",
                at + 10 * turn,
                {
                    "conversation_id": conversation,
                    "turn_index": turn,
                    "speaker": speaker,
                    "text": f"{speaker} says line {turn} of {conversation}",
                    "npc_persona": "You are Lu-Nanna, a potter of Ur.",
                    **context,
                },
                session="talk",
            )

    def episode(
        self, player, at, episode, rewards, *, success=None, score=None, jitter=True, task=TASK
    ):
        # alice and bob are high-karma potters: triage always processes their actions (karma on
        # their steps); the others' repeated wheel steps are routine and skipped
        karma = {"karma_state": 120} if player in (ALICE, BOB) else {}  # innovation ids process
        action = "move" if task == WALK else "wheel_manipulation"
        for index, reward in enumerate(rewards):
            self.emit(
                player,
                "trajectory_step",
                at + (3.7 * index + (0.9 * index % 1.3) if jitter else 2.0 * index),
                {
                    "episode_id": episode,
                    "step_index": index,
                    "observation": {
                        "game_state": {"clay_moisture": 0.7 - 0.01 * index, "wheel_speed": 0.5},
                        "inventory": ["prepared_clay_5kg", "water_vessel"],
                        "skill_state": {"pottery": 3},
                        "natural_language_instruction": GOAL,
                    },
                    "action": {"action_type": action, "action_details": POTTERY},
                    "reward": reward,
                    **karma,
                },
                session="craft",
            )
        if success is not None:
            end = {"episode_id": episode, "success": success, "task_description": task}
            if score is not None:
                end["competence_score"] = score
            ended = at + (4.0 * len(rewards) + 1 if jitter else 2.0 * len(rewards))
            self.emit(player, "episode_end", ended, end, session="craft")


def planted() -> list[dict[str, Any]]:
    log = Log()
    for n, player in enumerate((ALICE, BOB, DAVE, ERIN)):
        log.emit(player, "consent", n, {"granted": True, "scopes": ALL_TYPES}, session="acct")
    # ghost replays of "famine": alice best, carol (no consent) middle, bob worst
    log.decision(
        ALICE, 100, "famine", "opt_1", reward=1.0, label="Success", karma=-5, cf={"opt_2": 0.25}
    )
    log.decision(CAROL, 160, "famine", "opt_2", reward=0.5, label="Partial", karma=-6)
    log.decision(BOB, 230, "famine", "opt_3", reward=0.0, label="Failure", karma=-8)
    # erin (deleted) on both sides of a pair
    log.decision(ALICE, 300, "drought", "opt_1", reward=0.5, label="Partial")
    log.decision(ERIN, 370, "drought", "opt_2", reward=1.0, label="Success")
    log.decision(BOB, 440, "river", "opt_1", reward=1.0, label="Success")
    log.decision(ERIN, 510, "river", "opt_2", reward=0.0, label="Failure")
    # episodes
    log.episode(ALICE, 1000, "ep-alice", [1.0] * 5, success=True, score=0.9)
    log.episode(BOB, 1100, "ep-bob-fail", [0.8, 0.9, 0.9, 0.8, 0.1], success=False, score=0.6)
    log.episode(BOB, 1200, "ep-bob-cut", [0.5, 0.5, 0.5])
    log.episode(ALICE, 1300, "ep-alice-noise", [0.1] * 3, success=True, score=0.2)
    log.episode(CAROL, 1400, "ep-carol", [1.0] * 3, success=True, score=0.95)
    log.episode(ERIN, 1500, "ep-erin", [0.9, 1.0, 0.95], success=True, score=0.88)
    # fred's expert walk is routine movement: triage skips it, so it is never published
    log.emit(FRED, "consent", 1590, {"granted": True, "scopes": ALL_TYPES}, session="acct")
    log.episode(FRED, 1600, "ep-fred-walk", [1.0] * 4, success=True, score=0.9, task=WALK)
    # dave is a bot: 24 steps exactly 2 s apart
    log.episode(DAVE, 2000, "ep-dave", [1.0] * 24, success=True, score=0.99, jitter=False)
    # reasoning: alice's explains her famine decision; carol's and dave's must not appear
    for player, at in ((ALICE, 3000), (CAROL, 3100), (DAVE, 2050)):
        log.emit(
            player,
            "reasoning",
            at,
            {
                "scenario_id": "famine",
                "context": f"weighing the grain at {at}",
                "thought_process": ["The canal feeds everyone", "Workers keep the canal"],
                "conclusion": "Feed the temple workers",
            },
            session="think" if player != DAVE else "craft",
        )
    # collusion: hugo plays first, gina (more trusted) replays it; their counterfactual pairs and
    # their innovation episodes are near duplicates across players, and gina's are published
    for n, player in enumerate((GINA, HUGO)):
        log.emit(player, "consent", 4100 + n, {"granted": True, "scopes": ALL_TYPES}, "acct")
    log.emit(
        GINA,
        "gold_standard_result",
        4110,
        {"task_id": "gold-1", "expected": "a", "answer": "a", "passed": True},
        session="gold",
    )
    log.decision(HUGO, 4200, "canal", "opt_1", reward=1.0, label="Success", cf={"opt_2": 0.0})
    log.decision(GINA, 4300, "canal-copy", "opt_1", reward=1.0, label="Success", cf={"opt_2": 0.0})
    log.episode(HUGO, 4400, "innovation-hugo", [0.9] * 4, success=True, score=0.9, task=KILN)
    log.episode(GINA, 4500, "innovation-gina", [0.9] * 4, success=True, score=0.9, task=KILN)
    # triage gates dialogues: gina's quest conversation passes, hugo's small talk is skipped
    log.conversation(GINA, 4600, "conv-gina-quest", quest_id="quest_kiln", ambiguity_level="Low")
    log.conversation(HUGO, 4700, "conv-hugo-chat", social_context=SMALL_TALK, ambiguity_level="Low")
    log.emit(ERIN, "deletion_request", 4000, {"request_id": "del-erin", "scope": "all"})
    return log.events


def selection(tables: list[str]) -> str:
    return " or ".join(f'key:"telemetry/{t}"' for t in tables)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    root = tmp_path_factory.mktemp("training")
    with pytest.MonkeyPatch.context() as patch:
        settings = isolate(root, patch, KEY_ENV)
        raw = Path(settings.raw_root) / "telemetry" / DAY / "planted.jsonl"
        raw.parent.mkdir(parents=True)
        raw.write_text("\n".join(json.dumps(e) for e in planted()) + "\n", encoding="utf-8")
        materialize(selection(DAILY), DAY)
        materialize(selection(GLOBAL))
        materialize("group:curation or group:release")
        yield settings


def lake(settings: Settings, table: str) -> pl.DataFrame:
    return pl.read_parquet(Path(settings.lake_root) / "telemetry" / table / f"{DAY}.parquet")


def content(rows: pl.DataFrame, column: str) -> str:
    """Return the text of the first row's one-message `column` (dpo is conversational)."""
    (message,) = rows.row(0, named=True)[column]
    return message["content"]


def curated(settings: Settings, config: str) -> pl.DataFrame:
    frame = read_curated(settings.lake_root, config)
    return frame.filter(pl.col("source") == "telemetry")


def test_ghost_replay_gives_one_dpo_row_with_the_better_outcome_chosen(trained: Settings) -> None:
    rows = curated(trained, "dpo")
    ghosts = rows.filter(pl.col("source_ref").str.starts_with("decisions:"))
    assert ghosts.height == 1
    meta = json.loads(ghosts.item(0, "metadata"))
    assert content(ghosts, "prompt") == FAMINE
    assert content(ghosts, "chosen") == "Feed the temple workers."
    assert content(ghosts, "rejected") == "Feed the children."
    seed_keys = {
        "chosen_policy_outcome",
        "rejected_policy_outcome",
        "reward_diff",
        "user_id_chosen",
        "user_id_rejected",
        "game_state_hash",
        "ambiguity_score",
        "karma_impact",
    }
    assert seed_keys <= set(meta)
    assert meta["chosen_policy_outcome"] == "Success"
    assert meta["rejected_policy_outcome"] == "Failure"
    assert meta["reward_diff"] == 1.0
    assert (meta["user_id_chosen"], meta["user_id_rejected"]) == (key(ALICE), key(BOB))
    assert meta["karma_impact"] == {"chosen": -5, "rejected": -8}
    assert meta["game_state_hash"] == "h-famine-4"
    assert meta["chosen"]["reasoning"] == "reasons about famine at 100"
    assert meta["rejected"]["outcome"] == "Failure at 230"


def test_counterfactual_pair_within_one_decision(trained: Settings) -> None:
    rows = curated(trained, "dpo").filter(
        pl.col("source_ref").str.starts_with("decision:")
        & pl.col("metadata").str.contains(key(ALICE))
    )
    assert rows.height == 1
    assert content(rows, "chosen") == "Feed the temple workers."
    assert content(rows, "rejected") == "Feed the sick."
    meta = json.loads(rows.item(0, "metadata"))
    assert meta["pair_kind"] == "counterfactual"
    assert meta["reward_diff"] == 0.75
    assert meta["rejected"]["outcome"] == "had opt_2"


def test_hard_negative_pairs_with_a_success_of_the_same_task(trained: Settings) -> None:
    classes = lake(trained, "competence").sort("episode_id")
    by_episode = dict(zip(classes["episode_id"], classes["competence"], strict=True))
    assert by_episode["ep-alice"] == "expert"
    assert by_episode["ep-bob-fail"] == "hard_negative"
    assert by_episode["ep-alice-noise"] == "noise"
    reasons = dict(zip(classes["episode_id"], classes["reason"], strict=True))
    assert reasons["ep-bob-fail"] == "late_failure_after_high_reward"
    rows = curated(trained, "dpo").filter(pl.col("source_ref").str.starts_with("episodes:"))
    assert rows.get_column("source_ref").to_list() == ["episodes:ep-alice+ep-bob-fail"]
    assert content(rows, "prompt") == TASK
    meta = json.loads(rows.item(0, "metadata"))
    assert (meta["chosen_policy_outcome"], meta["rejected_policy_outcome"]) == (
        "Success",
        "Failure",
    )


def test_rlds_episodes_have_one_first_one_last_and_exact_tokens(trained: Settings) -> None:
    rows = curated(trained, "rlds").sort("episode_id")
    published = ["ep-alice", "ep-bob-cut", "ep-bob-fail", "innovation-gina"]
    assert rows.get_column("episode_id").to_list() == published
    rows = rows.filter(pl.col("episode_id").str.starts_with("ep-"))
    for steps in rows.get_column("steps").to_list():
        assert [s["step_index"] for s in steps] == list(range(len(steps)))
        assert sum(s["is_first"] for s in steps) == 1 and steps[0]["is_first"]
        assert sum(s["is_last"] for s in steps) == 1 and steps[-1]["is_last"]
        # fixed-length tokens: the pottery axes, the pad on the unused interaction axis
        assert all(s["action"]["action_tokens"] == [153, 332, 640, 1024] for s in steps[:-1])
        assert steps[-1]["action"]["action_tokens"] == [1024] * 4
    alice, cut, fail = rows.get_column("steps").to_list()
    # RLDS semantics: 5 actions -> 6 steps, the last observation-only (reward 0, discount 0)
    assert [s["reward"] for s in alice] == [1.0] * 5 + [0.0]
    assert [s["discount"] for s in alice] == [0.99] * 4 + [0.0, 0.0]
    assert [s["is_terminal"] for s in alice] == [False] * 5 + [True]
    assert [s["reward"] for s in fail if not s["is_last"]] == [0.8, 0.9, 0.9, 0.8, 0.1]
    assert fail[-1]["is_terminal"]
    assert len(cut) == 4 and not any(s["is_terminal"] for s in cut)  # truncated: no end
    assert json.loads(alice[0]["observation"]["game_state"]) == {
        "clay_moisture": 0.7,
        "wheel_speed": 0.5,
    }
    assert alice[1]["observation"]["game_state_values"] == {
        "clay_moisture": 0.69,
        "wheel_speed": 0.5,
        "wall_thickness": None,
        "symmetry": None,
    }
    assert alice[0]["observation"]["skill_state_values"] == {"pottery": 3.0, "wheel_throwing": None}


def test_a_skipped_routine_episode_is_absent_from_rlds(trained: Settings) -> None:
    classes = lake(trained, "competence")
    assert classes.filter(pl.col("episode_id") == "ep-fred-walk").item(0, "competence") == "expert"
    triage = lake(trained, "triage").filter(pl.col("player_key") == key(FRED))
    assert triage.height == 4
    assert set(triage.get_column("reason").str.replace("^audit:", "")) == {"routine_movement"}
    assert set(triage.get_column("decision")) <= {"skip", "audit"}
    assert "ep-fred-walk" not in lake(trained, "episodes").get_column("episode_id").to_list()
    assert "ep-fred-walk" not in curated(trained, "rlds").get_column("episode_id").to_list()


def test_cot_row_is_linked_to_the_decision_it_explains(trained: Settings) -> None:
    rows = curated(trained, "cot")
    assert rows.height == 1
    assert rows.item(0, "instruction") == FAMINE
    assert rows.item(0, "input") == "weighing the grain at 3000"
    assert rows.item(0, "thought_process").to_list() == [
        "The canal feeds everyone",
        "Workers keep the canal",
    ]
    assert rows.item(0, "outcome") == "Success at 100"


def test_bot_unconsented_and_deleted_players_contribute_nothing(trained: Settings) -> None:
    banned = [key(p) for p in (CAROL, DAVE, ERIN)] + [CAROL, DAVE, ERIN]
    for config in ("dpo", "rlds", "cot"):
        meta = curated(trained, config).get_column("metadata").str.join("").item()
        for player in banned:
            assert player not in meta, (config, player)
        assert curated(trained, config).height >= 1
    episodes = curated(trained, "rlds").get_column("episode_id").to_list()
    assert not {"ep-carol", "ep-erin", "ep-dave"} & set(episodes)
    # the bot never reaches silver, nor does the player deleted the same day
    for table in ("decisions", "decision_pairs", "episodes", "reasoning", "competence"):
        frame = lake(trained, table)
        columns = (
            ["player_key_chosen", "player_key_rejected"] if "pairs" in table else ["player_key"]
        )
        players = frame.select(pl.concat_list(columns).explode()).to_series().to_list()
        assert key(DAVE) not in players, table
        assert key(ERIN) not in players, table
    log = pl.read_parquet(Path(trained.lake_root) / "telemetry" / "deletion_log.parquet")
    removed = json.loads(log.filter(pl.col("player_key") == key(ERIN)).item(0, "rows_removed"))
    # erin's request applies on its own day: she was never in silver, so never in a pair (the
    # drought and river decisions pair no one); only her bronze events were erased
    assert set(removed) == {"telemetry/events"}


def test_load_dataset_rlds_in_a_fresh_process(trained: Settings, tmp_path: Path) -> None:
    latest = Path(trained.hub_root) / trained.dataset_name / "latest"
    loaded = load_in_fresh_process(latest, ["rlds", "cot"], tmp_path)
    rlds = loaded["rlds"]
    episodes = [split["first"] for split in rlds.values()]
    assert episodes
    total = sum(len(split["ids"]) for split in rlds.values())
    # ep-alice, ep-bob-fail, ep-bob-cut and gina's innovation episode (hugo's is its duplicate)
    assert total == 4
    for episode in episodes:
        steps = episode["steps"]
        assert [s["step_index"] for s in steps] == list(range(len(steps)))
        assert [s["is_first"] for s in steps].count(True) == 1
        assert [s["is_last"] for s in steps].count(True) == 1


def test_tfds_folder_reads_back_with_the_same_episodes_and_splits(trained: Settings) -> None:
    latest = Path(trained.hub_root) / trained.dataset_name / "latest"
    folder = latest / "rlds" / "tfds"
    info = json.loads((folder / "dataset_info.json").read_text())
    rows = curated(trained, "rlds")
    splits = dict(rows.group_by("split").len().iter_rows())
    assert {s["name"]: int(s["shardLengths"][0]) for s in info["splits"]} == splits
    back = {
        example["episode_id"][0].decode(): example
        for split in splits
        for example in read_examples(folder / f"rlds-{split}.tfrecord-00000-of-00001")
    }
    assert sorted(back) == sorted(rows.get_column("episode_id").to_list())
    for row in rows.iter_rows(named=True):
        example, n = back[row["episode_id"]], len(row["steps"])
        assert example["id"] == [row["id"].encode()]
        assert example["steps/step_index"] == list(range(n))
        assert example["steps/is_last"] == [0] * (n - 1) + [1]
        assert example["steps/action/action_tokens"] == [153, 332, 640, 1024] * (n - 1) + [1024] * 4


def test_card_documents_rlds_layout_tokens_and_telemetry_rows(trained: Settings) -> None:
    card = (Path(trained.hub_root) / trained.dataset_name / "latest" / "README.md").read_text()
    notes = card[card.index("## Config notes") :]
    for heading in ("### `rlds`", "### `dpo`: telemetry", "### `cot`: telemetry"):
        assert heading in notes
    assert "token = axis * 256 + min(255, floor((v + 1) / 2 * 256))" in notes
    assert "rlds/tfds/" in notes and "tfds.builder_from_directory" in notes
    # the feature spec (issue 26: the card gave no types or shapes)
    assert "| `steps/action/action_tokens` | int64 | (4,) |" in notes
    assert "| `steps/observation/game_state_values/clay_moisture` | float32 | () |" in notes
    assert "| `steps/observation/inventory` | string (JSON) | () |" in notes


def duplicates(settings: Settings, config: str) -> pl.DataFrame:
    return pl.read_parquet(Path(settings.lake_root) / "curation" / f"{config}_duplicates.parquet")


def test_cross_player_near_duplicate_episodes_and_pairs_collapse_to_the_trusted_player(
    trained: Settings,
) -> None:
    # both colluders' rows reach the feed tables (novelty compares a player with themselves)
    episodes = lake(trained, "episodes").filter(pl.col("episode_id").str.starts_with("innov"))
    assert sorted(episodes.get_column("episode_id")) == ["innovation-gina", "innovation-hugo"]
    trust = {
        r["episode_id"]: json.loads(r["metadata"])["trust"] for r in episodes.iter_rows(named=True)
    }
    assert trust == {"innovation-gina": 0.55, "innovation-hugo": 0.5}
    # curation keeps the more trusted player's episode though hugo's came first
    published = curated(trained, "rlds").get_column("episode_id").to_list()
    assert "innovation-gina" in published and "innovation-hugo" not in published
    gina_episode = episodes.filter(pl.col("episode_id") == "innovation-gina").item(0, "id")
    hugo_episode = episodes.filter(pl.col("episode_id") == "innovation-hugo").item(0, "id")
    removed = duplicates(trained, "rlds").select("id", "reason", "kept_id").rows()
    assert removed == [(hugo_episode, "near_duplicate", gina_episode)]
    # the counterfactual pairs: prompts one word apart, the same chosen and rejected
    pairs = curated(trained, "dpo").filter(
        pl.col("metadata").str.contains(key(GINA)) | pl.col("metadata").str.contains(key(HUGO))
    )
    assert pairs.height == 1
    assert json.loads(pairs.item(0, "metadata"))["user_id_chosen"] == key(GINA)
    assert content(pairs, "prompt") == PROMPTS["canal-copy"]
    (dropped,) = (
        duplicates(trained, "dpo").filter(pl.col("kept_id") == pairs.item(0, "id")).rows(named=True)
    )
    assert dropped["reason"] == "near_duplicate"
    hugo_pairs = lake(trained, "decision_pairs").filter(pl.col("metadata").str.contains(key(HUGO)))
    assert dropped["id"] == hugo_pairs.item(0, "id")
    # alice's ghost replay and counterfactual share her prompt and choice: both survive
    alice = curated(trained, "dpo").filter(pl.col("metadata").str.contains(key(ALICE)))
    famine = alice.filter(pl.col("prompt").list.get(0).struct.field("content") == FAMINE)
    assert sorted(content(famine[i], "rejected") for i in range(famine.height)) == [
        "Feed the children.",
        "Feed the sick.",
    ]


def test_a_dialogue_triage_skips_is_absent_from_sft(trained: Settings) -> None:
    triage = lake(trained, "triage").filter(pl.col("event_type") == "dialogue_turn")
    reasons = dict(
        triage.group_by("player_key")
        .agg(pl.col("reason").str.replace("^audit:", "").unique())
        .with_columns(pl.col("reason").list.sort())
        .iter_rows()
    )
    assert reasons == {key(GINA): ["quest_dialogue"], key(HUGO): ["no_trigger"]}
    rows = lake(trained, "dialogues")
    assert rows.get_column("source_ref").to_list() == ["conversation:conv-gina-quest"]
    published = curated(trained, "sft").get_column("source_ref").to_list()
    assert published == ["conversation:conv-gina-quest"]


def test_card_counts_published_rows_per_value_class_and_split(trained: Settings) -> None:
    card = (Path(trained.hub_root) / trained.dataset_name / "latest" / "README.md").read_text()
    rows = curated(trained, "rlds").with_columns(
        pl.col("metadata").str.json_path_match("$.value_class").alias("value_class")
    )
    by_episode = dict(rows.select("episode_id", "value_class").iter_rows())
    assert by_episode == {
        "ep-alice": "long_horizon_causal_chains",
        "ep-bob-cut": "long_horizon_causal_chains",
        "ep-bob-fail": "embodied_failure_recovery",
        "innovation-gina": "novel_strategy_generation",
    }
    for (value,), group in rows.group_by("value_class"):
        train = group.filter(pl.col("split") == "train").height
        test = group.filter(pl.col("split") == "test").height
        assert f"| `rlds` | `value_class` | `{value}` | {train} | {test} |" in card
    assert "| `sft` | `value_class` | `social_manipulation_deception` |" in card
