"""Player-id pseudonyms: the secret key and HMAC-SHA256 (RFC 2104), shared by every room.

Telemetry replaces player ids by `player_key` at ingest; the release's independent scan hashes
published words with the same key to find a known player's id. The ingest SQL computes
`sha256(outer_pad || sha256(inner_pad || player_id))` for whole columns (DuckDB has no HMAC
function, but it has SHA-256 over blobs); the pads are derived from the key once per run here.
`player_key` is the same function in Python (`hmac`), used as the reference.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass

import dagster as dg

from distill_assets.lib.settings import refuse_blank
from distill_assets.lib.startup import check_player_key

BLOCK_SIZE = 64  # SHA-256 block size in bytes
INNER_BYTE = 0x36
OUTER_BYTE = 0x5C


def hmac_pads(key: bytes) -> tuple[bytes, bytes]:
    """Return the (inner, outer) HMAC-SHA256 pads of `key`: the block-sized key XOR 0x36 / 0x5c."""
    block = hashlib.sha256(key).digest() if len(key) > BLOCK_SIZE else key
    block = block.ljust(BLOCK_SIZE, b"\0")
    return bytes(b ^ INNER_BYTE for b in block), bytes(b ^ OUTER_BYTE for b in block)


def player_key(key: bytes, player_id: str) -> str:
    """Return the hex HMAC-SHA256 of a player id (UTF-8) under `key`."""
    return hmac.new(key, player_id.encode("utf-8"), hashlib.sha256).hexdigest()


def pads_player_key(pads: Mapping[str, bytes], player_id: str) -> str:
    """Return `player_key` of a player id from the key's pads (`ResolvedKey.sql_params`).

    `sha256(outer_pad || sha256(inner_pad || player_id))`, as the ingest SQL computes it: the
    pads are block-sized, so this is the HMAC-SHA256 of `player_key`.
    """
    inner = hashlib.sha256(pads["inner_pad"] + player_id.encode("utf-8")).digest()
    return hashlib.sha256(pads["outer_pad"] + inner).hexdigest()


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
