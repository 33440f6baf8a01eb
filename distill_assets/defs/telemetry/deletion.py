"""Applying deletion requests to tables already written, and the deletion log.

See docs/privacy.md#deletion.

See `privacy.py` for the two-layer mechanism. `remove_players` rewrites, atomically and one
partition file at a time, every partition of bronze, quarantine and `DELETABLE_TABLES` that still
holds a deleted player's rows; `deletion_log` keeps one row per request with the rows it removed
per table, the release that first excluded them and what a check after the removal still found.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager as ContextManager
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import polars as pl
import sqlalchemy as db
from dagster._core.storage.event_log import SqlEventLogStorage, SqliteEventLogStorage
from dagster._core.storage.event_log.schema import (
    AssetCheckExecutionsTable,
    AssetEventTagsTable,
    AssetKeyTable,
    SqlEventLogStorageTable,
)
from upath import UPath

from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.ingest import QUARANTINE_TABLE
from distill_assets.defs.telemetry.privacy import DELETABLE_TABLES, SOURCE, word_patterns
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import (
    PARQUET_COMPRESSION,
    ROW_GROUP_SIZE,
    local_file,
    move_into_place,
    partition_files,
)
from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules.telemetry_privacy import (
    EVENT_DATA_TYPES,
    PLAYER_PLACEHOLDER,
    TOKEN_CHARS,
)

LOG_SCHEMA = pl.Schema(
    {
        "request_id": pl.String(),
        "player_key": pl.String(),
        "scope": pl.String(),
        "requested_at": pl.Float64(),
        "rows_removed": pl.String(),
        "rows_removed_total": pl.Int64(),
        "release_before": pl.String(),
        "first_excluded_in": pl.String(),
        "rows_still_held": pl.String(),
    }
)
MANIFEST = "release.json"
REMOVED_SCHEMA = pl.Schema({"table": pl.String(), "player_key": pl.String(), "rows": pl.Int64()})
BRONZE_TABLE = "events"
# the one bronze event of an erased player that stays: the request itself (no text, no raw id)
KEPT_BRONZE_EVENT = "deletion_request"
# every partitioned telemetry table a deletion rewrites: bronze and quarantine, then past bronze
# tables a consent withdrawal rewrites -> their data type (None: by each row's event_type)
TYPED_TABLES: dict[str, str | None] = {
    "accepted_events": None,
    "triage": None,
    "dialogues": "sft",
    "decisions": "dpo",
    "decision_pairs": "dpo",
    "competence": "rlds",
    "episodes": "rlds",
    "episode_pairs": "rlds",
    "reasoning": "cot",
}
# the text column of the stores that keep other players' words as written: bronze and quarantine
MENTION_COLUMNS = {BRONZE_TABLE: "payload", QUARANTINE_TABLE: "raw_line"}
METADATA_STORE = "dagster/materialization_metadata"
METADATA_PAGE = 1000
# texts of one event log column read per page when looking for the keys it holds
TEXT_PAGE = 10_000
# SQL dialects whose `LIKE` folds at most ASCII case: a key an ASCII-case-insensitive search does
# not find in any text of a column is one no `LIKE '%key%'` matches there (MySQL's collations
# may fold accents too, so it keeps one statement per key and store)
PREFILTERED_DIALECTS = frozenset({"sqlite", "postgresql"})
ERASED_TABLES: tuple[str, ...] = (BRONZE_TABLE, QUARANTINE_TABLE, *DELETABLE_TABLES)
# the text columns of a SQL event log that can hold what an event said (metadata, tags)
_INSTANCE_TEXTS: tuple[tuple[db.Table, str], ...] = (
    (SqlEventLogStorageTable, "event"),
    (AssetKeyTable, "last_materialization"),
    (AssetKeyTable, "cached_status_data"),
    (AssetCheckExecutionsTable, "evaluation_event"),
    (AssetEventTagsTable, "value"),
)


def _rewrite_without(path: UPath, involved: pl.Expr, *changes: pl.Expr) -> None:
    """Rewrite the partition file `path` without the rows `involved` selects, atomically.

    `changes` (column expressions) are applied to the kept rows. The kept rows stream from the old
    file to a local staged one (Polars' streaming sink), so memory does not grow with the
    partition; the staged file then replaces `path`.
    """
    work = working_dir("deletion")
    try:
        staged = work / path.name
        with local_file(path) as local:
            pl.scan_parquet(local).filter(~involved).with_columns(*changes).sink_parquet(
                staged, compression=PARQUET_COMPRESSION, row_group_size=ROW_GROUP_SIZE
            )
        move_into_place(staged, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def redact_mentions(
    lake_root: str,
    players: list[str],
    pads: dict[str, bytes],
    *,
    skipped: Collection[str] = frozenset(),
) -> int:
    """Replace, in bronze payloads and quarantined raw lines, the raw ids of `players` others wrote.

    Another player's text may name a deleted player; past bronze that id is already replaced, and
    this removes it from bronze and quarantine too. The tokens are found as silver finds them
    (`select_player_tokens.sql`: the keyed hash of each distinct token against the deleted keys);
    a partition holding some is rewritten with them replaced by the placeholder. Returns the rows
    changed. `skipped`: bronze partition files known to name none of `players`, not read
    (`mention_index.plan_redaction`).
    """
    changed = 0
    if not players:
        return changed
    deleted = pl.DataFrame({"player_key": players}, schema={"player_key": pl.String()})
    for table, column in MENTION_COLUMNS.items():
        for path in partition_files(lake_root, SOURCE, table):
            if table == BRONZE_TABLE and path in skipped:
                continue
            con = connect(private=True)
            try:
                with local_file(UPath(path)) as local:
                    con.read_parquet(str(local)).select(
                        duckdb.ColumnExpression(column).alias("payload")
                    ).create_view("events")
                    con.register("known", deleted.to_arrow())
                    tokens = con.execute(
                        load_sql("telemetry/select_player_tokens"),
                        {**pads, "token": TOKEN_CHARS, "match_keys": False},
                    ).fetchall()
            finally:
                con.close()
            if not tokens:
                continue
            patterns = word_patterns([t for (t,) in tokens])
            mentions = pl.any_horizontal(pl.col(column).str.contains(p) for p in patterns)
            changed += (
                pl.scan_parquet(path).filter(mentions.fill_null(False)).select(pl.len()).collect()
            ).item()
            replaced = pl.col(column)
            for pattern in patterns:
                replaced = replaced.str.replace_all(pattern, PLAYER_PLACEHOLDER, literal=False)
            _rewrite_without(UPath(path), pl.lit(False), replaced)
    return changed


def _matched_players(table: str, wanted: pl.Series) -> pl.Expr:
    """Return, per row of `table`, the list of `wanted` player keys the row belongs to.

    Bronze rows match on `player_key`, except the deletion requests themselves, which bronze keeps
    as the record `telemetry/deletions` is rebuilt from. Quarantine rows have no key column: their
    raw line holds the key in place of the raw id (ingest), found with an Aho-Corasick match.
    A table of pairs names two players: a row goes when either is deleted.
    """
    if table == BRONZE_TABLE:
        own = pl.col("player_key").is_in(wanted.implode()) & (
            pl.col("event_type") != KEPT_BRONZE_EVENT
        )
        return (
            pl.when(own)
            .then(pl.concat_list("player_key"))
            .otherwise(pl.lit([], pl.List(pl.String)))
        )
    if table == QUARANTINE_TABLE:
        return pl.col("raw_line").fill_null("").str.extract_many(wanted.to_list()).list.unique()
    spec = DELETABLE_TABLES[table]
    columns = (spec,) if isinstance(spec, str) else spec
    return pl.concat_list(
        pl.when(pl.col(c).is_in(wanted.implode())).then(pl.col(c)) for c in columns
    ).list.drop_nulls()


def _hits(path: str, matched: pl.Expr) -> pl.DataFrame:
    """Return `(player_key, rows)`: the rows of a partition file each wanted player has."""
    return (
        pl.scan_parquet(path)
        .select(matched.alias("player_key"))
        .explode("player_key")
        .drop_nulls()
        .group_by("player_key")
        .agg(pl.len().cast(pl.Int64).alias("rows"))
        .collect()
    )


def _withdrawn_subjects(table: str, subjects: pl.Series) -> pl.Expr:
    """Return, per row of `table`, the withdrawn subjects (`<type>:<player_key>`) it belongs to."""
    data_type = TYPED_TABLES[table]
    spec = DELETABLE_TABLES[table]
    columns = (spec,) if isinstance(spec, str) else spec
    kind = (
        pl.col("event_type").replace_strict(EVENT_DATA_TYPES, default=None)
        if data_type is None
        else pl.lit(data_type)
    )
    return pl.concat_list(
        pl.when((kind + ":" + pl.col(c)).is_in(subjects.implode())).then(kind + ":" + pl.col(c))
        for c in columns
    ).list.drop_nulls()


def remove_withdrawn(lake_root: str, withdrawn: pl.DataFrame) -> pl.DataFrame:
    """Remove the rows of data types their players withdrew consent from (`TYPED_TABLES`).

    `withdrawn` holds `(player_key, data_type)` whose latest consent decision is a withdrawal.
    Returns `(table, player_key, rows)` with `player_key` the subject `<data type>:<player_key>`.
    Each partition with such rows is rewritten atomically, like a deletion.
    """
    removed: list[pl.DataFrame] = []
    subjects = withdrawn.select(pl.col("data_type") + ":" + pl.col("player_key")).to_series()
    for table in TYPED_TABLES if subjects.len() else ():
        matched = _withdrawn_subjects(table, subjects)
        for path in partition_files(lake_root, SOURCE, table):
            hits = _hits(path, matched)
            if hits.height:
                _rewrite_without(UPath(path), matched.list.len() > 0)
                removed.append(hits.with_columns(pl.lit(f"{SOURCE}/{table}").alias("table")))
    if not removed:
        return pl.DataFrame(schema=REMOVED_SCHEMA)
    return pl.concat(removed).select(REMOVED_SCHEMA.names()).sort("table", "player_key")


def remaining_rows(lake_root: str, players: list[str]) -> pl.DataFrame:
    """Return `(table, player_key, rows)`: every erased table and player, with the rows still held.

    Run after `remove_players`, every count is zero: the deletion log records it as its proof.
    """
    grid = pl.DataFrame(
        {"table": [f"{SOURCE}/{t}" for t in ERASED_TABLES]}, schema={"table": pl.String()}
    ).join(pl.DataFrame({"player_key": players}, schema={"player_key": pl.String()}), how="cross")
    found: list[pl.DataFrame] = []
    wanted = pl.Series(players, dtype=pl.String)
    for table in ERASED_TABLES if players else ():
        matched = _matched_players(table, wanted)
        for path in partition_files(lake_root, SOURCE, table):
            found.append(
                _hits(path, matched).with_columns(pl.lit(f"{SOURCE}/{table}").alias("table"))
            )
    held = (
        pl.concat(found).group_by("table", "player_key").agg(pl.col("rows").sum())
        if found
        else pl.DataFrame(schema=REMOVED_SCHEMA)
    )
    return (
        grid.join(held, on=["table", "player_key"], how="left")
        .with_columns(pl.col("rows").fill_null(0))
        .select(REMOVED_SCHEMA.names())
        .sort("table", "player_key")
    )


def remove_players(lake_root: str, players: list[str]) -> pl.DataFrame:
    """Remove `players`' rows from every partition of `ERASED_TABLES`; return what was removed.

    Returns `(table, player_key, rows)` per table and player with removed rows. A partition without
    such rows is not touched; one with them is rewritten, streamed, and replaced atomically.
    """
    removed: list[pl.DataFrame] = []
    if not players:
        return pl.DataFrame(schema=REMOVED_SCHEMA)
    wanted = pl.Series(players, dtype=pl.String)
    for table in ERASED_TABLES:
        matched = _matched_players(table, wanted)
        for path in partition_files(lake_root, SOURCE, table):
            hits = _hits(path, matched)
            if hits.height == 0:
                continue
            _rewrite_without(UPath(path), matched.list.len() > 0)
            removed.append(hits.with_columns(pl.lit(f"{SOURCE}/{table}").alias("table")))
    if not removed:
        return pl.DataFrame(schema=REMOVED_SCHEMA)
    return (
        pl.concat(removed)
        .group_by("table", "player_key")
        .agg(pl.col("rows").sum())
        .select("table", "player_key", "rows")
        .sort("table", "player_key")
    )


def keys_held(conn: db.Connection, column: db.Column, keys: list[str]) -> list[str]:
    """Return the `keys` (in order) some text of `column` holds in any ASCII case.

    One read of the column, in pages of `TEXT_PAGE` rows by primary key (`id`, every event log
    table has one; a server-side cursor would need a transaction, which Dagster's PostgreSQL
    connections, in autocommit, do not open), and an Aho-Corasick search of each page: a key not
    returned is in no text, so an `UPDATE ... WHERE column LIKE '%key%'` would change no row.
    """
    wanted = list(dict.fromkeys(k.lower() for k in keys))
    found: set[str] = set()
    row_id = column.table.c.id
    page_query = db.select(row_id, column).where(column.is_not(None)).order_by(row_id)
    last = None
    while len(found) < len(wanted):
        query = page_query if last is None else page_query.where(row_id > last)
        page = conn.execute(query.limit(TEXT_PAGE)).fetchall()
        if not page:
            break
        last = page[-1][0]
        matches = (
            pl.Series([row[1] for row in page], dtype=pl.String)
            .str.extract_many(wanted, ascii_case_insensitive=True, overlapping=True)
            .explode()
            .drop_nulls()
            .str.to_lowercase()
        )
        found.update(matches.unique().to_list())
    return [k for k in keys if k.lower() in found]


def erase_from_instance(instance: dg.DagsterInstance, players: list[str]) -> int:
    """Replace every player key of `players` in the Dagster instance's event log; return the rows.

    Rewrites, in place, each stored text that names a player: every event (materializations and
    observations of every run, not only an asset's latest, and the run's own copy where the
    storage keeps one per run), the asset's cached latest materialization, asset check
    evaluations and event tags. The key becomes `PLAYER_PLACEHOLDER` in the serialized text (a
    hex key next to a placeholder without quotes or backslashes: the JSON stays valid, so the
    event still loads and shows in the UI with the value redacted). One `UPDATE ... SET
    col = replace(col, key, placeholder) WHERE col LIKE '%key%'` per store and key, on the
    event log storage's own SQL tables (`SqlEventLogStorage`: SQLite, PostgreSQL, MySQL). On
    SQLite, freed bytes are overwritten (`secure_delete`) and the write-ahead log is checkpointed
    and truncated, so the old text is not left in the files either. On SQLite and PostgreSQL a
    store's column is read once first (`keys_held`), and only the keys it holds get their
    `UPDATE`: the same statements that change rows, without one scan of the store per key.
    """
    storage = instance.event_log_storage
    if not isinstance(storage, SqlEventLogStorage):
        raise TypeError(
            f"cannot erase players from a {type(storage).__name__} event log: "
            "a SQL event log storage (SQLite, PostgreSQL, MySQL) is required"
        )
    keys = list(dict.fromkeys(players))
    if not keys:
        return 0
    stores: list[tuple[Callable[[], ContextManager[Any]], tuple[tuple[db.Table, str], ...]]] = [
        (
            storage.index_connection,
            tuple(
                (table, column)
                for table, column in _INSTANCE_TEXTS
                if table is SqlEventLogStorageTable or storage.has_table(table.name)
            ),
        )
    ]
    if isinstance(storage, SqliteEventLogStorage):
        # per-run shards: each keeps its run's events beside the index's copy; runless events
        # (reported, not run) have the shard of run id "" (`.db`, which get_all_run_ids skips)
        shards = ((SqlEventLogStorageTable, "event"),)
        run_ids = [*sorted(storage.get_all_run_ids()), ""]
        stores.extend(
            (functools.partial(storage.run_connection, run_id), shards)
            for run_id in run_ids
            if Path(storage.path_for_shard(run_id)).is_file()
        )
    rewritten = 0
    for opened, texts in stores:
        with opened() as conn:
            sqlite = conn.dialect.name == "sqlite"
            if sqlite:
                conn.execute(db.text("PRAGMA secure_delete = ON"))
            for table, name in texts:
                column = table.c[name]
                held = (
                    keys_held(conn, column, keys)
                    if conn.dialect.name in PREFILTERED_DIALECTS
                    else keys
                )
                for key in held:
                    done = conn.execute(
                        table.update()
                        .where(column.contains(key, autoescape=True))
                        .values({name: db.func.replace(column, key, PLAYER_PLACEHOLDER)})
                    )
                    rewritten += done.rowcount
        if sqlite:
            with opened() as conn:
                conn.execute(db.text("PRAGMA wal_checkpoint(TRUNCATE)"))
    return rewritten


def materializations_naming(
    instance: dg.DagsterInstance, asset_keys: list[dg.AssetKey], players: list[str]
) -> pl.DataFrame:
    """Return `(table, player_key, rows)`: materialization events whose metadata names a player.

    Telemetry metadata never carries a player_key (previews leave the column out), so this is
    zero unless an older version wrote one; the deletion log records the count as its proof for
    the Dagster instance (`METADATA_STORE`, every player listed).
    """
    players = list(dict.fromkeys(players))
    if not players:
        return pl.DataFrame(schema=REMOVED_SCHEMA)
    texts: list[str] = []
    for asset_key in asset_keys:
        cursor = None
        while True:
            page = instance.fetch_materializations(asset_key, limit=METADATA_PAGE, cursor=cursor)
            texts.extend(
                repr(record.asset_materialization.metadata)
                for record in page.records
                if record.asset_materialization
            )
            if not page.has_more:
                break
            cursor = page.cursor
    # one Aho-Corasick pass over every text names the players in it (a text counts once each)
    named = (
        pl.Series("text", texts, dtype=pl.String)
        .str.extract_many(players, overlapping=True)
        .list.unique()
        .explode()
        .drop_nulls()
        .value_counts(name="rows")
        .rename({"text": "player_key"})
    )
    return (
        pl.DataFrame({"player_key": players}, schema={"player_key": pl.String()})
        .join(named, on="player_key", how="left", maintain_order="left")
        .select(
            pl.lit(METADATA_STORE).alias("table"),
            "player_key",
            pl.col("rows").fill_null(0),
        )
        .cast(REMOVED_SCHEMA)
    )


def release_successors(hub_dir: Path) -> tuple[str | None, dict[str | None, str]]:
    """Return the latest published version and `previous_version -> version` of every version."""
    versions = hub_dir / "versions"
    latest_manifest = hub_dir / "latest" / MANIFEST
    latest = (
        ReleaseManifest.model_validate_json(latest_manifest.read_text()).version
        if latest_manifest.is_file()
        else None
    )
    successors: dict[str | None, str] = {}
    if versions.is_dir():
        for folder in sorted(versions.iterdir()):
            manifest = folder / MANIFEST
            if manifest.is_file():
                parsed = ReleaseManifest.model_validate_json(manifest.read_text())
                successors[parsed.previous_version] = parsed.version
    return latest, successors


def deletion_log(
    deletions: pl.DataFrame,
    previous: pl.DataFrame | None,
    removed: pl.DataFrame,
    hub_dir: Path,
    remaining: pl.DataFrame,
) -> pl.DataFrame:
    """Return the updated deletion log (one row per request, never forgetting earlier counts).

    A new request gets the rows just removed for its player (a player's removals go to their
    earliest request) and `release_before` = the latest published version now; the first version
    published after that (`previous_version` = `release_before`) is the first release that
    excluded them, filled in once it exists. `rows_still_held` (JSON: store -> rows) is what a
    check after this run's removal found of the player in every store it erases (`remaining`:
    `remaining_rows` plus the Dagster materializations; all zero is the proof of erasure), null
    for a request that removes one data type from the release only.
    """
    latest, successors = release_successors(hub_dir)
    old = previous if previous is not None else pl.DataFrame(schema=LOG_SCHEMA)
    counts: dict[str, dict[str, int]] = {}
    for table, player, rows in removed.iter_rows():
        counts.setdefault(player, {})[table] = counts.setdefault(player, {}).get(table, 0) + rows
    first_request = (
        deletions.sort("requested_at", "request_id").unique("player_key", keep="first")
    ).select("player_key", "request_id")
    owner = dict(first_request.iter_rows())
    held: dict[str, dict[str, int]] = {}
    for table, player, rows_held in remaining.iter_rows():
        held.setdefault(player, {})[table] = rows_held
    rows: list[dict[str, object]] = []
    logged = {row["request_id"]: row for row in old.iter_rows(named=True)}
    for request in deletions.sort("requested_at", "request_id").iter_rows(named=True):
        entry = logged.get(request["request_id"])
        before = json.loads(entry["rows_removed"]) if entry else {}
        if owner.get(request["player_key"]) == request["request_id"]:
            for table, n in counts.get(request["player_key"], {}).items():
                before[table] = before.get(table, 0) + n
        release_before = entry["release_before"] if entry else latest
        first = entry["first_excluded_in"] if entry else None
        if first is None and (entry is not None and latest != release_before):
            first = successors.get(release_before)
        rows.append(
            {
                "request_id": request["request_id"],
                "player_key": request["player_key"],
                "scope": request["scope"],
                "requested_at": request["requested_at"],
                "rows_removed": json.dumps(dict(sorted(before.items()))),
                "rows_removed_total": sum(before.values()),
                "release_before": release_before,
                "first_excluded_in": first,
                "rows_still_held": (
                    json.dumps(dict(sorted(held[request["player_key"]].items())))
                    if request["player_key"] in held
                    else None
                ),
            }
        )
    return pl.DataFrame(rows, schema=LOG_SCHEMA)
