"""Removal of preference pairs that involve an excluded player (docs/privacy.md#removal-at-release).

A `dpo` pair row of telemetry involves two players; its removal subject is the pair subject
`dpo:<chosen key>+<rejected key>` (`competence.pair_subjects`). `pair_exclusions` lists every pair
subject one of whose players is excluded from `dpo` by `telemetry/exclusions` (subject
`dpo:<player_key>`), with that exclusion's reason, so curation drops the pair.
"""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.published import EXCLUSION_SCHEMA, SUBJECT_COLUMN
from distill_assets.defs.telemetry import privacy

PAIR_COLUMNS = (SUBJECT_COLUMN, "player_key_chosen", "player_key_rejected")


def dpo_excluded_players(exclusions: pl.LazyFrame) -> pl.DataFrame:
    """Return the player keys `telemetry/exclusions` currently excludes from `dpo`."""
    prefix = "dpo:"
    return (
        exclusions.filter(pl.col(SUBJECT_COLUMN).str.starts_with(prefix))
        .select(pl.col(SUBJECT_COLUMN).str.strip_prefix(prefix).alias("player_key"))
        .unique()
        .sort("player_key")
        .collect()
    )


def pair_exclusions(pairs: pl.LazyFrame, exclusions: pl.LazyFrame) -> pl.DataFrame:
    """Return `EXCLUSION_SCHEMA` rows for the pair subjects of `pairs` with an excluded player.

    `pairs`: subject, player_key_chosen, player_key_rejected (every partition of the pair tables).
    `exclusions`: `telemetry/exclusions`. A pair whose players are both excluded is listed once,
    with the smallest reason.
    """
    listed = exclusions.filter(pl.col("source") == "telemetry").select(
        pl.col(SUBJECT_COLUMN).alias("member"), "reason"
    )
    members = (
        pairs.select(*PAIR_COLUMNS).unique().unpivot(index=SUBJECT_COLUMN, value_name="player_key")
    )
    return (
        members.with_columns(privacy.subject("dpo", pl.col("player_key")).alias("member"))
        .join(listed, on="member", how="inner")
        .group_by(SUBJECT_COLUMN)
        .agg(pl.col("reason").min())
        .select(pl.lit("telemetry").alias("source"), SUBJECT_COLUMN, "reason")
        .sort(SUBJECT_COLUMN)
        .collect()
        .cast(dict(EXCLUSION_SCHEMA))
    )
