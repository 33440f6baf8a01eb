"""Where the player-id key comes from, and the HMAC pads derived from it."""

import hashlib
import hmac

import pytest

from distill_assets.defs.player_ids import (
    DEVELOPMENT_KEY,
    KEY_ENV,
    PlayerIdHasher,
    hmac_pads,
    player_key,
)


def test_configured_key_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "from-env")
    resolved = PlayerIdHasher(key="configured").resolved()
    assert (resolved.key, resolved.source) == (b"configured", "config")


def test_environment_key_is_read_at_run_time(monkeypatch: pytest.MonkeyPatch) -> None:
    hasher = PlayerIdHasher()
    monkeypatch.setenv(KEY_ENV, "from-env")
    resolved = hasher.resolved()
    assert (resolved.key, resolved.source) == (b"from-env", "env")


def test_development_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    resolved = PlayerIdHasher().resolved()
    assert (resolved.key, resolved.source) == (DEVELOPMENT_KEY.encode(), "development-default")


@pytest.mark.parametrize("key", [b"", b"short", b"x" * 64, b"y" * 65])
def test_pads_rebuild_hmac(key: bytes) -> None:
    inner, outer = hmac_pads(key)
    assert len(inner) == len(outer) == 64
    message = b"p_7f3a9c21d4"
    rebuilt = hashlib.sha256(outer + hashlib.sha256(inner + message).digest()).hexdigest()
    assert rebuilt == hmac.new(key, message, hashlib.sha256).hexdigest()
    assert player_key(key, "p_7f3a9c21d4") == rebuilt
