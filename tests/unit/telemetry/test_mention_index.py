"""The mention index lets a deletion skip bronze partitions, and the lake ends up the same.

A deletion's mention redaction (`deletion.redact_mentions`) with the plan of the silver-written
indexes (`mention_index.plan_redaction`, `restamp`) must leave bronze and quarantine
byte-identical to the redaction without any index, whatever the indexes say.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from upath import UPath

from distill_assets.defs.player_ids import hmac_pads, pads_player_key, player_key
from distill_assets.defs.telemetry import deletion, mention_index, privacy
from distill_assets.lib.lake import partition_files
from distill_assets.lib.sql import connect

KEY = b"test-key"
INNER, OUTER = hmac_pads(KEY)
PADS = {"inner_pad": INNER, "outer_pad": OUTER}
# a raw id is named by a token equal to it as written, lower-cased or upper-cased
IDS = {"alice": "alice_01", "bob": "BOB_5", "carol": "carol_x", "erin": "erin_77"}
KEYS = {name: player_key(KEY, raw) for name, raw in IDS.items()}
D1, D2, D3 = "2026-11-17", "2026-11-18", "2026-11-19"
# (day, author, event_type, text): erin first plays on D2, bob mentions her on D1 already
EVENTS = [
    (D1, "alice", "dialogue_turn", "hello all"),
    (D1, "bob", "dialogue_turn", "has anyone seen Erin_77 yet"),
    (D1, "carol", "dialogue_turn", "alice_01 trades well"),
    (D2, "erin", "dialogue_turn", "i am new, ask Carol_X"),
    (D2, "carol", "dialogue_turn", "welcome erin_77, meet BOB_5"),
    (D2, "alice", "reasoning", "nothing to see"),
    (D3, "alice", "dialogue_turn", "ERIN_77 left; bob_5 stays"),
    (D3, "carol", "dialogue_turn", "quiet day"),
    (D3, "erin", "deletion_request", "{}"),
]


def write_day(lake: Path, day: str, rows: list[tuple[str, str, str, str]]) -> None:
    """Write a bronze partition and a quarantine partition of `rows` (author, type, text)."""
    bronze = lake / "telemetry" / "events"
    quarantine = lake / "telemetry" / "quarantine"
    bronze.mkdir(parents=True, exist_ok=True)
    quarantine.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {
            "event_id": [f"{day}-{n}" for n in range(len(rows))],
            "event_type": [kind for _, _, kind, _ in rows],
            "player_key": [KEYS[author] for _, author, _, _ in rows],
            "payload": [json.dumps({"text": text}) for _, _, _, text in rows],
        }
    ).write_parquet(bronze / f"{day}.parquet")
    lines = [f"{KEYS[author]} broken {{{text}" for _, author, _, text in rows]
    pl.DataFrame({"raw_line": lines}).write_parquet(quarantine / f"{day}.parquet")


def make_lake(lake: Path) -> None:
    for day in (D1, D2, D3):
        write_day(lake, day, [row for row in EVENTS if row[0] == day])


def index_day(lake: Path, day: str) -> None:
    """Write a day's mention index as silver does: its tokens naming known players, hashed."""
    root = str(lake)
    known = pl.concat(
        pl.scan_parquet(f).select("player_key")
        for f in partition_files(root, "telemetry", "events")
        if Path(f).stem <= day
    )
    con = connect(private=True)
    try:
        con.register("known", known.unique().collect().to_arrow())
        bronze = lake / "telemetry" / "events" / f"{day}.parquet"
        con.read_parquet(str(bronze)).select("payload").create_view("events")
        tokens = privacy.player_tokens(con, PADS)
        keys = mention_index.mentioned_keys(con, tokens, PADS)
    finally:
        con.close()
    mention_index.write_index(mention_index.day_index(root, day), keys)


def index_lake(lake: Path) -> None:
    for day in (D1, D2, D3):
        index_day(lake, day)


def delete(lake: Path, players: list[str]) -> int:
    """Run the deletion's bronze steps as `telemetry_deletion_log` does; return the mentions."""
    root = str(lake)
    plan = mention_index.plan_redaction(root, players)
    deletion.remove_players(root, players)
    changed = deletion.redact_mentions(root, players, PADS, skipped=plan.skipped)
    mention_index.restamp(root, plan, players)
    return changed


def stores(lake: Path) -> dict[str, bytes]:
    """Return the bytes of every bronze and quarantine file of the lake."""
    return {
        f"{table}/{path.name}": path.read_bytes()
        for table in ("events", "quarantine")
        for path in sorted((lake / "telemetry" / table).iterdir())
    }


def texts(lake: Path) -> str:
    return " ".join(
        pl.read_parquet(lake / "telemetry" / table / f"{day}.parquet")
        .get_column(column)
        .str.join(" ")
        .item()
        for table, column in deletion.MENTION_COLUMNS.items()
        for day in (D1, D2, D3)
    )


@pytest.fixture
def lakes(tmp_path: Path) -> tuple[Path, Path]:
    """Return two equal lakes: one with every day's mention index, one without."""
    indexed, plain = tmp_path / "indexed", tmp_path / "plain"
    make_lake(indexed)
    make_lake(plain)
    index_lake(indexed)
    return indexed, plain


def test_the_index_holds_known_keys_named_in_any_case_and_no_raw_id(
    lakes: tuple[Path, Path],
) -> None:
    indexed, _ = lakes
    held = {
        day: pl.read_parquet(mention_index.index_path(str(indexed), day)).to_series().to_list()
        for day in (D1, D2, D3)
    }
    # D1: erin is not known yet (her first event is on D2), alice is (lower-cased id)
    assert held == {
        D1: [KEYS["alice"]],
        D2: sorted([KEYS["carol"], KEYS["erin"], KEYS["bob"]]),
        D3: sorted([KEYS["erin"], KEYS["bob"]]),
    }
    for path in (indexed / "_index").rglob("*.parquet"):
        content = path.read_bytes().lower()
        assert not any(raw.lower().encode() in content for raw in IDS.values())
    assert pads_player_key(PADS, IDS["erin"]) == KEYS["erin"]
    # one read of every footer gives each day's fingerprint as the day's own computation does
    fingerprints = mention_index.day_fingerprints(str(indexed))
    for day in (D1, D2, D3):
        assert mention_index.day_index(str(indexed), day).fingerprint == fingerprints[day]
    assert len(set(fingerprints.values())) == 3


def test_a_deletion_with_the_index_leaves_the_same_lake_as_without(
    lakes: tuple[Path, Path],
) -> None:
    indexed, plain = lakes
    # D1 names erin before her first event: its index cannot tell, it is scanned
    assert mention_index.plan_redaction(str(indexed), [KEYS["erin"]]).skipped == frozenset()
    assert delete(indexed, [KEYS["erin"]]) == delete(plain, [KEYS["erin"]]) == 6
    assert stores(indexed) == stores(plain)
    # the mention on D1, before erin's first event, is gone too (any case)
    assert "erin_77" not in texts(indexed).lower()
    # re-stamped: current for bronze now, without erin
    fingerprints = mention_index.day_fingerprints(str(indexed))
    for day in (D1, D2, D3):
        keys = mention_index.current_keys(
            mention_index.MentionIndex(
                mention_index.index_path(str(indexed), day), fingerprints[day]
            )
        )
        assert keys is not None and KEYS["erin"] not in keys


def test_a_second_night_scans_only_the_days_the_index_names(
    lakes: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    indexed, plain = lakes
    delete(indexed, [KEYS["erin"]])
    delete(plain, [KEYS["erin"]])
    bob = [KEYS["bob"]]
    plan = mention_index.plan_redaction(str(indexed), bob)
    deletion.remove_players(str(indexed), bob)
    opened: list[str] = []
    real = deletion.local_file

    def recording(path: UPath):
        opened.append(f"{path.parent.name}/{path.name}")
        return real(path)

    monkeypatch.setattr(deletion, "local_file", recording)
    changed = deletion.redact_mentions(str(indexed), bob, PADS, skipped=plan.skipped)
    monkeypatch.undo()
    mention_index.restamp(str(indexed), plan, bob)
    # bob is known from D1 on and named on D2 and D3 only: D1's texts are not read
    assert sorted(set(p for p in opened if p.startswith("events/"))) == [
        f"events/{D2}.parquet",
        f"events/{D3}.parquet",
    ]
    assert changed == delete(plain, bob) == 4
    assert stores(indexed) == stores(plain)
    assert "bob_5" not in texts(indexed).lower()


def test_a_stale_index_is_scanned(lakes: tuple[Path, Path]) -> None:
    indexed, plain = lakes
    # D3 re-ingested after its index: now it names carol, whom the old index does not list
    for lake in (indexed, plain):
        rows = [row for row in EVENTS if row[0] == D3]
        write_day(lake, D3, [*rows, (D3, "alice", "dialogue_turn", "CAROL_X joined")])
    plan = mention_index.plan_redaction(str(indexed), [KEYS["carol"]])
    assert sorted(plan.current) == [D1, D2]
    assert plan.skipped == {str(indexed / "telemetry" / "events" / f"{D1}.parquet")}
    stale = mention_index.index_path(str(indexed), D3)
    assert stale.exists()
    assert delete(indexed, [KEYS["carol"]]) == delete(plain, [KEYS["carol"]]) == 4
    assert stores(indexed) == stores(plain)
    assert "carol_x" not in texts(indexed).lower()
    # the stale index is removed (it could name a player just deleted); the current ones stay
    assert not stale.exists()
    assert mention_index.index_path(str(indexed), D2).exists()


def test_without_index_files_every_partition_is_scanned(lakes: tuple[Path, Path]) -> None:
    indexed, plain = lakes
    shutil.rmtree(indexed / "_index")
    plan = mention_index.plan_redaction(str(indexed), [KEYS["alice"]])
    assert plan.skipped == frozenset()
    assert delete(indexed, [KEYS["alice"]]) == delete(plain, [KEYS["alice"]])
    assert stores(indexed) == stores(plain)
