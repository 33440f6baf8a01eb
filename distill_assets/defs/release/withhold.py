"""A finding withholds a row, not the release.

Before the candidate is built, the independent scan (`scan.py`) reads the published text columns
of every curated partition file. A row with a finding is withheld: the release reads its parts
without it (`withhold`), and `<lake>/release/withheld.parquet` records it as
`(config, partition, id, column, kind)` — never the value. The card lists the same rows
(`## Withheld rows`) and `distill run` prints them. More than `WITHHELD_MAX_ROWS` withheld rows
in a config means the scrubber is failing systematically: the blocking check
`independent_pii_scan` then fails and nothing is published.

The scan is not repeated for a partition file it already read: what it found per part
(`config`, content fingerprint, and the `scan_version`) is kept in
`<lake>/release/scanned_parts.parquet`, with one marker row (null id) per part scanned. What the
detectors found in each candidate line of the parts it read (`scan.LineMemory`: the line's
SHA-256 and the finding kinds, never the text) is kept in `<lake>/release/scanned_lines.parquet`
with the `scan_version`: the lines of this build's parts, so the `independent_pii_scan` check,
which reads the same text in the data files written from them, runs the detectors only on lines
the build did not read, and a part of a later night only on lines no part of this build held.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from pathlib import Path

import polars as pl
from upath import UPath

from distill_assets.contracts.published import published_schema
from distill_assets.contracts.release import ReleaseManifest, WithheldRow
from distill_assets.defs.release import scan
from distill_assets.defs.release.build import CuratedPart, ReadRows, ReleaseInputs
from distill_assets.defs.release.card import render_card
from distill_assets.defs.release.layout import MANIFEST, README
from distill_assets.lib.lake import (
    global_path,
    parquet_file,
    partition_path,
    read_parquet_table,
    write_parquet_atomic,
)
from distill_assets.lib.scrub import scrubbed_columns
from distill_assets.rules import rules_version

WITHHELD_TABLE = "withheld"
SCANNED_TABLE = "scanned_parts"
LINES_TABLE = "scanned_lines"
# the product column of a row's exact-duplicate key (`curation/products.py`)
CONTENT_HASH = "content_hash"
WITHHELD_SCHEMA: dict[str, pl.DataType] = {
    "config": pl.String(),
    "partition": pl.String(),
    "id": pl.String(),
    "column": pl.String(),
    "kind": pl.String(),
}
# a line memory file: one row per candidate line (`scan.LINE_MEMORY_SCHEMA`) and its version
LINES_SCHEMA: dict[str, pl.DataType] = {"scan_version": pl.String(), **scan.LINE_MEMORY_SCHEMA}
SCANNED_SCHEMA: dict[str, pl.DataType] = {
    "scan_version": pl.String(),
    "fingerprint": pl.String(),
    **WITHHELD_SCHEMA,
}


def scan_version() -> str:
    """Return a digest of the scan's source, the curation rules it reads and its libraries."""
    digest = hashlib.sha256(Path(scan.__file__).read_bytes())
    digest.update(Path(scan.prefilter.__file__).read_bytes())
    digest.update(rules_version("curation").encode())
    for library in ("detect-secrets", "phonenumbers"):
        digest.update(f"{library}=={version(library)}".encode())
    return digest.hexdigest()[:16]


def _read(path: UPath) -> pl.DataFrame:
    table = pl.from_arrow(read_parquet_table(path))
    assert isinstance(table, pl.DataFrame)
    return table


def _stored_lines(path: UPath) -> pl.DataFrame:
    """Return the entries of a line memory file of the current `scan_version` (none if absent)."""
    if not path.exists():
        return pl.DataFrame(schema=scan.LINE_MEMORY_SCHEMA)
    stored = _read(path).filter(pl.col("scan_version") == scan_version())
    return stored.select(scan.LINE_MEMORY_SCHEMA.keys())


def read_line_memory(lake_root: str, days: Sequence[tuple[str, str]] = ()) -> scan.LineMemory:
    """Return the line memory the last candidate build wrote, with that of `days`' products.

    `days`: `(config, partition)` whose daily line scan (`day_lines_table`) is added. Only
    entries of the current `scan_version` count.
    """
    frames = [_stored_lines(global_path(lake_root, "release", LINES_TABLE))]
    frames += [
        _stored_lines(partition_path(lake_root, "release", day_lines_table(config), day))
        for config, day in days
    ]
    return scan.LineMemory(pl.concat(frames).unique("digest", keep="first").sort("digest"))


def _write_line_memory(path: UPath, memory: scan.LineMemory) -> None:
    entries = memory.entries()
    write_parquet_atomic(
        entries.select(pl.lit(scan_version()).alias("scan_version"), *entries.columns), path
    )


def day_lines_table(config: str) -> str:
    """Return the lake table (under `release/`) of a config's daily line scans."""
    return f"{config}_scanned_lines"


def scan_day_lines(lake_root: str, config: str, products: UPath, day: str) -> int:
    """Run the detectors over the candidate lines of one day's product file of `config`.

    The product file holds the day's rows with their published text as the curated partition
    will (scrubbed), so the release's scan of that partition finds every line it reads here in
    the memory written to `release/<config>_scanned_lines/<day>.parquet`. Read by row group (the
    memory of the lines read so far carried over: a line is read once), the first row of each
    content hash only: the release publishes at most one row of an exact duplicate, and a line
    these scans leave out is read by the release itself. Returns the candidate lines listed.
    """
    columns = scrubbed_columns(published_schema(config))
    memory = scan.LineMemory()
    seen = pl.Series(CONTENT_HASH, [], pl.String())
    with parquet_file(products) as source:
        present = source.schema_arrow.names
        names = [name for name in ["id", CONTENT_HASH, *columns] if name in present]
        for group in range(source.num_row_groups):
            rows = pl.from_arrow(source.read_row_group(group, columns=names))
            assert isinstance(rows, pl.DataFrame)
            if CONTENT_HASH in rows.columns:
                rows = rows.filter(~pl.col(CONTENT_HASH).is_in(seen.implode())).unique(
                    CONTENT_HASH, keep="first", maintain_order=True
                )
                seen = pl.concat([seen, rows.get_column(CONTENT_HASH)])
            texts = {name: dtype for name, dtype in columns.items() if name in rows.columns}
            lines = scan.lines_of(rows, texts).get_column("text")
            memory.findings(scan.candidate_lines(lines))
    _write_line_memory(partition_path(lake_root, "release", day_lines_table(config), day), memory)
    return memory.entries().height


def scan_part(
    config: str, part: CuratedPart, memory: scan.LineMemory | None = None
) -> pl.DataFrame:
    """Return the findings of one curated part's published text columns (`WITHHELD_SCHEMA`).

    `memory` answers for the candidate lines it knows (same findings, `scan.LineMemory`).
    """
    rows = part.read(None)
    columns = {
        name: dtype
        for name, dtype in scrubbed_columns(published_schema(config)).items()
        if name in rows.columns
    }
    findings = scan.scan_frame(rows, columns, memory).unique()
    return findings.select(
        pl.lit(config).alias("config"),
        pl.lit(part.partition).alias("partition"),
        pl.col("id"),
        pl.col("column"),
        pl.col("type").alias("kind"),
    ).sort("id", "column", "kind")


def find_withheld(lake_root: str, curated: Mapping[str, list[CuratedPart]]) -> pl.DataFrame:
    """Scan every curated part not scanned before; return and record the rows to withhold.

    Writes `release/withheld.parquet` (every withheld row of this release) and updates
    `release/scanned_parts.parquet` (what was found per part) and `release/scanned_lines.parquet`
    (the candidate lines of the parts read now), all atomically.
    """
    memory_path = global_path(lake_root, "release", SCANNED_TABLE)
    current = scan_version()
    memory = pl.DataFrame(schema=SCANNED_SCHEMA)
    if memory_path.exists():
        memory = _read(memory_path).filter(pl.col("scan_version") == current)
    known = set(memory.select("config", "fingerprint").unique().iter_rows())
    unread = [
        (config, part.partition)
        for config in sorted(curated)
        for part in curated[config]
        if part.fingerprint is None or (config, part.fingerprint) not in known
    ]
    lines = read_line_memory(lake_root, unread)
    kept: list[pl.DataFrame] = []
    for config in sorted(curated):
        for part in curated[config]:
            if part.fingerprint is not None and (config, part.fingerprint) in known:
                kept.append(
                    memory.filter(
                        (pl.col("config") == config) & (pl.col("fingerprint") == part.fingerprint)
                    )
                )
                continue
            found = scan_part(config, part, lines)
            marker = pl.DataFrame({"config": [config], "partition": [part.partition]}).with_columns(
                pl.lit(None, dtype=pl.String()).alias(c) for c in ("id", "column", "kind")
            )
            kept.append(
                pl.concat([marker, found]).select(
                    pl.lit(current).alias("scan_version"),
                    pl.lit(part.fingerprint, dtype=pl.String()).alias("fingerprint"),
                    *WITHHELD_SCHEMA,
                )
            )
    remembered = pl.concat(kept) if kept else pl.DataFrame(schema=SCANNED_SCHEMA)
    write_parquet_atomic(remembered.filter(pl.col("fingerprint").is_not_null()), memory_path)
    _write_line_memory(global_path(lake_root, "release", LINES_TABLE), lines)
    withheld = (
        remembered.drop_nulls("id")
        .select(*WITHHELD_SCHEMA)
        .unique()
        .sort("config", "partition", "id", "column", "kind")
    )
    write_parquet_atomic(withheld, global_path(lake_root, "release", WITHHELD_TABLE))
    return withheld


def read_withheld(lake_root: str) -> pl.DataFrame:
    """Return the rows the last candidate withheld (empty before any candidate was built)."""
    path = global_path(lake_root, "release", WITHHELD_TABLE)
    return _read(path) if path.exists() else pl.DataFrame(schema=WITHHELD_SCHEMA)


def withhold(config: str, parts: list[CuratedPart], withheld: pl.DataFrame) -> list[CuratedPart]:
    """Return `parts` reading without the withheld rows of `config`.

    A part that loses rows gets a fingerprint that names them, so the release never reuses a
    data file written before they were withheld.
    """
    out = []
    for part in parts:
        ids = sorted(
            withheld.filter((pl.col("config") == config) & (pl.col("partition") == part.partition))[
                "id"
            ]
            .unique()
            .to_list()
        )
        if not ids:
            out.append(part)
            continue
        fingerprint = (
            hashlib.sha256("\n".join([part.fingerprint, *ids]).encode()).hexdigest()[:16]
            if part.fingerprint is not None
            else None
        )
        out.append(
            CuratedPart(
                partition=part.partition,
                fingerprint=fingerprint,
                placeholders=part.placeholders,
                read=lambda columns, read=part.read, ids=ids: _without(read, columns, ids),
            )
        )
    return out


def _without(read: ReadRows, columns: list[str] | None, ids: list[str]) -> pl.DataFrame:
    wanted = None if columns is None else list(dict.fromkeys([*columns, "id"]))
    rows = read(wanted).filter(~pl.col("id").is_in(ids))
    return rows if columns is None else rows.select(columns)


def withhold_inputs(inputs: ReleaseInputs, withheld: pl.DataFrame) -> ReleaseInputs:
    """Return `inputs` whose curated parts read without the withheld rows."""
    curated = {c: withhold(c, parts, withheld) for c, parts in inputs.curated.items()}
    return dataclasses.replace(inputs, curated=curated)


def record_withheld(
    folder: Path,
    manifest: ReleaseManifest,
    withheld: pl.DataFrame,
    card_notes: Mapping[str, Sequence[str]],
) -> ReleaseManifest:
    """Add the withheld rows to the manifest and card staged in `folder`; return the manifest.

    `card_notes` are the sources' notes the card was built with (`ReleaseContributions`).
    """
    configs = dict(manifest.configs)
    for config, summary in manifest.configs.items():
        rows = withheld.filter(pl.col("config") == config)
        configs[config] = summary.model_copy(
            update={
                "withheld": [
                    WithheldRow(id=i, column=c, kind=k)
                    for i, c, k in rows.select("id", "column", "kind").iter_rows()
                ]
            }
        )
    manifest = manifest.model_copy(update={"configs": configs})
    (folder / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (folder / README).write_text(render_card(manifest, card_notes), encoding="utf-8")
    return manifest


def withheld_lines(withheld: pl.DataFrame) -> list[str]:
    """Return one line per withheld finding: config, row id, column and kind (no value)."""
    return [
        f"withheld {config} row {row_id} column {column}: {kind}"
        for config, _partition, row_id, column, kind in withheld.iter_rows()
    ]
