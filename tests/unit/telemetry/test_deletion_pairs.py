"""A later deletion request rewrites earlier pair partitions (`deletion.remove_players`).

A day's pairs are built as of that day (docs/sources/telemetry.md#one-story-per-run), so a player
deleted on a later day is still in earlier days' pairs until the release's deletion log runs.
"""

from pathlib import Path

import polars as pl

from distill_assets.defs.telemetry.deletion import remove_players

ERIN, ALICE, BOB = "k_erin", "k_alice", "k_bob"


def test_a_pair_goes_when_either_player_is_deleted(tmp_path: Path) -> None:
    folder = tmp_path / "telemetry" / "decision_pairs"
    folder.mkdir(parents=True)
    pairs = pl.DataFrame(
        {
            "id": ["drought", "river", "famine"],
            "player_key_chosen": [ERIN, BOB, ALICE],
            "player_key_rejected": [ALICE, ERIN, BOB],
        }
    )
    pairs.write_parquet(folder / "2026-11-19.parquet")
    removed = remove_players(str(tmp_path), [ERIN])
    assert removed.rows() == [("telemetry/decision_pairs", ERIN, 2)]
    kept = pl.read_parquet(folder / "2026-11-19.parquet")
    assert kept.get_column("id").to_list() == ["famine"]
