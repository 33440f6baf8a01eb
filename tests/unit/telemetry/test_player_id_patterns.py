"""Player-id redaction scales with the day: pieces RE2 compiles, regexes only where they can match.

The reference is the unfiltered path: every text through every piece of the known tokens, then
the id shape (`every_regex`). The statement's path (`redacted`: `privacy.prepare_redaction`)
must replace exactly what it replaces, on every text.
"""

import hashlib

import duckdb
import pytest

from distill_assets.defs.telemetry import privacy
from distill_assets.rules import telemetry_privacy as rules

KNOWN = ["Ninkasi_ama", "alpha_1", "beta22", "zeta9", "kasks", "iii"]
P = rules.PLAYER_PLACEHOLDER
# planted mentions: where a word starts and ends decides a match, and RE2's case folding
TEXTS = [
    "ask Ninkasi_ama about p_7f3a, then NINKASI_AMA again",
    "zeta9 met alpha_1 and Beta22 near the gate; zeta99 did not",
    "[REDACTED_PLAYER_ID] is not a player; p_x_y is one by shape",
    "no names here",
    "alpha_1alpha_1 beta22. (Zeta9)",
    "beta22",  # the whole text
    "beta22_ beta22x xbeta22 beta2 _beta22 9beta22 beta22-beta22,beta22",  # word characters
    "\"beta22\":'zeta9';(alpha_1)[kasks]{Ninkasi_ama}",  # punctuation
    "é-beta22 beta22é ßzeta9 İalpha_1 zeta9\u0131",  # letters RE2 does not count as word ones
    "ka\u017fks and \u212aASKS and KA\u017f\u212aS, not ka\u017fksx",  # ſ and K fold into s and k
    "\u017fkasks kasks\u212a",  # ... but are not word characters
    "kas\u212as and \u212aasks",  # K alone
    "ninkasi_ama ninkasi_amaa ninkasi ama",  # a known token is a prefix of a longer word
    "map_x np_c P_Q p_ _p_x p__",  # the shape
    'beta22\nzeta9\tp_q\r\n\\nbeta22 \\u00e9zeta9 \\"alpha_1\\"',  # controls; JSON escapes
    "",
    # DuckDB lowers İ to i; RE2 does not match it to i
    "iii a\u0130\u0130\u0130b \u0130ii_\u0130\u0130\u0130",
]


def day(con: duckdb.DuckDBPyConnection, texts: list[str]) -> None:
    con.execute(
        "CREATE TABLE events AS SELECT 'e' || i AS event_id, texts[i] AS payload "
        "FROM (SELECT $texts AS texts), range(1, len($texts) + 1) AS r(i)",
        {"texts": texts},
    )


def every_regex(texts: list[str], known: list[str]) -> list[str]:
    """Replace every match of every piece of `known`, then of the id shape, in every text."""
    con = duckdb.connect()
    day(con, texts)
    for pattern in [*privacy.word_patterns(known), rules.PLAYER_ID_SHAPE]:
        con.execute(
            "UPDATE events SET payload = regexp_replace(payload, $p, $placeholder, 'gi')",
            {"p": pattern, "placeholder": P},
        )
    rows = con.execute("SELECT payload FROM events ORDER BY len(event_id), event_id").fetchall()
    return [text for (text,) in rows]


def redacted(texts: list[str], known: list[str]) -> tuple[list[str], set[str]]:
    """Return the statement's redaction of `texts` and the ids of the texts with their own regex."""
    con = duckdb.connect()
    day(con, texts)
    expression, params = privacy.prepare_redaction(con, known)
    rows = con.execute(
        f"SELECT {expression} FROM events AS e LEFT JOIN mentions AS m "
        "ON e.event_id = m.event_id LEFT JOIN every_texts AS v ON e.event_id = v.event_id "
        "ORDER BY len(e.event_id), e.event_id",
        params,
    ).fetchall()
    mentioned = {
        event_id for (event_id,) in con.execute("SELECT event_id FROM mentions").fetchall()
    }
    return [text for (text,) in rows], mentioned


def test_re2_folds_only_long_s_and_kelvin_into_ascii_word_characters() -> None:
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    word = "|".join("abcdefghijklmnopqrstuvwxyz0123456789_")
    folded = con.execute(
        "SELECT list(chr(i::INTEGER) ORDER BY i) FROM range(128, 1114112) AS r(i) "
        "WHERE (i < 55296 OR i > 57343) AND regexp_matches(chr(i::INTEGER), $word, 'i')",
        {"word": f"^(?:{word})$"},
    ).fetchone()
    # ... and no character beyond ASCII is a word character (what `\b` separates)
    words = con.execute(
        "SELECT count(*) FROM range(128, 1114112) AS r(i) "
        "WHERE (i < 55296 OR i > 57343) AND regexp_matches(chr(i::INTEGER), '\\w')"
    ).fetchone()

    assert folded == (list(privacy.FOLDED_LETTERS),)
    assert words == (0,)


def test_the_prefilter_replaces_exactly_what_every_regex_replaces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole, _ = redacted(TEXTS, KNOWN)
    monkeypatch.setattr(privacy, "PATTERN_CHARS", 10)  # one known token per piece
    texts, mentioned = redacted(TEXTS, KNOWN)

    assert texts == whole == every_regex(TEXTS, KNOWN)
    assert texts == [
        f"ask {P} about {P}, then {P} again",
        f"{P} met {P} and {P} near the gate; zeta99 did not",
        f"{P} is not a player; {P} is one by shape",
        "no names here",
        f"alpha_1alpha_1 {P}. ({P})",
        P,
        f"beta22_ beta22x xbeta22 beta2 _beta22 9beta22 {P}-{P},{P}",
        f"\"{P}\":'{P}';({P})[{P}]{{{P}}}",
        f"é-{P} {P}é ß{P} İ{P} {P}\u0131",
        # K is not a word character: no `\\b` between it and the space before it
        f"{P} and \u212aASKS and {P}, not ka\u017fksx",
        f"\u017f{P} {P}\u212a",
        f"{P} and \u212aasks",
        f"{P} ninkasi_amaa ninkasi ama",
        f"map_x np_c {P} p_ _p_x {P}",
        f'{P}\n{P}\t{P}\r\n\\nbeta22 \\u00e9zeta9 \\"{P}\\"',
        "",
        f"{P} a\u0130\u0130\u0130b \u0130ii_\u0130\u0130\u0130",
    ]
    # the texts holding a known token as a word have their own regex (e11 goes through every
    # piece all the same, for its folded letters)
    assert mentioned == {"e1", "e2", "e5", "e6", "e7", "e8", "e9", "e11", "e13", "e15", "e17"}


def test_a_known_token_spelling_the_placeholder_sends_every_text_through_every_regex(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    known = ["Redacted_Player_ID", "zeta9"]
    texts = ["zeta9 and p_x", "redacted_player_id zeta9", "no names here"]
    monkeypatch.setattr(privacy, "PATTERN_CHARS", 10)

    assert privacy.names_the_placeholder(known)
    assert not privacy.names_the_placeholder(KNOWN)
    # the placeholder a piece writes is a known word for a later piece (sorted: `redacted…` first)
    assert (
        redacted(texts, known)[0]
        == every_regex(texts, known)
        == [f"{P} and {P}", f"{P} {P}", texts[2]]
    )


def test_a_day_naming_thousands_of_players_is_redacted_as_by_every_regex(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    digest = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(6_000)]
    known = [f"{h[:4]}s{h[4:8]}k{h[8:12]}" for h in digest[:3_000]]  # letters RE2 folds
    unknown = [f"{h[:4]}s{h[4:8]}k{h[8:12]}" for h in digest[3_000:]]
    texts = []
    for i in range(24_000):
        a, b = known[(7 * i) % 3_000], known[(11 * i + 3) % 3_000]
        other = unknown[i % 3_000]
        texts.append(
            [
                f"{a} met {b.upper()} and {other}",
                f"nothing about {other}, {a}x or x{b}",
                f'{{"text":"{a}","to":"p_{i}"}}',
                f"{a.replace('s', chr(0x17F))} and {b}x",
                f"{a}_{b} {a}{b} {b}",
                f"{a}x and {b.replace('k', chr(0x212A))}",
            ][i % 6]
        )
    monkeypatch.setattr(privacy, "PATTERN_CHARS", 2_000)  # 23 pieces
    texts_out, mentioned = redacted(texts, known)

    assert len(privacy.word_patterns(known)) == 23
    assert texts_out == every_regex(texts, known)
    assert sum(text != out for text, out in zip(texts, texts_out, strict=True)) == 20_000
    assert len(mentioned) == 12_000  # not those with folded letters: they go through every piece


def test_more_pieces_than_duckdbs_expression_depth_are_applied_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a 10 GB telemetry day's known tokens made more pieces than DuckDB nests in one expression
    known = [f"n{i:04d}" for i in range(1_500)]
    texts = [
        f"{known[0]} and {known[-1]}",
        f"\u017f {known[700]} {known[1_499].upper()} p_q",
        f"{known[3]}\u212a n9999",
        "Redacted_Player_ID n0001",
    ]
    monkeypatch.setattr(privacy, "PATTERN_CHARS", 10)  # one known token per piece

    assert len(privacy.word_patterns(known)) == 1_500  # DuckDB nests at most 1,000
    assert redacted(texts, known)[0] == every_regex(texts, known)
    assert redacted(texts, known)[0] == [
        f"{P} and {P}",
        f"\u017f {P} {P} {P}",
        f"{P}\u212a n9999",
        f"Redacted_Player_ID {P}",
    ]
    # every text through every piece: the placeholder's words are known tokens
    assert redacted(texts, [*known, "player"])[0] == every_regex(texts, [*known, "player"])


def test_a_day_naming_100_000_players_is_redacted() -> None:
    tokens = [hashlib.sha256(str(i).encode()).hexdigest()[:12] for i in range(100_000)]
    patterns = privacy.word_patterns(tokens)
    texts = [f"{tokens[0]} met {tokens[-1]}, not {tokens[-1]}x", f"ſ {tokens[1]}"]

    assert len(patterns) == 53  # pieces of at most PATTERN_CHARS
    assert all(len(p) <= privacy.PATTERN_CHARS + 20 for p in patterns)
    assert redacted(texts, tokens)[0] == [f"{P} met {P}, not {tokens[-1]}x", f"ſ {P}"]
    one = r"\b(?:" + "|".join(sorted(set(tokens))) + r")\b"
    con = duckdb.connect()
    with pytest.raises(duckdb.InvalidInputException, match="pattern too large"):
        con.execute("SELECT regexp_replace('x', $one, 'y', 'gi')", {"one": one}).fetchall()
