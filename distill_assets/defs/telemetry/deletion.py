"""Applying deletion requests to tables already written, and the deletion log.

See docs/privacy.md#deletion.

See `privacy.py` for the two-layer mechanism. `remove_players` rewrites, atomically and one
partition file at a time, every partition of `DELETABLE_TABLES` that still holds a deleted
player's rows; `deletion_log` keeps one row per request with the rows it removed per table and the
release that first excluded them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
from upath import UPath

from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.telemetry.privacy import DELETABLE_TABLES, SOURCE
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import (
    PARQUET_COMPRESSION,
    ROW_GROUP_SIZE,
    local_file,
    move_into_place,
    partition_files,
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
    }
)
MANIFEST = "release.json"


def _rewrite_without(path: UPath, involved: pl.Expr) -> None:
    """Rewrite the partition file `path` without the rows `involved` selects, atomically.

    The kept rows stream from the old file to a local staged one (Polars' streaming sink), so
    memory does not grow with the partition; the staged file then replaces `path`.
    """
    work = working_dir("deletion")
    try:
        staged = work / path.name
        with local_file(path) as local:
            pl.scan_parquet(local).filter(~involved).sink_parquet(
                staged, compression=PARQUET_COMPRESSION, row_group_size=ROW_GROUP_SIZE
            )
        move_into_place(staged, path)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def remove_players(lake_root: str, players: list[str]) -> pl.DataFrame:
    """Remove `players`' rows from every partition of `DELETABLE_TABLES`; return what was removed.

    Returns `(table, player_key, rows)` per table and player with removed rows. A partition without
    such rows is not touched; one with them is rewritten, streamed, and replaced atomically.
    """
    removed: list[pl.DataFrame] = []
    if not players:
        return pl.DataFrame(schema={"table": pl.String, "player_key": pl.String, "rows": pl.Int64})
    wanted = pl.Series(players, dtype=pl.String)
    for table, column in DELETABLE_TABLES.items():
        # a table of pairs names two players: a row goes when either is deleted
        columns = (column,) if isinstance(column, str) else column
        involved = pl.any_horizontal(pl.col(c).is_in(wanted.implode()) for c in columns)
        for path in partition_files(lake_root, SOURCE, table):
            hits = (
                pl.scan_parquet(path)
                .filter(involved)
                .select(pl.col(c).alias(f"player_{i}") for i, c in enumerate(columns))
                .unpivot(value_name="player_key")
                .filter(pl.col("player_key").is_in(wanted.implode()))
                .group_by("player_key")
                .agg(pl.len().cast(pl.Int64).alias("rows"))
                .collect()
            )
            if hits.height == 0:
                continue
            _rewrite_without(UPath(path), involved)
            removed.append(hits.with_columns(pl.lit(f"{SOURCE}/{table}").alias("table")))
    if not removed:
        return pl.DataFrame(schema={"table": pl.String, "player_key": pl.String, "rows": pl.Int64})
    return (
        pl.concat(removed)
        .group_by("table", "player_key")
        .agg(pl.col("rows").sum())
        .select("table", "player_key", "rows")
        .sort("table", "player_key")
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
) -> pl.DataFrame:
    """Return the updated deletion log (one row per request, never forgetting earlier counts).

    A new request gets the rows just removed for its player (a player's removals go to their
    earliest request) and `release_before` = the latest published version now; the first version
    published after that (`previous_version` = `release_before`) is the first release that
    excluded them, filled in once it exists.
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
            }
        )
    return pl.DataFrame(rows, schema=LOG_SCHEMA)
