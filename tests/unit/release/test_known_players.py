"""The scan's known-player detector: published text naming a known player, by keyed hash only."""

import polars as pl

from distill_assets.defs.player_ids import hmac_pads, player_key
from distill_assets.defs.release.known_players import KnownPlayers, known_player_findings

KEY = b"scan-key"


def known(*raw_ids: str) -> KnownPlayers:
    inner, outer = hmac_pads(KEY)
    keys = pl.DataFrame({"player_key": [player_key(KEY, r) for r in raw_ids]})
    return KnownPlayers({"inner_pad": inner, "outer_pad": outer}, keys)


def test_known_ids_in_any_case_are_findings_unknown_ones_and_keys_are_not() -> None:
    deleted_key = player_key(KEY, "p_del_90210abcde")
    rows = pl.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "text": [
                "Tell the guild of P_CONS_4242AA77 about it.",
                "p_del_90210abcde still owes me silver",
                f"pseudonym {deleted_key} in text",
                "p_stranger_1 and [REDACTED_PLAYER_ID] are not known",
            ],
        }
    )
    findings = known_player_findings(
        rows, {"text": pl.String()}, known("p_cons_4242aa77", "p_del_90210abcde")
    )
    # the pseudonym itself (row c) is what published metadata carries: not a finding
    assert findings.rows() == [
        ("a", "text", "known_player_id"),
        ("b", "text", "known_player_id"),
    ]


def test_no_known_players_no_findings() -> None:
    rows = pl.DataFrame({"id": ["a"], "text": ["p_cons_4242aa77"]})
    assert known_player_findings(rows, {"text": pl.String()}, known()).height == 0
