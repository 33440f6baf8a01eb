"""Telemetry privacy past bronze: silver events, consent state, deletions.

See docs/privacy.md#de-identification.

Rules and their documented precision are `rules/telemetry_privacy.py`.

Deletion mechanism. A deletion is global, not per day, so it works in two layers:
1. A day's tables past bronze read the requests of the bronze partitions up to and including
   that day when they are (re)built: the silver `accepted_events` and `validation` drop the
   players they delete (scope `all`), and everything downstream reads silver - so a request
   applies on its own day in the first run, and re-running an old partition never brings a
   deleted player back (the request stays in bronze). `telemetry/deletions` (global, rebuilt with
   the release from every bronze partition) lists every request for the global steps.
2. `telemetry/deletion_log` (global, runs after it with the release) rewrites every already
   written partition of the tables in `DELETABLE_TABLES` without those players, each file
   atomically (temporary name, then rename), and logs the rows it removed per table. Global tables
   (player quality, payouts) are recomputed from silver after it. The release drops their feed
   rows through the exclusion table (`telemetry/exclusions`, subjects `<data type>:<player_key>`).
Bronze keeps only the HMAC pseudonym of the envelope's id and is the replayable record; the
deletion log erases a deleted player's bronze events (all but the request) and quarantined lines
too (`deletion.py`).

Consent and ids in text are applied here, at processing (`write_accepted_events`): an event of a
data type enters silver only under consent for it at the event's time, and player ids in payload
text (known players by keyed hash, any case; the game's id shape) become a placeholder.
"""

from __future__ import annotations

import json
import re
import shutil
import string
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq

from distill_assets.contracts.published import EXCLUSION_SCHEMA
from distill_assets.defs.telemetry.events import events_with_ids, payload_fields
from distill_assets.defs.telemetry.mention_index import MentionIndex, mentioned_keys, write_index
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import DUCKDB_COPY_PARQUET
from distill_assets.lib.sql import connect, load_sql
from distill_assets.rules import telemetry_privacy as rules

SOURCE = "telemetry"
# partitioned telemetry tables past bronze -> the column(s) holding a player_key
DELETABLE_TABLES: dict[str, str | tuple[str, ...]] = {
    "validation": "player_key",
    "accepted_events": "player_key",
    "triage": "player_key",
    "dialogues": "split_group",
    "decisions": "player_key",
    "competence": "player_key",
    "episodes": "player_key",
    "reasoning": "player_key",
    "decision_pairs": ("player_key_chosen", "player_key_rejected"),
    "episode_pairs": ("player_key_chosen", "player_key_rejected"),
}
DELETIONS_SCHEMA = pl.Schema(
    {
        "request_id": pl.String(),
        "player_key": pl.String(),
        "scope": pl.String(),
        "requested_at": pl.Float64(),
        "event_id": pl.String(),
    }
)
CONSENT_SCHEMA = pl.Schema(
    {
        "player_key": pl.String(),
        "data_type": pl.String(),
        "granted": pl.Boolean(),
        "decided_at": pl.Float64(),
        "event_id": pl.String(),
    }
)
# the bronze columns silver reads
BRONZE_COLUMNS = (
    "event_id",
    "event_type",
    "player_key",
    "session_id",
    "server_ts",
    "payload",
    "source_file",
    "line_no",
)
EXCLUDED_BY_DELETION = "deletion_request"
EXCLUDED_BY_CONSENT = "no_consent"


@dataclass(frozen=True)
class SilverIdentity:
    """What the bronze→silver step needs to know about players beyond the partition.

    `pads`: the HMAC key pads (`ResolvedKey.sql_params`); `known`: every player_key known by the
    partition's day (bronze partitions up to it); `consent_events`: every consent decision
    ingested by then (`consent_events`).
    """

    pads: dict[str, bytes]
    known: pl.LazyFrame
    consent_events: pl.LazyFrame


# the longest player-id regex compiled at once, by measurement: one alternation of every token
# stops compiling past ~40,000 tokens of 12 characters (DuckDB's RE2; Polars' regex, which
# rewrites bronze on deletion, near 250,000 characters), and above ~30,000 characters RE2's DFA
# outgrows its cache and falls back to a slower engine (60,000 tokens over 200,000 texts: 2.3 s
# in pieces of 30,000 characters, 3.3 s of 20,000, 8.5 s of 100,000, 12.9 s of 5,000)
PATTERN_CHARS = 25_000
# silver rows one sort holds: a larger day is sorted range by range (`_write_in_order`)
SORT_CHUNK_ROWS = 2_000_000
# the Parquet bytes of the rows the range split's PARTITION_BY buffers hold together
# (`partition_flush_rows`), and the bounds of its flush size. DuckDB holds a buffered row in
# several times its Parquet size: on a 2 GB telemetry day (2 threads, 2 ranges, 559 bytes a row)
# buffers of 240,000 rows each failed under the 2 GB limit (lib.sql.MEMORY_LIMIT), 60,000 passed
PARTITION_BUFFER_BYTES = 128 * 2**20
MIN_FLUSH_ROWS = 1_024
DEFAULT_FLUSH_ROWS = 524_288
# the player-id regexes one statement nests (DuckDB refuses expressions deeper than 1,000)
NESTED_REGEXES = 100
# the characters besides ASCII letters that RE2 matches case-insensitively to an ASCII letter
# (ſ long s to `s`, K Kelvin sign to `k`; none match a digit or `_`): a text holding one goes
# through every player-id regex (tests/unit/telemetry/test_player_id_patterns.py checks every
# code point)
FOLDED_LETTERS = ("\u017f", "\u212a")
# RE2's word characters (`\w`, what `\b` separates)
WORD_CHARS = "[0-9A-Za-z_]"
# every match of the player-id shape (rules PLAYER_ID_SHAPE) begins with one of these
SHAPE_PREFIXES = ("p_", "P_")


def bucket(ts: pl.Expr) -> pl.Expr:
    """Floor a unix-seconds time to the documented privacy bucket."""
    return (ts / rules.TIME_BUCKET_SECONDS).floor() * rules.TIME_BUCKET_SECONDS


def subject(data_type: str, player_key: pl.Expr) -> pl.Expr:
    """Return the removal subject of a player's rows of one data type (`<type>:<player_key>`)."""
    return pl.lit(f"{data_type}:") + player_key


def write_accepted_events(
    events_file: Path,
    validation: pl.LazyFrame,
    deleted: pl.LazyFrame,
    target: Path,
    identity: SilverIdentity,
    *,
    mentions: MentionIndex | None = None,
) -> int:
    """Write the silver events of a partition to `target` and return the rows written.

    `events_file` is the partition's bronze Parquet file (local). DuckDB reads it and writes
    the result (`sql/telemetry/select_accepted_events.sql`) with `COPY`, so the payloads are
    never copied into Python. Its sort by event time holds the day's rows, up to DuckDB's
    memory limit (`lib.sql.MEMORY_LIMIT`), and spills beyond it to a scratch folder. A much
    smaller limit is not safe: the sort then fails with DuckDB's out-of-memory error once the
    day outgrows it (a 500 MB day needs more than 256 MB).

    `identity` gives the consent decisions and the known player keys: events of a data type
    without consent at their time are left out, and player ids in payload text are replaced
    (`rules/telemetry_privacy.py`). The tokens naming a known player are found in DuckDB
    (`select_player_tokens.sql`, HMAC of each distinct token); only that short list reaches
    Python, and each text goes only through what it can hold (`prepare_redaction`). The consent
    join and the event order run on the events' keys, into a table of their own first
    (`select_accepted_keys.sql`), so that sort and the payloads' are not held at once: together
    they outgrew DuckDB's memory limit on a 10 GB telemetry day. Then the payloads are sorted
    (range by range on a large day: `_write_in_order`). With `mentions`, the known players the
    tokens name are written to the day's mention index too (`mention_index`). With
    `DISTILL_INGEST_SHARDS` above 1 the same parts run in several steps (`silver_shards`).
    """
    spill = working_dir("silver-spill")
    con = connect(private=True)
    try:
        register_day(con, validation, deleted, identity, spill)
        con.read_parquet(str(events_file)).select(*BRONZE_COLUMNS).create_view("events")
        tokens = player_tokens(con, identity.pads)
        if mentions is not None:
            write_index(mentions, mentioned_keys(con, tokens, identity.pads))
        query, params = silver_query(con, tokens)
        accepted = create_accepted_keys(con)
        rows = _write_in_order(
            con,
            query,
            params,
            target,
            scratch=spill,
            rows=accepted,
            row_bytes=parquet_row_bytes(events_file),
        )
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    return rows


def register_day(
    con: duckdb.DuckDBPyConnection,
    validation: pl.LazyFrame,
    deleted: pl.LazyFrame,
    identity: SilverIdentity,
    spill: Path,
) -> None:
    """Register what a day's silver reads besides its events; spill DuckDB's sorts to `spill`.

    The tables `rejected`, `flags` (the day's validation decisions), `deleted`, `known`,
    `data_types`, `consents` and `withdrawals`; the caller creates the view `events`
    (`BRONZE_COLUMNS`).
    """
    checks = validation.select("event_id", "check", "decision").collect()
    con.execute(f"SET temp_directory = '{spill}'")
    con.register(
        "rejected", checks.filter(pl.col("decision") == "reject").select("event_id").to_arrow()
    )
    con.register(
        "flags", checks.filter(pl.col("decision") == "flag").select("event_id", "check").to_arrow()
    )
    con.register("deleted", deleted.select("player_key").collect().to_arrow())
    con.register("known", identity.known.select("player_key").unique().collect().to_arrow())
    con.register("data_types", _data_types().to_arrow())
    consents = consent_timeline(identity.consent_events)
    con.register("consents", consents.to_arrow())
    con.register("withdrawals", withdrawals(consents).to_arrow())


def player_tokens(con: duckdb.DuckDBPyConnection, pads: dict[str, bytes]) -> list[str]:
    """Return the tokens of the texts of `events` that name a known player (sorted, distinct).

    `select_player_tokens.sql`: a token names a player by itself, whatever text holds it, so the
    tokens of a day are the union of those of any pieces of its events.
    """
    tokens = con.execute(
        load_sql("telemetry/select_player_tokens"),
        {**pads, "token": rules.TOKEN_CHARS, "match_keys": True},
    ).fetchall()
    return [token for (token,) in tokens]


def create_accepted_keys(con: duckdb.DuckDBPyConnection) -> int:
    """Create the table `accepted` (event_id, event_seq) of the day's `events`; return its rows.

    `select_accepted_keys.sql`: day-wide, `event_seq` numbers the whole day's accepted events.
    """
    con.execute(
        f"CREATE TEMP TABLE accepted AS {load_sql('telemetry/select_accepted_keys')}",
        {"default_granted": rules.CONSENT_DEFAULT_GRANTED},
    )
    ((accepted,),) = con.execute("SELECT count(*) FROM accepted").fetchall()
    return int(accepted)


def silver_query(
    con: duckdb.DuckDBPyConnection, tokens: list[str]
) -> tuple[str, dict[str, object]]:
    """Return `select_accepted_events.sql` over `events` and `accepted`, and its parameters.

    `tokens` are the day's known-player tokens (`player_tokens` of the whole day): the redaction
    of the texts of `events` is prepared with them (`prepare_redaction`).
    """
    redaction, redaction_params = prepare_redaction(con, tokens)
    params = {
        **redaction_params,
        "bucket": float(rules.TIME_BUCKET_SECONDS),
        "grid": rules.LOCATION_GRID_UNITS,
        "patch": json.dumps({"location": None}),
        "step_patch": json.dumps({"location": None, "observation": {"location": None}}),
    }
    query = load_sql("telemetry/select_accepted_events").replace("{redact_player_ids}", redaction)
    return query, params


def _write_in_order(
    con: duckdb.DuckDBPyConnection,
    query: str,
    params: dict[str, object],
    target: Path,
    *,
    scratch: Path,
    rows: int,
    row_bytes: int,
) -> int:
    """Write `query`'s rows to `target` ordered by `event_seq` (1 … `rows`); return the rows.

    A day of more than `SORT_CHUNK_ROWS` rows is not sorted whole: DuckDB's sort of the day's
    payloads outgrew its memory limit on a 10 GB telemetry day (its merge pins blocks of every
    run). The rows are first split by their range of `event_seq` into files (one pass, unsorted),
    each range sorted into a file of its own, and those read back in order into `target`, so each
    sort holds one range. The rows and their order are those of a whole sort; the file is not
    byte for byte the same: bronze's required columns come out optional, and row groups may
    split differently where ranges meet. `row_bytes`: the bronze rows' size (`parquet_row_bytes`).
    """
    if rows <= SORT_CHUNK_ROWS:
        ordered = f"SELECT * FROM ({query}) ORDER BY event_seq"
        written = con.execute(f"COPY ({ordered}) TO '{target}' {DUCKDB_COPY_PARQUET}", params)
        return int(written.fetchone()[0])
    pieces = write_sorted_ranges(
        con, query, params, scratch, range(sort_ranges(rows)), row_bytes=row_bytes
    )
    return concat_pieces(con, pieces, target)


def sort_ranges(rows: int) -> int:
    """Return how many ranges of `event_seq` a day of `rows` silver rows is sorted in."""
    return -(-rows // SORT_CHUNK_ROWS)


def write_sorted_ranges(
    con: duckdb.DuckDBPyConnection,
    query: str,
    params: dict[str, object],
    scratch: Path,
    indices: range,
    *,
    row_bytes: int,
) -> list[Path]:
    """Write `query`'s rows, of the `event_seq` ranges `indices`, one sorted file per range.

    Range i holds `event_seq` i * SORT_CHUNK_ROWS + 1 … (i + 1) * SORT_CHUNK_ROWS; `query` must
    give rows of those ranges only. The rows are split by range into files (one pass,
    unsorted), then each range is sorted into `scratch/sorted-<i>.parquet`; the paths are
    returned in range order (`_write_in_order`). The split's buffers are bounded by the rows'
    size (`row_bytes`, about: `partition_flush_rows`).
    """
    ranges = scratch / "ranges"
    (threads,) = con.execute("SELECT current_setting('threads')").fetchone()
    con.execute(
        "SET partitioned_write_flush_threshold = "
        f"{partition_flush_rows(int(threads) * len(indices), row_bytes)}"
    )
    con.execute(
        f"COPY (SELECT *, (event_seq - 1) // {SORT_CHUNK_ROWS} AS sort_range FROM ({query}))"
        f" TO '{ranges}' (FORMAT parquet, PARTITION_BY (sort_range))",
        params,
    )
    pieces = []
    for index in indices:
        piece = scratch / f"sorted-{index:05d}.parquet"
        files = f"'{ranges}/sort_range={index}/*.parquet'"
        con.execute(
            f"COPY (SELECT * FROM read_parquet({files}, hive_partitioning = false)"
            f" ORDER BY event_seq) TO '{piece}' (FORMAT parquet)"
        )
        pieces.append(piece)
    shutil.rmtree(ranges, ignore_errors=True)
    return pieces


def concat_pieces(con: duckdb.DuckDBPyConnection, pieces: list[Path], target: Path) -> int:
    """Copy the sorted range files `pieces`, in order, into `target`; return the rows written.

    On one thread: with several, DuckDB joins the pieces' batches into row groups in the order
    its threads finish them, so the row groups where ranges meet (and the file's bytes) changed
    from run to run (1 run in 4 on a day of 5 ranges); one thread writes the same bytes every
    time, which the shards' merge (`silver_shards`) relies on. `con` must be private (a
    database of its own): the setting is the database's.
    """
    files = ", ".join(f"'{piece}'" for piece in pieces)
    con.execute("SET threads = 1")
    try:
        ((rows,),) = con.execute(
            f"COPY (SELECT * FROM read_parquet([{files}])) TO '{target}' {DUCKDB_COPY_PARQUET}"
        ).fetchall()
        return int(rows)
    finally:
        con.execute("RESET threads")


def parquet_row_bytes(path: Path) -> int:
    """Return the uncompressed bytes per row of a Parquet file (at least 1).

    The size of the encoded pages: a value repeated in a dictionary-encoded column counts once,
    so it is about the row's size for columns of distinct texts, such as bronze payloads.
    """
    meta = pq.ParquetFile(path).metadata
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    return max(1, size // max(1, meta.num_rows))


def partition_flush_rows(buffers: int, row_bytes: int) -> int:
    """Return the rows after which DuckDB flushes a `PARTITION_BY` buffer, so that all fit.

    DuckDB keeps a buffer per thread and partition and flushes one past
    `partitioned_write_flush_threshold` rows (524,288 by default): with payload rows of a few
    kB, two threads and two ranges held more than the connection's memory limit on a 2 GB
    telemetry day (`OutOfMemoryException` in `_write_in_order`). The threshold is chosen so the
    `buffers` together hold about `PARTITION_BUFFER_BYTES` of Parquet rows of `row_bytes`,
    between `MIN_FLUSH_ROWS` and DuckDB's default.
    """
    rows = PARTITION_BUFFER_BYTES // max(1, buffers * row_bytes)
    return min(DEFAULT_FLUSH_ROWS, max(MIN_FLUSH_ROWS, rows))


def prepare_redaction(
    con: duckdb.DuckDBPyConnection, known_tokens: list[str]
) -> tuple[str, dict[str, object]]:
    """Register `mentions` and `every_texts` for the view `events`; return the redaction, params.

    The redaction is the SQL expression of `redact_player_ids` over `e.payload`, with the known
    tokens each text holds in `m.words` and the texts that go through every regex already
    replaced in `v.payload` (`events AS e LEFT JOIN mentions AS m ON e.event_id = m.event_id
    LEFT JOIN every_texts AS v ON e.event_id = v.event_id`); the params bind its `$shape` and
    `$placeholder`.
    """
    patterns = word_patterns(known_tokens)
    words = mentioned_words(known_tokens)
    con.register("mentioned", words.to_arrow())
    # a word shorter than every known token names no one: only the others are cut out
    shortest = words.get_column("word").str.len_chars().min() or 1
    mentions = con.sql(
        load_sql("telemetry/select_player_mentions"),
        params={"word": f"{WORD_CHARS}{{{shortest},}}"},
    )
    con.register("mentions", mentions.to_arrow_table())
    params: dict[str, object] = {
        "shape": rules.PLAYER_ID_SHAPE,
        "placeholder": rules.PLAYER_PLACEHOLDER,
    }
    replace_in_every_text(con, patterns, names_the_placeholder(known_tokens), params)
    return redact_player_ids("e.payload", "m.words", "v"), params


def replace_in_every_text(
    con: duckdb.DuckDBPyConnection,
    patterns: list[str],
    every_text: bool,
    params: dict[str, object],
) -> None:
    """Create `every_texts` (event_id, payload): the texts of `events` no word can stand for.

    Those are the texts holding a letter of `FOLDED_LETTERS`, or every text when `every_text`;
    each goes through every regex of `patterns` in order, then `$shape`. The regexes are applied
    `NESTED_REGEXES` at a time, one statement each: one expression nesting them all outgrows
    DuckDB's expression depth (1,000) once a day's known tokens need that many pieces (a 10 GB
    telemetry day did), and each statement's regexes are constants, compiled once.
    """
    folded = " OR ".join(f"contains(payload, chr({ord(letter)}))" for letter in FOLDED_LETTERS)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE every_texts AS SELECT event_id, payload FROM events"
        f" WHERE $every_text OR {folded}",
        {"every_text": every_text},
    )
    for start in range(0, len(patterns), NESTED_REGEXES):
        chunk = patterns[start : start + NESTED_REGEXES]
        nested = "payload"
        for i in range(len(chunk)):
            nested = f"regexp_replace({nested}, $p{i}, $placeholder, 'gi')"
        con.execute(
            f"UPDATE every_texts SET payload = {nested}",
            {
                **{f"p{i}": pattern for i, pattern in enumerate(chunk)},
                "placeholder": params["placeholder"],
            },
        )
    con.execute(
        "UPDATE every_texts SET payload = regexp_replace(payload, $shape, $placeholder, 'gi')",
        params,
    )


def word_patterns(tokens: list[str]) -> list[str]:
    """Return regexes matching `tokens` as whole words, cut into pieces RE2 compiles.

    One alternation of every token stops compiling (RE2's program memory) somewhere past ~40,000
    tokens, which one large day's texts hold, so the tokens (sorted, distinct) are cut into
    pieces of at most `PATTERN_CHARS` characters, one regex each. Replacing the matches of the
    pieces one after another by one placeholder replaces exactly what one regex of them all
    would: every match is a whole word (a maximal run of word characters).
    """
    pieces: list[list[str]] = [[]]
    size = 0
    for token in sorted(set(tokens)):
        word = re.escape(token)
        if pieces[-1] and size + len(word) + 1 > PATTERN_CHARS:
            pieces.append([])
            size = 0
        pieces[-1].append(word)
        size += len(word) + 1
    return [rf"\b(?:{'|'.join(words)})\b" for words in pieces if words]


def mentioned_words(tokens: list[str]) -> pl.DataFrame:
    """Return `word`: the known tokens lower-cased, one row each, sorted.

    The table `select_player_mentions.sql` joins each text's words with.
    """
    return pl.DataFrame(
        {"word": sorted({token.lower() for token in tokens})}, schema={"word": pl.String()}
    )


def names_the_placeholder(tokens: list[str]) -> bool:
    """Return whether a known token is a word of the placeholder (any case).

    Then a replacement can make a new match for a later regex, and only applying every regex to
    every text, in order, replaces what the pieces replace.
    """
    placeholder = {word.lower() for word in re.findall(rules.TOKEN_CHARS, rules.PLAYER_PLACEHOLDER)}
    return any(token.lower() in placeholder for token in tokens)


def redact_player_ids(text: str, words: str, every: str) -> str:
    """Return SQL replacing the player ids in `text` by `$placeholder`, case-insensitively.

    What it replaces is what the known tokens' pieces (`word_patterns`), one after another, then
    `$shape` replace in every text; each text pays only for what it can hold:
    - a text holding a letter of `FOLDED_LETTERS` (or every text, when a known token spells the
      placeholder) is taken replaced from `every` (the row of `every_texts` joined by event_id,
      `replace_in_every_text`);
    - a text naming a known player (`words`: the known tokens it holds as words, lower-cased,
      `select_player_mentions.sql`) is cut into its maximal runs of word and of other
      characters, and each word equal (ASCII lower-cased) to one of `words`, or matching
      `$shape`, is replaced: in a text without those letters a regex match is exactly such a
      word (RE2's word boundaries and case folding), and every match becomes the same
      placeholder;
    - any other text can only hold the shape, and only if it holds one of `SHAPE_PREFIXES`;
    - the rest pass unchanged.
    """
    shaped = " OR ".join(f"contains({text}, '{prefix}')" for prefix in SHAPE_PREFIXES)
    runs = f"regexp_extract_all({text}, '{WORD_CHARS}+|[^{WORD_CHARS[1:-1]}]+')"
    # ASCII letters only: DuckDB's lower() turns İ into i, which RE2 does not match to i
    lowered = f"translate(s, '{string.ascii_uppercase}', '{string.ascii_lowercase}')"
    named = f"list_contains({words}, {lowered}) OR regexp_full_match(s, $shape, 'i')"
    return (
        f"CASE WHEN {every}.event_id IS NOT NULL THEN {every}.payload"
        f" WHEN {words} IS NOT NULL THEN array_to_string(list_transform({runs},"
        f" lambda s: CASE WHEN {named} THEN $placeholder ELSE s END), '')"
        f" WHEN {shaped} THEN regexp_replace({text}, $shape, $placeholder, 'gi')"
        f" ELSE {text} END"
    )


def _data_types() -> pl.DataFrame:
    return pl.DataFrame(
        list(rules.EVENT_DATA_TYPES.items()),
        schema={"event_type": pl.String(), "data_type": pl.String()},
        orient="row",
    )


def consent_events(events: pl.LazyFrame) -> pl.LazyFrame:
    """Return every consent decision: player_key, data_type, granted, server_ts, event_id.

    One row per consent event and data type it lists (scopes outside `DATA_TYPES` ignored).
    """
    decisions = payload_fields(events, "consent", {"granted": pl.Boolean()})
    scopes = events_with_ids(
        events,
        decisions.select("event_id").collect(),
        ("event_id", pl.col("payload").str.json_path_match("$.scopes")),
    )
    consent = decisions.join(scopes, on="event_id")
    return (
        consent.with_columns(pl.col("payload").str.json_decode(pl.List(pl.String())).alias("scope"))
        .explode("scope")
        .filter(pl.col("scope").is_in(rules.DATA_TYPES))
        .select(
            "player_key",
            pl.col("scope").alias("data_type"),
            pl.col("granted").fill_null(False),
            "server_ts",
            "event_id",
        )
    )


def consent_timeline(decisions: pl.LazyFrame) -> pl.DataFrame:
    """Return `(player_key, data_type, granted, decided_ts)`: one decision per player, type, time.

    Decisions at the same server time resolve to the last by event_id (the documented order).
    """
    return (
        decisions.sort("server_ts", "event_id")
        .group_by("player_key", "data_type", "server_ts")
        .agg(pl.col("granted").last())
        .select("player_key", "data_type", "granted", pl.col("server_ts").alias("decided_ts"))
        .sort("player_key", "data_type", "decided_ts")
        .collect()
    )


def withdrawals(timeline: pl.DataFrame) -> pl.DataFrame:
    """Return the latest withdrawal per player and type: player_key, data_type, withdrawn_ts."""
    return (
        timeline.filter(~pl.col("granted"))
        .group_by("player_key", "data_type")
        .agg(pl.col("decided_ts").max().alias("withdrawn_ts"))
        .sort("player_key", "data_type")
    )


def without_withdrawn(silver: pl.LazyFrame, consent: pl.LazyFrame) -> pl.LazyFrame:
    """Return `silver` without the events of data types their player's latest consent withdrew.

    `consent` holds bronze consent events (`consent_events` reads them).
    """
    withdrawn = (
        consent_events(consent)
        .sort("server_ts", "event_id")
        .group_by("player_key", "data_type")
        .agg(pl.col("granted").last())
        .filter(~pl.col("granted"))
        .select("player_key", "data_type")
    )
    typed = silver.with_columns(
        pl.col("event_type").replace_strict(rules.EVENT_DATA_TYPES, default=None).alias("_type")
    )
    return typed.join(
        withdrawn, left_on=["player_key", "_type"], right_on=["player_key", "data_type"], how="anti"
    ).drop("_type")


def deletion_requests(events: pl.LazyFrame) -> pl.DataFrame:
    """Return every deletion request in `events` (all partitions), one row per request id."""
    requests = payload_fields(
        events, "deletion_request", {"request_id": pl.String(), "scope": pl.String()}
    )
    return (
        requests.sort("server_ts", "event_id")
        .unique("request_id", keep="first", maintain_order=True)
        .select(
            "request_id",
            "player_key",
            pl.col("scope").fill_null(rules.DELETE_ALL_SCOPE),
            bucket(pl.col("server_ts")).alias("requested_at"),
            "event_id",
        )
        .collect()
        .cast(dict(DELETIONS_SCHEMA))
    )


def deleted_players(deletions: pl.LazyFrame) -> pl.LazyFrame:
    """Return the player keys removed from everything (a request with scope `all`)."""
    return (
        deletions.filter(pl.col("scope") == rules.DELETE_ALL_SCOPE)
        .select("player_key")
        .unique()
        .sort("player_key")
    )


def consent_state(events: pl.LazyFrame) -> pl.DataFrame:
    """Return each player's latest consent decision per data type (latest event wins)."""
    decisions = (
        consent_events(events)
        .sort("server_ts", "event_id")
        .group_by("player_key", "data_type")
        .agg(pl.all().last())
    )
    return (
        decisions.select(
            "player_key",
            "data_type",
            "granted",
            bucket(pl.col("server_ts")).alias("decided_at"),
            "event_id",
        )
        .sort("player_key", "data_type")
        .collect()
        .cast(dict(CONSENT_SCHEMA))
    )


def exclusions(
    players: pl.LazyFrame, consent: pl.LazyFrame, deletions: pl.LazyFrame
) -> pl.DataFrame:
    """Return the `EXCLUSION_SCHEMA` rows: deleted players and data types without consent.

    `players` holds every known player_key. A deletion with scope `all` lists the player under every
    data type; a scope naming a data type lists that type. A player without a granted consent for a
    data type (none recorded counts as `CONSENT_DEFAULT_GRANTED`) is listed under it as
    `no_consent` (a player deleted from everything is listed for the deletion only).
    """
    types = pl.LazyFrame({"data_type": list(rules.DATA_TYPES)})
    deleted = (
        deletions.select("player_key", "scope")
        .join(types, how="cross")
        .filter(
            (pl.col("scope") == rules.DELETE_ALL_SCOPE) | (pl.col("scope") == pl.col("data_type"))
        )
        .select("player_key", "data_type", pl.lit(EXCLUDED_BY_DELETION).alias("reason"))
    )
    granted = (
        players.select("player_key")
        .unique()
        .join(deleted_players(deletions), on="player_key", how="anti")
        .join(types, how="cross")
        .join(
            consent.select("player_key", "data_type", "granted"),
            on=["player_key", "data_type"],
            how="left",
        )
        .with_columns(pl.col("granted").fill_null(rules.CONSENT_DEFAULT_GRANTED))
    )
    no_consent = granted.filter(~pl.col("granted")).select(
        "player_key", "data_type", pl.lit(EXCLUDED_BY_CONSENT).alias("reason")
    )
    rows = pl.concat([deleted, no_consent]).select(
        pl.lit(SOURCE).alias("source"),
        (pl.col("data_type") + ":" + pl.col("player_key")).alias("subject"),
        "reason",
    )
    return (
        rows.unique(["source", "subject", "reason"])
        .sort("subject", "reason")
        .collect()
        .cast(EXCLUSION_SCHEMA)
    )
