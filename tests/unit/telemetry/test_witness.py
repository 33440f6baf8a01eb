"""Witness review logic: triggers, decisions (latest wins), exclusions, validation records."""

import json
from pathlib import Path

import polars as pl
import pytest

from distill_assets.defs.telemetry import witness


def rows(*metadata: dict) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": [f"r{i}" for i in range(len(metadata))],
            "metadata": [json.dumps(m) for m in metadata],
        }
    )


def test_each_trigger_at_its_threshold() -> None:
    frame = rows(
        {"ambiguity_score": 0.91},
        {"ambiguity_score": 0.9},
        {"ambiguity_level": "Critical"},
        {"ambiguity_level": "High"},
        {"novelty_score": 0.9},
        {"novelty_score": 1.0},
        {"novelty_score": 0.89},
        {"validation_flags": ["clock_skew"]},
        {"validation_flags": []},
        {"player_key": "bad"},
        {"user_id_chosen": "ok", "user_id_rejected": "bad", "ambiguity_score": 0.95},
    )
    flagged = pl.DataFrame({"player_key": ["bad"]})
    assert witness.triggers(frame, flagged).to_list() == [
        ["high_ambiguity"],
        [],
        ["high_ambiguity"],
        [],
        ["extreme_novelty"],
        [],
        [],
        ["fraud_flagged"],
        [],
        ["fraud_flagged"],
        ["high_ambiguity", "fraud_flagged"],
    ]


def test_latest_decision_wins_and_rejections_are_exclusions(tmp_path: Path) -> None:
    data = str(tmp_path)
    assert witness.read_decisions(data).is_empty()
    witness.append_decision(data, "r1", "reject", notes=None, reviewer="w1", ts=10.0)
    witness.append_decision(data, "r1", "approve", notes="on second look", reviewer="w2", ts=20.0)
    witness.append_decision(data, "r2", "approve", notes=None, reviewer="w1", ts=30.0)
    witness.append_decision(data, "r2", "reject", notes=None, reviewer="w3", ts=30.0)
    with witness.decisions_path(data).open("a") as handle:
        handle.write("not json\n")
    decided = witness.read_decisions(data)
    assert decided.select("id", "decision", "reviewer").rows() == [
        ("r1", "approve", "w2"),
        ("r2", "reject", "w3"),
    ]
    assert witness.exclusions(decided).rows() == [("telemetry", "r2", "rejected_by_witness")]
    with pytest.raises(ValueError, match="decision must be one of"):
        witness.append_decision(data, "r3", "edit", notes=None, reviewer="w1", ts=1.0)


def test_only_reviewed_rows_get_a_validation_record(tmp_path: Path) -> None:
    data = str(tmp_path)
    witness.append_decision(data, "r0", "approve", notes=None, reviewer="w1", ts=1795000000.0)
    out = witness.with_validation_records(rows({"a": 1}, {"b": 2}), witness.read_decisions(data))
    first, second = (json.loads(m) for m in out["metadata"])
    assert first == {
        "a": 1,
        "validation": {
            "type": "witness",
            "result": "approve",
            "validator": "w1",
            "timestamp": "2026-11-18T11:06:40Z",
        },
    }
    assert second == {"b": 2}
    assert out["id"].to_list() == ["r0", "r1"]
