"""A deletion erases the player's key from every materialization in the Dagster instance.

A real SQLite instance (run-sharded, as `make run` and `make ui` use) holds materializations that
name a player in their metadata: two runs of one asset (the older one is what only the latest
materialization's cache would miss), a runless report and an asset check evaluation. After
`erase_from_instance` no byte of any instance file holds the key, the events still load with the
placeholder where the key was, and another player's key is untouched.
"""

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable

from distill_assets.defs.telemetry import deletion
from distill_assets.defs.telemetry.deletion import erase_from_instance, materializations_naming
from distill_assets.rules.telemetry_privacy import PLAYER_PLACEHOLDER

ERASED = "9f" * 32
KEPT = "a1" * 32
ASSET = dg.AssetKey(["telemetry", "planted"])


@dg.asset(key=ASSET, check_specs=[dg.AssetCheckSpec("names", asset=ASSET)])
def planted(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    """Write metadata naming both players (as an older version of an asset might have)."""
    return dg.MaterializeResult(
        metadata={
            "preview": dg.MetadataValue.md(f"| player_key |\n| {ERASED} |\n| {KEPT} |"),
            "owner": ERASED,
            "run": context.run_id,
        },
        check_results=[
            dg.AssetCheckResult(check_name="names", passed=True, metadata={"who": ERASED})
        ],
    )


def storage_bytes(home: Path) -> bytes:
    """Every byte of every file of the instance's storage folder."""
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def storage_texts(home: Path) -> str:
    """Every value of every table of every SQLite database of the instance, as text."""
    texts = []
    for path in sorted(home.rglob("*.db")):
        con = sqlite3.connect(path)
        try:
            tables = [
                r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            for table in tables:
                for row in con.execute(f'SELECT * FROM "{table}"'):
                    texts.extend(str(value) for value in row)
        finally:
            con.close()
    return "\n".join(texts)


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[dg.DagsterInstance]:
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        yield instance


def test_a_deleted_players_key_leaves_every_materialization(
    instance: dg.DagsterInstance, tmp_path: Path
) -> None:
    for _ in range(2):
        assert dg.materialize([planted], instance=instance).success
    instance.report_runless_asset_event(
        dg.AssetMaterialization(asset_key=ASSET, metadata={"note": f"kept for {ERASED}"})
    )
    assert materializations_naming(instance, [ASSET], [ERASED, KEPT]).rows() == [
        ("dagster/materialization_metadata", ERASED, 3),
        ("dagster/materialization_metadata", KEPT, 2),
    ]
    assert ERASED in storage_texts(tmp_path)

    assert erase_from_instance(instance, [ERASED]) > 3
    assert materializations_naming(instance, [ASSET], [ERASED, KEPT]).rows() == [
        ("dagster/materialization_metadata", ERASED, 0),
        ("dagster/materialization_metadata", KEPT, 2),
    ]
    assert ERASED not in storage_texts(tmp_path)
    assert ERASED.encode() not in storage_bytes(tmp_path)
    assert KEPT in storage_texts(tmp_path)
    # the events still load, the key replaced, the rest of their metadata kept
    records = instance.fetch_materializations(ASSET, limit=10).records
    owners = [r.asset_materialization.metadata.get("owner") for r in records]
    assert [o.value if o else None for o in owners] == [
        None,
        PLAYER_PLACEHOLDER,
        PLAYER_PLACEHOLDER,
    ]
    latest = instance.get_latest_materialization_event(ASSET)
    assert latest is not None and latest.asset_materialization.metadata["note"].value == (
        f"kept for {PLAYER_PLACEHOLDER}"
    )
    check = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(ASSET, "names")]
    )
    assert ERASED not in repr(check)
    assert erase_from_instance(instance, [ERASED]) == 0


def test_reading_each_store_first_erases_exactly_what_one_statement_per_key_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rows counted and replaced whether the keys a store holds are found first
    (`keys_held`) or every key gets its statement: a key in upper case counts as SQLite's `LIKE`
    counts it (a match its `replace` leaves), absent keys change nothing. Pages of two rows: the
    stores are read across many pages."""
    monkeypatch.setattr(deletion, "TEXT_PAGE", 2)
    absent = [f"{i:064x}" for i in range(50)]
    upper = "b2" * 32
    keys = [*absent[:25], ERASED, upper, *absent[25:]]
    outcome = {}
    for dialects in (frozenset(), deletion.PREFILTERED_DIALECTS):
        home = tmp_path / str(len(dialects))
        home.mkdir()
        with dg.instance_for_test(temp_dir=str(home)) as instance:
            for _ in range(2):
                assert dg.materialize([planted], instance=instance).success
            instance.report_runless_asset_event(
                dg.AssetMaterialization(asset_key=ASSET, metadata={"note": upper.upper()})
            )
            storage = instance.event_log_storage
            with storage.index_connection() as conn:
                column = SqlEventLogStorageTable.c["event"]
                assert deletion.keys_held(conn, column, keys) == [ERASED, upper]
            monkeypatch.setattr(deletion, "PREFILTERED_DIALECTS", dialects)
            erased = erase_from_instance(instance, keys)
        texts = storage_texts(home)
        outcome[bool(dialects)] = (
            erased,
            texts.count(PLAYER_PLACEHOLDER),
            texts.count(ERASED),
            texts.count(upper.upper()),
        )
    assert outcome[True] == outcome[False]
    assert outcome[True][0] > 3 and outcome[True][2] == 0 and outcome[True][3] > 0
