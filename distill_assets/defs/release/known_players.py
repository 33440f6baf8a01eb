"""The scan's known-player detector: published text that names a player telemetry has seen.

Independent of the ingest's replacement (a second implementation of the test, not of the
rewrite): every distinct word token of the published text is hashed with the player-id key
(HMAC-SHA256, as written, lower-cased and upper-cased, `sql/telemetry/select_player_tokens.sql`)
and compared with the set of known player keys (every `player_key` in telemetry bronze, deleted
players included). Raw ids are never stored: only their keyed hashes are compared. A known key
itself is not a finding: published `metadata` carries the pseudonym by design.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from distill_assets.defs.player_ids import PlayerIdHasher
from distill_assets.defs.release.scan import FINDING_SCHEMA, text_cells
from distill_assets.lib.lake import scan_partitions
from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules.telemetry_privacy import TOKEN_CHARS

KNOWN_PLAYER_FINDING = "known_player_id"


@dataclass(frozen=True)
class KnownPlayers:
    """The HMAC key pads (`ResolvedKey.sql_params`) and every known `player_key`."""

    pads: dict[str, bytes]
    keys: pl.DataFrame


def known_players(lake_root: str, hasher: PlayerIdHasher) -> KnownPlayers:
    """Return the key pads and the distinct player keys of every telemetry bronze partition."""
    keys = (
        scan_partitions(lake_root, "telemetry", "events", pl.Schema({"player_key": pl.String()}))
        .select("player_key")
        .unique()
        .collect()
    )
    return KnownPlayers(hasher.resolved().sql_params(), keys)


def known_player_findings(
    frame: pl.DataFrame, columns: Mapping[str, pl.DataType], known: KnownPlayers
) -> pl.DataFrame:
    """Return one `(id, column, known_player_id)` row per text naming a known player."""
    cells = text_cells(frame, columns)
    if not cells.height or not known.keys.height:
        return pl.DataFrame(schema=FINDING_SCHEMA)
    con = connect(private=True)
    try:
        con.register("events", cells.select(pl.col("text").alias("payload")).unique().to_arrow())
        con.register("known", known.keys.to_arrow())
        found = con.execute(
            load_sql("telemetry/select_player_tokens"),
            {**known.pads, "token": TOKEN_CHARS, "match_keys": False},
        ).fetchall()
    finally:
        con.close()
    tokens = pl.Series([t for (t,) in found], dtype=pl.String)
    if not tokens.len():
        return pl.DataFrame(schema=FINDING_SCHEMA)
    return (
        cells.with_columns(pl.col("text").str.extract_all(TOKEN_CHARS).alias("token"))
        .explode("token")
        .filter(pl.col("token").is_in(tokens.implode()))
        .select("id", "column", pl.lit(KNOWN_PLAYER_FINDING).alias("type"))
        .unique(maintain_order=True)
    )
