"""A later deletion request rewrites earlier pair partitions (`deletion.remove_players`).

A day's pairs are built as of that day (docs/sources/telemetry.md#one-story-per-run), so a player
deleted on a later day is still in earlier days' pairs until the release's deletion log runs.
"""

from pathlib import Path

import polars as pl
import pytest

from distill_assets.defs.player_ids import hmac_pads, player_key
from distill_assets.defs.telemetry import privacy
from distill_assets.defs.telemetry.deletion import MENTION_COLUMNS, redact_mentions, remove_players

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


def test_mentions_of_deleted_players_go_from_bronze_text_in_every_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one deleted player's id per regex piece, as on a day whose deletions name many players
    monkeypatch.setattr(privacy, "PATTERN_CHARS", 10)
    key = b"test-key"
    deleted = {name: player_key(key, name) for name in ("p_erin", "Ninkasi_ama", "zeta9")}
    inner, outer = hmac_pads(key)
    for table, column in MENTION_COLUMNS.items():
        folder = tmp_path / "telemetry" / table
        folder.mkdir(parents=True)
        texts = ["ask p_erin and Ninkasi_ama", "zeta9 met zeta99", "nobody"]
        pl.DataFrame({column: texts}).write_parquet(folder / "2026-11-19.parquet")

    changed = redact_mentions(
        str(tmp_path), list(deleted.values()), {"inner_pad": inner, "outer_pad": outer}
    )

    assert changed == 4  # two rows of two tables
    for table, column in MENTION_COLUMNS.items():
        path = tmp_path / "telemetry" / table / "2026-11-19.parquet"
        assert pl.read_parquet(path).get_column(column).to_list() == [
            "ask [REDACTED_PLAYER_ID] and [REDACTED_PLAYER_ID]",
            "[REDACTED_PLAYER_ID] met zeta99",
            "nobody",
        ]
