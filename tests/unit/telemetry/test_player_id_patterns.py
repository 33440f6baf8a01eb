"""Player-id redaction scales with the day: the known tokens' regex is cut into pieces."""

import hashlib

import duckdb
import pytest

from distill_assets.defs.telemetry import privacy
from distill_assets.rules import telemetry_privacy as rules

TEXTS = [
    "ask Ninkasi_ama about p_7f3a, then NINKASI_AMA again",
    "zeta9 met alpha_1 and Beta22 near the gate; zeta99 did not",
    "[REDACTED_PLAYER_ID] is not a player; p_x_y is one by shape",
    "no names here",
    "alpha_1alpha_1 beta22. (Zeta9)",
]
KNOWN = ["Ninkasi_ama", "alpha_1", "beta22", "zeta9"]


def redact(texts: list[str], patterns: list[str]) -> list[str]:
    """Run the statement's redaction expression over `texts` in DuckDB."""
    con = duckdb.connect()
    con.execute("CREATE TABLE e AS SELECT unnest($texts) AS payload", {"texts": texts})
    expression = privacy.redact_player_ids("e.payload", len(patterns))
    params = {f"player_ids_{i}": p for i, p in enumerate(patterns)}
    rows = con.execute(
        f"SELECT {expression} FROM e",
        {**params, "placeholder": rules.PLAYER_PLACEHOLDER},
    ).fetchall()
    return [text for (text,) in rows]


def test_pieces_replace_exactly_what_one_regex_replaces(monkeypatch: pytest.MonkeyPatch) -> None:
    # the one regex the statement used before the pieces: known tokens, or the id shape
    one = r"\b(?:" + "|".join(sorted(KNOWN)) + r")\b|" + rules.PLAYER_ID_SHAPE
    whole = privacy.player_id_patterns(KNOWN)
    monkeypatch.setattr(privacy, "PATTERN_CHARS", 10)
    pieces = privacy.player_id_patterns(KNOWN)

    assert len(whole) == 2
    assert len(pieces) == 5  # one known token per piece, then the id shape
    assert redact(TEXTS, pieces) == redact(TEXTS, whole) == redact(TEXTS, [one])
    assert redact(TEXTS, pieces) == [
        "ask [REDACTED_PLAYER_ID] about [REDACTED_PLAYER_ID], then [REDACTED_PLAYER_ID] again",
        "[REDACTED_PLAYER_ID] met [REDACTED_PLAYER_ID] and [REDACTED_PLAYER_ID] near the gate; "
        "zeta99 did not",
        "[REDACTED_PLAYER_ID] is not a player; [REDACTED_PLAYER_ID] is one by shape",
        "no names here",
        "alpha_1alpha_1 [REDACTED_PLAYER_ID]. ([REDACTED_PLAYER_ID])",
    ]


def test_a_day_naming_100_000_players_is_redacted() -> None:
    tokens = [hashlib.sha256(str(i).encode()).hexdigest()[:12] for i in range(100_000)]
    patterns = privacy.player_id_patterns(tokens)
    text = f"{tokens[0]} met {tokens[-1]}, not {tokens[-1]}x"

    assert len(patterns) == 54  # 53 pieces of at most PATTERN_CHARS, then the id shape
    assert all(len(p) <= privacy.PATTERN_CHARS + 20 for p in patterns)
    assert redact([text], patterns) == [
        f"[REDACTED_PLAYER_ID] met [REDACTED_PLAYER_ID], not {tokens[-1]}x"
    ]
    one = r"\b(?:" + "|".join(sorted(set(tokens))) + r")\b"
    with pytest.raises(duckdb.InvalidInputException, match="pattern too large"):
        redact([text], [one])
