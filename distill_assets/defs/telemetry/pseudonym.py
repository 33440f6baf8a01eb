"""Keyed pseudonyms for player ids: HMAC-SHA256 (RFC 2104) with a secret key.

The ingest SQL computes `sha256(outer_pad || sha256(inner_pad || player_id))` for whole columns
(DuckDB has no HMAC function, but it has SHA-256 over blobs); the pads are derived from the key
once per run here. `player_key` is the same function in Python (`hmac`), used as the reference.
"""

from __future__ import annotations

import hashlib
import hmac

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
