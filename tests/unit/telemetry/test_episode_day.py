"""`telemetry/episodes` built in buckets of episodes equals the whole-day build, byte for byte.

The reference is the whole-day composition the asset ran before it was bucketed: every step of
the day gated, built and tokenized at once, then weighed, classed and scored for novelty.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from upath import UPath

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.telemetry import privacy, witness
from distill_assets.defs.telemetry.competence import (
    competence,
    hard_negative_pairs,
    pairs_of_candidates,
)
from distill_assets.defs.telemetry.episode_day import (
    PREVIEW_COLUMNS,
    DayInputs,
    audit_rates,
    build_episode_day,
)
from distill_assets.defs.telemetry.episodes import build_episodes, rlds_rows
from distill_assets.defs.telemetry.novelty import apply_novelty, published_index
from distill_assets.defs.telemetry.taxonomy import class_counts, with_value_class
from distill_assets.defs.telemetry.triage import (
    audit_false_negatives,
    gate,
    passed,
    step_episodes,
)
from distill_assets.defs.telemetry.trust import (
    event_flags,
    trust_signals,
    trust_walk,
    trust_weighted,
)
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.lake import partition_path, write_parquet_atomic
from distill_assets.lib.metadata import reason_counts
from distill_assets.rules.telemetry_triage import AUDIT_VALUABLE_CLASSES
from tests.unit.telemetry.episode_frames import planted_day

DAY = "2026-11-19"
EARLIER = "2026-11-18"


def _whole_day(inputs: DayInputs, embedder) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """The asset's whole-day build before buckets: rows, pair candidates' pairs, counts."""
    keys = step_episodes(inputs.events.select("event_id", "event_type", "payload")).collect()
    verdicts = gate(keys.lazy(), inputs.triage, "episode_id")
    classes = inputs.classes.collect()
    valuable = classes.filter(pl.col("competence").is_in(AUDIT_VALUABLE_CLASSES))
    audit = audit_false_negatives(keys.lazy(), inputs.triage, verdicts, valuable, "episode_id")
    built = build_episodes(inputs.events)
    episodes = passed(built, verdicts, "episode_id")
    rows = rlds_rows(episodes, classes).select(
        *(pl.col(name).cast(dtype) for name, dtype in feed_schema("rlds").items()),
        privacy.subject("rlds", pl.col("player_key")).alias(SUBJECT_COLUMN),
        "player_key",
    )
    flags = event_flags(inputs.events, "trajectory_step", "episode_id", "episode:")
    rows, below_floor = trust_weighted(rows, inputs.walk, flags)
    rows = witness.with_validation_records(with_value_class(rows, "episodes"), inputs.decisions)
    index = published_index(inputs.lake_root, "episodes", DAY, rows.get_column(SUBJECT_COLUMN))
    result = apply_novelty(rows, "rlds", index, embedder)
    counts = {
        "built": built.height,
        "passed": episodes.height,
        "verdicts": reason_counts(verdicts, "triage"),
        "audit": audit,
        "below_floor": below_floor,
        "index_rows": index.height,
        "duplicates": result.duplicates,
        "value_classes": class_counts(result.kept),
        "flagged_steps": int(episodes.get_column("flagged_steps").sum()),
    }
    return result.kept, hard_negative_pairs(episodes, classes, inputs.excluded), counts


@pytest.fixture(scope="module")
def day_inputs(tmp_path_factory: pytest.TempPathFactory) -> DayInputs:
    lake_root = str(tmp_path_factory.mktemp("lake"))
    events, triage = planted_day()
    embedder = load_embedder()
    classes = competence(build_episodes(events), embedder)
    inputs = DayInputs(
        events=events,
        triage=triage,
        classes=classes.lazy(),
        walk=trust_walk(trust_signals(events.with_columns(event_seq=pl.int_range(pl.len())))),
        excluded=pl.DataFrame({"player_key": ["p1"]}),
        decisions=pl.DataFrame(schema=witness.DECISION_SCHEMA),
        lake_root=lake_root,
        partition=DAY,
        table="episodes",
    )
    # an earlier day published two of the rows: they are duplicates now, and index rows
    rows, _, _ = _whole_day(inputs, embedder)
    earlier = rows.filter(pl.col("episode_id").is_in(["ep-06", "ep-13"]))
    write_parquet_atomic(earlier, partition_path(lake_root, "telemetry", "episodes", EARLIER))
    reviewed = rows.get_column("id")[0]
    decisions = pl.DataFrame(
        [(reviewed, "approve", None, "rev", 1.0)], schema=witness.DECISION_SCHEMA, orient="row"
    )
    return DayInputs(**{**inputs.__dict__, "decisions": decisions})


@pytest.mark.parametrize("bucket_episodes", [1, 2, 5, 100])
def test_buckets_write_the_whole_day_build_byte_for_byte(
    day_inputs: DayInputs, bucket_episodes: int, tmp_path: Path
) -> None:
    embedder = load_embedder()
    rows, pairs, counts = _whole_day(day_inputs, embedder)
    out = tmp_path / "episodes.parquet"
    day = build_episode_day(day_inputs, embedder, out, bucket_episodes=bucket_episodes)

    whole = tmp_path / "whole.parquet"
    write_parquet_atomic(rows, UPath(whole))
    assert out.read_bytes() == whole.read_bytes()
    assert pl.read_parquet(out).equals(rows)
    assert pairs_of_candidates(day.candidates()).equals(pairs)
    got = {
        "built": day.built,
        "passed": day.passed,
        "verdicts": day.verdicts,
        "audit": audit_rates(day.audit),
        "below_floor": day.below_floor,
        "index_rows": day.index_rows,
        "duplicates": day.duplicates,
        "value_classes": day.value_classes,
        "flagged_steps": day.flagged_steps,
    }
    assert got == counts
    assert (day.published, day.steps) == (
        rows.height,
        int(rows.get_column("steps").list.len().sum()),
    )
    assert day.preview_rows().equals(rows.select(PREVIEW_COLUMNS).head(5))
    assert sorted(Path(p).name for p in out.parent.iterdir()) == [
        "episodes.parquet",
        "whole.parquet",
    ]


def test_the_planted_day_exercises_every_path(day_inputs: DayInputs) -> None:
    """The fixture holds what could differ between buckets: duplicates, pairs, a review, skips."""
    rows, pairs, counts = _whole_day(day_inputs, load_embedder())
    assert (counts["built"], counts["passed"], rows.height) == (14, 10, 2)
    assert (counts["duplicates"], counts["index_rows"], pairs.height) == (3, 2, 2)
    assert counts["below_floor"] == 2
    assert counts["verdicts"]["pass"] == 10
    assert counts["audit"]["wheel_manipulation"] == {
        "audited": 8,
        "false_negatives": 1,
        "rate": 0.125,
    }
    assert rows.filter(pl.col("metadata").str.contains('"validation"')).height == 1


def test_a_day_without_steps_writes_the_whole_day_build(
    day_inputs: DayInputs, tmp_path: Path
) -> None:
    empty = {"events": day_inputs.events.head(0), "classes": day_inputs.classes.head(0)}
    inputs = DayInputs(**{**day_inputs.__dict__, **empty})
    embedder = load_embedder()
    rows, pairs, _ = _whole_day(inputs, embedder)
    out = tmp_path / "episodes.parquet"
    day = build_episode_day(inputs, embedder, out)
    write_parquet_atomic(rows, UPath(tmp_path / "whole.parquet"))
    assert out.read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    assert (day.built, day.published, pairs.height) == (0, 0, 0)
    assert pairs_of_candidates(day.candidates()).equals(pairs)
