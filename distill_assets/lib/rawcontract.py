"""What the shared bronze ingest needs to know about one source: its `RawContract`.

Each raw contract module (`contracts/<source>.py`) states, beside its pydantic models, one
`RawContract`: the bronze table, the parse statement that checks the contract in bulk, and the
per-source behaviour of the one ingest path (`defs.ingest.ingest_partition`): which key is unique
within a partition (`dedup`), how the quarantine line of a repeat is rewritten (`line_rewrite`),
where the raw line goes in bronze, and how the bronze file is laid out. The ingest names no source.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from distill_assets.lib.seen import Dedup

# small enough that a chunk's parse holds little memory, large enough that planning the parse
# statement once per chunk (~0.1 s for the largest, telemetry's) costs little
CHUNK_BYTES = 32 << 20
# columns with few distinct values per row group are dictionary-encoded (others are not)
DICTIONARY_COLUMNS: tuple[str, ...] = (
    "source",
    "source_file",
    "reason",
    "event_type",
    "domain",
    "decision",
)


@dataclass(frozen=True)
class RawContract:
    """One source's raw contract as the bronze ingest applies it.

    - `source`, `table`: the bronze asset is `<source>/<table>` (beside `<source>/quarantine`).
    - `parse`: returns the parse statement (reads the view `raw_lines`, returns one row per line
      in order: the bronze columns, `quarantine_reason`, `quarantine_detail`, and `dedup_key`,
      `extra_keys`, `rewrite_*` where the contract uses them).
    - `fast_parse`: returns the fast parse statement, if the contract has one: the same rows as
      `parse`'s for less (`lib.contract_sql.fast_duplicates`); the ingest runs it by default.
    - `dedup`: the key (`dedup_key`) unique within a partition; later records are quarantined.
    - `line_rewrite`: for a parse that rewrites the raw line (returns `line` only for the records
      it quarantines), the SQL file (`sql/<name>.sql`) giving the quarantine line of a record it
      accepted that the ingest quarantines as a repeat.
    - `bronze_line`: the bronze column holding the raw line as read (None: not in bronze);
      `bronze_columns`: the bronze column order when it is not the parse's (the raw line last).
    - `chunk_bytes`, `bronze_compression`, `dictionary`: the reading and the Parquet layout.
    """

    source: str
    table: str
    parse: Callable[[], str]
    fast_parse: Callable[[], str] | None = None
    dedup: Dedup | None = None
    line_rewrite: str | None = None
    bronze_line: str | None = "line"
    bronze_columns: tuple[str, ...] | None = None
    chunk_bytes: int = CHUNK_BYTES
    bronze_compression: str | None = None
    dictionary: tuple[str, ...] = DICTIONARY_COLUMNS
