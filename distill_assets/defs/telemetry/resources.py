"""Telemetry resources: the secret key that turns player ids into `player_key` pseudonyms."""

import dagster as dg

from distill_assets.defs.player_ids import PLAYER_ID_HASHER, PlayerIdHasher

defs = dg.Definitions(resources={PLAYER_ID_HASHER: PlayerIdHasher()})
