"""Typed views of bronze telemetry events: payload fields lifted into columns (pure Polars).

Bronze keeps each payload as a JSON string (validated at ingest against `contracts.telemetry`);
the concerns downstream (validation, privacy, triage, trust, payouts) read the few fields they need
through `payload_fields`, which extracts them with JSON paths, vectorized.
"""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from distill_assets.lib.lake import frame_batches
from distill_assets.lib.sql import connect

# bronze `telemetry/events` (the parse of `contracts.telemetry.RAW`, without `line`)
BRONZE_SCHEMA = pl.Schema(
    {
        "source_file": pl.String(),
        "line_no": pl.Int64(),
        "utf8_replaced": pl.Boolean(),
        "event_id": pl.String(),
        "event_type": pl.String(),
        "schema_version": pl.String(),
        "player_key": pl.String(),
        "session_id": pl.String(),
        "client_ts": pl.Float64(),
        "server_ts": pl.Float64(),
        "payload": pl.String(),
        "extra": pl.String(),
    }
)
# silver `telemetry/accepted_events` (sql/telemetry/select_accepted_events.sql)
SILVER_SCHEMA = pl.Schema(
    {
        "event_id": pl.String(),
        "event_type": pl.String(),
        "player_key": pl.String(),
        "session_id": pl.String(),
        "event_time": pl.Float64(),
        "event_seq": pl.Int64(),
        "payload": pl.String(),
        "location_cell": pl.String(),
        "flagged": pl.Boolean(),
        "flag_checks": pl.List(pl.String()),
        "source_ref": pl.String(),
    }
)
# events whose payloads `payload_fields` parses at a time
PAYLOAD_BATCH_ROWS = 65_536
# the order of silver events: bucketed time, then the exact order within the ingest partition
SILVER_ORDER = ("event_time", "event_seq", "event_id")


def payload_fields(
    events: pl.LazyFrame, event_type: str | tuple[str, ...], fields: dict[str, pl.DataType]
) -> pl.LazyFrame:
    """Select events of `event_type`: their columns but `payload`, plus `fields` from the payload.

    A field name is a dotted path under the payload (`action.action_type`); its column is the path
    with `_` for dots. Strings stay strings (an object or array as its JSON text), other types are
    cast (non-strict: a mismatch is null). DuckDB parses each payload once for all the paths. The
    events are read `PAYLOAD_BATCH_ROWS` at a time, so only one batch of payloads is in memory.
    """
    return pl.concat(payload_field_batches(events, event_type, fields)).lazy()


def payload_field_batches(
    events: pl.LazyFrame, event_type: str | tuple[str, ...], fields: dict[str, pl.DataType]
) -> Iterator[pl.DataFrame]:
    """Yield `payload_fields(events, event_type, fields)` in order, one batch at a time.

    A caller that reduces each batch (drops a long text once it has read it) holds the reduced
    rows only; `payload_fields` is the concatenation of these batches.
    """
    types = [event_type] if isinstance(event_type, str) else list(event_type)
    selected = events.filter(pl.col("event_type").is_in(types))
    paths = [f"$.{path}" for path in fields]
    lifted = []
    for i, (path, dtype) in enumerate(fields.items()):
        raw = pl.col("v").list.get(i)
        value = raw if dtype == pl.String else _cast(raw, dtype)
        lifted.append(value.alias(path.replace(".", "_")))
    con = connect()
    try:
        for batch in frame_batches(selected, PAYLOAD_BATCH_ROWS):
            con.register("selected", batch.select("payload").to_arrow())
            values = con.sql(
                "SELECT json_extract_string(payload, $paths) AS v FROM selected",
                params={"paths": paths},
            ).to_arrow_table()
            con.unregister("selected")
            column = pl.Series("v", values.column("v"), dtype=pl.List(pl.String))
            yield batch.with_columns(column).select(pl.exclude("payload", "v"), *lifted)
    finally:
        con.close()


def events_with_ids(
    events: pl.LazyFrame, ids: pl.DataFrame, columns: tuple[str | pl.Expr, ...]
) -> pl.LazyFrame:
    """Select `columns` of the events whose `event_id` is one of `ids`' (read in batches).

    What an inner join of `ids`' rows with `events.select(*columns)` on `event_id` matches, without
    reading every event's payload at once: the events are streamed `PAYLOAD_BATCH_ROWS` at a time
    and only those whose id is wanted are kept (keys only are held for the rest of the day).
    """
    wanted = ids.get_column("event_id").unique()
    kept = events.filter(pl.col("event_id").is_in(wanted.implode())).select(*columns)
    return pl.concat(frame_batches(kept, PAYLOAD_BATCH_ROWS)).lazy()


def _cast(raw: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.Boolean:
        return pl.when(raw == "true").then(True).when(raw == "false").then(False)
    return raw.cast(dtype, strict=False)


def event_time() -> pl.Expr:
    """Return the client time when known, else the server time (for ordering checks)."""
    return pl.coalesce(pl.col("client_ts"), pl.col("server_ts"))


def silver_events(silver: pl.LazyFrame) -> pl.LazyFrame:
    """Silver events shaped for the event-level transforms: `server_ts` is the bucketed time."""
    return silver.with_columns(
        pl.col("event_time").alias("server_ts"), pl.lit(None, dtype=pl.Float64).alias("client_ts")
    )
