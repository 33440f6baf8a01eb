"""The seed's complete example end to end: raw line → every export config → review round trip."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from distill_assets.cli import main
from distill_assets.contracts.escalations import SEED_SQLITE_COLUMNS
from distill_assets.defs.escalations.working_store import INTERACTION_FIELDS
from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings
from tests.conftest import isolate, land, materialize
from tests.e2e.test_load_dataset import load_in_fresh_process
from tests.unit.escalations.test_examples import seed_quality_score

pytestmark = pytest.mark.e2e
DAY = "2026-11-19"
SEED = Path(__file__).resolve().parents[1] / "fixtures" / "escalations" / "seed_example.json"
RELEASE = (
    'group:curation or group:release or key:"escalations/review_state" '
    'or key:"escalations/review_exclusions" or key:"escalations/seed_database" '
    'or key:"escalations/export_history"'
)
CONFIGS = ("instruction", "cot", "dpo", "correction")


def seed_line() -> dict[str, object]:
    record = json.loads(SEED.read_text())
    return {k: record[k] for k in INTERACTION_FIELDS}


def published(settings: Settings, config: str) -> pl.DataFrame:
    folder = Path(settings.hub_root) / settings.dataset_name / "latest" / "data" / config
    if not folder.exists():
        return pl.DataFrame(schema={"metadata": pl.String()})
    return pl.read_parquet(sorted(folder.glob("*/*.parquet")))  # data/<config>/<split>/…


def example_ids(settings: Settings, config: str) -> set[str]:
    return {json.loads(m)["example_id"] for m in published(settings, config)["metadata"]}


def release_seed(settings: Settings) -> Settings:
    """Land the seed example, a junk capture and a sheep riddle; materialize them and release."""
    junk = {
        "id": "junk1",
        "created_at": 1795000000.0,
        "query": "How do I configure nginx rate limiting for my API gateway?",
        "sam_attempt": "Use limit_req.",
        "claude_response": "ok thanks",
    }
    sheep = {
        "id": "sheep1",
        "created_at": 1795000001.0,
        "query": "A farmer has 17 sheep. All but 9 run away. How many are left?",
        "sam_attempt": "8 sheep are left.",
        "claude_response": (
            "Let me think through this step by step:\n\n1. The farmer starts with 17 sheep\n"
            '2. The phrase "all but 9" means "all except 9"\n'
            "3. So if all but 9 run away, that means 9 sheep stayed\n"
            "4. The question asks how many are left, not how many ran away\n\n"
            "Therefore, 9 sheep are left."
        ),
    }
    lines = [seed_line(), junk, sheep]
    land(
        settings,
        "escalations",
        DAY,
        "captures.jsonl",
        "".join(json.dumps(line) + "\n" for line in lines),
    )
    result = materialize('key:"escalations/*"', DAY)
    assert all(c.passed for c in result.get_asset_check_evaluations())
    materialize(RELEASE)
    return settings


@pytest.fixture
def released(distill_env: Settings) -> Settings:
    """The seed's release in this test's own data folder (for tests that review and re-release)."""
    return release_seed(distill_env)


@pytest.fixture(scope="module")
def released_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """The seed's release made once for the tests that only read it (like `released`)."""
    with pytest.MonkeyPatch.context() as patch:
        yield release_seed(isolate(tmp_path_factory.mktemp("seed_release"), patch))


def test_seed_example_is_published_in_cot_dpo_and_correction(released_once: Settings) -> None:
    released = released_once
    lake = partition_path(released.lake_root, "escalations", "distillation_examples", DAY)
    [example] = pl.read_parquet(str(lake)).filter(pl.col("id") == "a7f3b2c1d4e5f6a8").to_dicts()
    assert example["reasoning_type"] == "chain_of_thought"
    assert len(example["reasoning_steps"]) == 4
    assert len(example["corrections"]["sam_errors"]) >= 1
    assert len(example["principles"]) >= 1
    assert (example["domain"], example["subdomain"], example["task_type"]) == (
        "code",
        "javascript",
        "debug",
    )
    assert example["quality_score"] == pytest.approx(seed_quality_score(example), abs=1e-9)
    assert example["quality_score"] == 0.9
    for config in CONFIGS:
        # the junk capture is gated out of every config
        assert example_ids(released, config) == {"a7f3b2c1d4e5f6a8", "sheep1"}, config
    seed_rows = {
        config: published(released, config).filter(
            pl.col("metadata").str.contains("a7f3b2c1d4e5f6a8", literal=True)
        )
        for config in CONFIGS
    }
    dpo = seed_rows["dpo"].row(0, named=True)
    record = seed_line()
    assert (dpo["prompt"], dpo["chosen"], dpo["rejected"]) == (
        [{"role": "user", "content": record["query"]}],
        [{"role": "assistant", "content": record["claude_response"]}],
        [{"role": "assistant", "content": record["sam_attempt"]}],
    )
    cot = seed_rows["cot"].row(0, named=True)
    assert cot["thought_process"][0] == (
        "Identify the variable: Look at the line number in the error. What variable is being "
        "mapped?"
    )
    correction = seed_rows["correction"].row(0, named=True)
    attempt = record["sam_attempt"].strip().rstrip(".")
    assert correction["instruction"] == (
        f"Here's what I said: {attempt}. What should I have said instead?"
    )
    assert correction["output"].startswith("Your answer has an error. Here's what you should")
    exports = Path(released.hub_root) / released.dataset_name / "latest" / "exports"
    assert sorted(p.name for p in exports.iterdir()) == [
        "correction_20261119.jsonl",
        "cot_20261119.jsonl",
        "instruction_20261119.jsonl",
        "preference_20261119.jsonl",
    ]
    card = (exports.parent / "README.md").read_text()
    assert "| `exports/cot_20261119.jsonl` |" in card
    preference = [json.loads(x) for x in (exports / "preference_20261119.jsonl").open()]
    assert len(preference) == 2
    assert {
        "prompt": record["query"],
        "chosen": record["claude_response"],
        "rejected": record["sam_attempt"],
    } in preference
    assert preference[0] == {
        "prompt": record["query"],
        "chosen": record["claude_response"],
        "rejected": record["sam_attempt"],
    }
    database = Path(released.data_dir) / "distilled" / "distillation.db"
    con = sqlite3.connect(database)
    try:
        columns = [row[1] for row in con.execute("PRAGMA table_info(distillation_examples)")]
        indexes = {row[1] for row in con.execute("PRAGMA index_list(distillation_examples)")}
        rows = con.execute(
            "SELECT id, export_count, last_exported_at, reasoning_steps, corrections, "
            "principles, quality_flags, training_format FROM distillation_examples ORDER BY id"
        ).fetchall()
    finally:
        con.close()
    assert tuple(columns) == SEED_SQLITE_COLUMNS
    assert {i for i in indexes if i.startswith("idx_")} == {
        "idx_domain",
        "idx_quality",
        "idx_training_ready",
        "idx_created",
        "idx_human_reviewed",
    }
    by_id = {row[0]: row for row in rows}
    seed = by_id["a7f3b2c1d4e5f6a8"]
    assert seed[1:3] == (1, 1795046400.0)  # one release; its newest partition, 2026-11-19 UTC
    assert len(json.loads(seed[3])) == 4
    assert json.loads(seed[4])["sam_errors"][0]["error_type"] == "incomplete"
    assert len(json.loads(seed[5])) == 1
    assert (json.loads(seed[6]), seed[7]) == ([], "correction")
    assert by_id["junk1"][1:3] == (0, None)  # gated: never exported
    pending = Path(released.data_dir) / "distilled" / "pending_review" / "batch_20261119.json"
    pending_ids = [r["id"] for r in json.loads(pending.read_text())]
    assert pending_ids == ["a7f3b2c1d4e5f6a8", "junk1", "sheep1"]


def test_review_reject_then_approve_round_trip_changes_the_next_release(
    released: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["review", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in listed] == ["a7f3b2c1d4e5f6a8", "junk1", "sheep1"]
    assert main(["review", "list"]) == 0
    assert "a7f3b2c1d4e5f6a8" in capsys.readouterr().out

    assert main(["review", "reject", "nope", "--notes", "x"]) == 1
    assert capsys.readouterr().err.strip() == "distill review: unknown example id 'nope'"

    assert (
        main(
            ["review", "reject", "a7f3b2c1d4e5f6a8", "--notes", "misses hooks", "--reviewer", "ann"]
        )
        == 0
    )
    materialize(RELEASE)
    for config in CONFIGS:
        assert example_ids(released, config) == {"sheep1"}, config  # rejected: left every config
    reviewed = list((Path(released.data_dir) / "distilled" / "approved").glob("reviewed_*.jsonl"))
    [line] = [json.loads(x) for x in reviewed[0].read_text().splitlines()]
    assert (line["id"], line["decision"], line["notes"], line["reviewer"]) == (
        "a7f3b2c1d4e5f6a8",
        "reject",
        "misses hooks",
        "ann",
    )

    assert main(["review", "approve", "a7f3b2c1d4e5f6a8", "--notes", "fine after all"]) == 0
    materialize(RELEASE)
    for config in CONFIGS:
        assert example_ids(released, config) == {"a7f3b2c1d4e5f6a8", "sheep1"}, config
    materialize('key:"escalations/distillation_examples"', DAY)
    capsys.readouterr()
    assert main(["review", "show", "a7f3"]) == 0  # any unique prefix
    shown = json.loads(capsys.readouterr().out)
    assert (shown["human_reviewed"], shown["reviewer_notes"]) == (1, "fine after all")
    # published in the first and the last release (the same version), not the one between
    assert (shown["export_count"], shown["last_exported_at"]) == (1, 1795046400.0)
    assert main(["review", "list", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == ["junk1", "sheep1"]

    assert main(["stats", "escalations", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["review_state"] == {"pending": 2, "approved": 1}
    assert stats["quality_flag"]["not_an_answer"] == 1
    assert stats["domain"]["code"] == 2


def test_the_four_configs_load_with_load_dataset(released_once: Settings, tmp_path: Path) -> None:
    released = released_once
    latest = Path(released.hub_root) / released.dataset_name / "latest"
    loaded = load_in_fresh_process(latest, list(CONFIGS), tmp_path)
    for config in CONFIGS:
        ids = {
            json.loads(row)["example_id"]
            for split in loaded[config].values()
            for row in [split["first"]["metadata"]]
        }
        rows = sum(len(split["ids"]) for split in loaded[config].values())
        assert rows == 2 and ids <= {"a7f3b2c1d4e5f6a8", "sheep1"}, config
    cot = next(iter(loaded["cot"].values()))
    assert cot["features"]["thought_process"] == "List(Value('string'))"
    assert cot["columns"][-6:] == [
        "instruction",
        "input",
        "output",
        "thought_process",
        "conclusion",
        "outcome",
    ]


def test_a_review_written_into_distillation_db_changes_the_next_release_like_distill_review(
    released: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 27: the seed's database is a working store, not only an output."""
    assert main(["review", "list", "--json"]) == 0
    held = {r["id"]: r["held_back"] for r in json.loads(capsys.readouterr().out)}
    assert held["junk1"] == "not_an_answer:acknowledgement"  # why, so a reviewer can overturn it
    database = Path(released.data_dir) / "distilled" / "distillation.db"
    corrected = (
        '9 sheep are left. "All but 9 run away" means every sheep except 9 ran off, so the 9 '
        "that stayed are the ones left; 17 is only the starting count."
    )
    con = sqlite3.connect(database)
    con.execute(
        "UPDATE distillation_examples SET human_reviewed = -1, reviewer_notes = ? WHERE id = ?",
        ("misses hooks", "a7f3b2c1d4e5f6a8"),
    )
    con.execute(
        "UPDATE distillation_examples SET claude_response = ? WHERE id = ?", (corrected, "sheep1")
    )
    con.execute(
        "INSERT INTO distillation_examples (id, created_at, query, claude_response, "
        "reasoning_type, domain) VALUES (?, ?, ?, ?, ?, ?)",
        (
            "sam42",
            1795046400.0 + 3600,
            "How do I set a TTL on a Redis key?",
            "`SET key value EX 3600` stores the value with a one-hour expiry, and `EXPIRE key "
            "3600` adds one to an existing key; `TTL key` shows the seconds left.",
            "direct",
            "code",
        ),
    )
    con.commit()
    con.close()

    materialize(RELEASE)  # the same step a `distill review reject` needs
    for config in CONFIGS:
        assert example_ids(released, config) == {"sheep1"}, config  # as with distill review
    reviewed = list((Path(released.data_dir) / "distilled" / "approved").glob("reviewed_*.jsonl"))
    lines = [json.loads(x) for p in reviewed for x in p.read_text().splitlines()]
    assert [(x["id"], x["decision"], x["notes"], x["reviewer"]) for x in lines] == [
        ("a7f3b2c1d4e5f6a8", "reject", "misses hooks", "distillation.db"),
        ("sheep1", None, None, "distillation.db"),
    ]
    landed = list(Path(released.raw_root).glob("escalations/2026-11-19/distillation_db-*.jsonl"))
    assert len(landed) == 1

    # a later `distill review approve` wins over the database's reject (latest timestamp)
    assert main(["review", "approve", "a7f3b2c1d4e5f6a8", "--notes", "fine after all"]) == 0
    materialize('key:"escalations/*"', DAY)
    materialize(RELEASE)
    assert example_ids(released, "instruction") == {"a7f3b2c1d4e5f6a8", "sheep1", "sam42"}
    rows = published(released, "instruction")
    by_example = {json.loads(r["metadata"])["example_id"]: r for r in rows.to_dicts()}
    assert by_example["sheep1"]["output"] == corrected
    assert by_example["sheep1"]["source_ref"] == "escalations/2026-11-19/captures.jsonl:3"
    assert by_example["sam42"]["source_ref"] == "distillation.db#distillation_examples/sam42"
    con = sqlite3.connect(database)
    state = con.execute(
        "SELECT id, human_reviewed, reviewer_notes FROM distillation_examples ORDER BY id"
    ).fetchall()
    con.close()
    assert state == [
        ("a7f3b2c1d4e5f6a8", 1, "fine after all"),
        ("junk1", 0, None),
        ("sam42", 0, None),
        ("sheep1", 0, None),
    ]


def release_rows(settings: Settings) -> dict[str, pl.DataFrame]:
    """Every published config's rows (all splits), in id order."""
    data = Path(settings.hub_root) / settings.dataset_name / "latest" / "data"
    return {
        folder.name: pl.read_parquet(sorted(folder.glob("*/*.parquet"))).sort("id")
        for folder in sorted(data.iterdir())
    }


def db_review(settings: Settings, example_id: str, state: int, notes: str) -> None:
    """Review an example the way SAM's own tools do: an UPDATE of the seed's table."""
    con = sqlite3.connect(Path(settings.data_dir) / "distilled" / "distillation.db")
    con.execute(
        "UPDATE distillation_examples SET human_reviewed = ?, reviewer_notes = ? WHERE id = ?",
        (state, notes, example_id),
    )
    con.commit()
    con.close()


def assert_same_release(first: dict[str, pl.DataFrame], second: dict[str, pl.DataFrame]) -> None:
    assert list(first) == list(second)
    for config, rows in first.items():
        assert rows.equals(second[config]), config


def test_a_database_review_publishes_the_release_the_same_distill_review_publishes(
    released: Settings,
) -> None:
    """Issue 27: a review made in `distillation.db` changes the next release like `distill review`.

    The same decision, made in the database or with the CLI, gives the same published rows in
    every config; each later decision wins over the earlier one, whichever way it was made.
    """
    seed_id = "a7f3b2c1d4e5f6a8"
    before = release_rows(released)
    assert seed_id in example_ids(released, "instruction")

    db_review(released, seed_id, -1, "misses hooks")
    materialize(RELEASE)
    rejected_in_db = release_rows(released)
    assert seed_id not in example_ids(released, "instruction")

    assert main(["review", "approve", seed_id, "--notes", "fine after all"]) == 0
    materialize(RELEASE)
    approved_by_cli = release_rows(released)
    assert_same_release(approved_by_cli, before)

    assert main(["review", "reject", seed_id, "--notes", "misses hooks"]) == 0
    materialize(RELEASE)
    assert_same_release(release_rows(released), rejected_in_db)

    db_review(released, seed_id, 1, "fine after all")
    materialize(RELEASE)
    assert_same_release(release_rows(released), approved_by_cli)
