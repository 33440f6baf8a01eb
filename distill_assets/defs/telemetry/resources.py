"""Telemetry resources: the secret key that turns player ids into `player_key` pseudonyms."""

from __future__ import annotations

import os
from dataclasses import dataclass

import dagster as dg

from distill_assets.defs.telemetry.pseudonym import hmac_pads
from distill_assets.lib.settings import refuse_blank
from distill_assets.lib.startup import check_player_key

PLAYER_ID_HASHER = "player_id_hasher"
KEY_ENV = "DISTILL_PLAYER_ID_KEY"
# Used when neither configuration nor the environment gives a key, so samples and tests run out of
# the box. It is public: keys made with it are pseudonyms only against people without this source.
# Production sets DISTILL_PLAYER_ID_KEY (or configures `key`, e.g. with dg.EnvVar).
DEVELOPMENT_KEY = "distill-development-player-id-key (public; set DISTILL_PLAYER_ID_KEY)"
DEVELOPMENT_SOURCE = "development-default"


@dataclass(frozen=True)
class ResolvedKey:
    """The effective key and where it came from (`config`, `env` or `development-default`)."""

    key: bytes
    source: str

    def sql_params(self) -> dict[str, bytes]:
        """Return the HMAC pads as the ingest SQL's bind parameters."""
        inner, outer = hmac_pads(self.key)
        return {"inner_pad": inner, "outer_pad": outer}


class PlayerIdHasher(dg.ConfigurableResource):
    """Secret key for the HMAC-SHA256 pseudonyms of player ids (`player_key`).

    `key` empty → the `DISTILL_PLAYER_ID_KEY` environment variable at run time → the public
    development key, only with `DISTILL_ENV=development` (else `SettingsError`). Changing the
    key changes every `player_key` (and the split groups built on it).
    """

    key: str = ""

    def resolved(self) -> ResolvedKey:
        """Return the effective key (UTF-8 bytes) and its source."""
        if self.key:
            refuse_blank("player_id_hasher.key", self.key)
            return ResolvedKey(self.key.encode("utf-8"), "config")
        from_env = os.environ.get(KEY_ENV, "")
        if from_env.strip():
            return ResolvedKey(from_env.encode("utf-8"), "env")
        check_player_key(os.environ)
        return ResolvedKey(DEVELOPMENT_KEY.encode("utf-8"), DEVELOPMENT_SOURCE)


defs = dg.Definitions(resources={PLAYER_ID_HASHER: PlayerIdHasher()})
