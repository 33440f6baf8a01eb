"""Subject access: every row the lake and releases hold about one player (docs/privacy.md).

A player is found by their `player_key` (the HMAC of the raw id the operator gives; the raw id
itself is never written): a row belongs to them when one of its string columns holds the key —
`player_key`, pair columns, `split_group`, the removal `subject`, release `metadata` JSON,
quarantine raw lines. The stores searched are the telemetry lake (bronze, quarantine, silver,
training and global tables), the curation lake (where telemetry rows wait for a release) and
every published release version. The string match runs in Polars per file (vectorized); files are
read one at a time.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from upath import UPath

from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import global_path, local_file

LAKE_SOURCES = ("telemetry", "curation")
CONSENT_TABLE = ("telemetry", "consent")


@dataclass(frozen=True)
class Store:
    """One Parquet file searched: its name in reports (`lake/...`, `hub/...`) and its path."""

    name: str
    path: UPath


def stores(lake_root: str, hub_dir: UPath) -> list[Store]:
    """Return every file subject access searches, sorted by name."""
    found = [
        Store(f"lake/{p.relative_to(UPath(lake_root)).as_posix()}", p)
        for source in LAKE_SOURCES
        if (UPath(lake_root) / source).exists()
        for p in (UPath(lake_root) / source).rglob("*.parquet")
    ]
    versions = hub_dir / "versions"
    if versions.exists():
        found += [
            Store(f"hub/{p.relative_to(hub_dir).as_posix()}", p)
            for p in versions.rglob("*.parquet")
        ]
    return sorted(found, key=lambda s: s.name)


def rows_of(path: UPath, key: str) -> pl.DataFrame:
    """Return the rows of a Parquet file with a string column that holds `key`."""
    with local_file(path) as local:
        frame = pl.scan_parquet(local)
        strings = [n for n, t in frame.collect_schema().items() if t == pl.String]
        if not strings:
            return frame.head(0).collect()
        holds = pl.any_horizontal(pl.col(c).str.contains(key, literal=True) for c in strings)
        return frame.filter(holds.fill_null(False)).collect()


def player_rows(lake_root: str, hub_dir: UPath, key: str) -> Iterator[tuple[Store, pl.DataFrame]]:
    """Yield each store holding rows of the player with `key`, with those rows."""
    for store in stores(lake_root, hub_dir):
        rows = rows_of(store.path, key)
        if rows.height:
            yield store, rows


def consent_of(lake_root: str, key: str) -> dict[str, bool]:
    """Return the player's recorded consent per data type (types without a decision left out)."""
    path = global_path(lake_root, *CONSENT_TABLE)
    if not path.exists():
        return {}
    with local_file(path) as local:
        rows = pl.read_parquet(local).filter(pl.col("player_key") == key)
    return dict(rows.select("data_type", "granted").iter_rows())


def export(lake_root: str, hub_dir: UPath, key: str, target: Path) -> dict[str, object]:
    """Write everything held about the player under `target/<key>/`; return the summary.

    One Parquet file per store (`<store name>`), plus `summary.json` (player_key, consent per data
    type, rows per store). Written to a working folder first and moved into place whole.
    """
    work = working_dir("subject-access")
    try:
        staged = work / key
        counts: dict[str, int] = {}
        for store, rows in player_rows(lake_root, hub_dir, key):
            out = staged / store.name
            out.parent.mkdir(parents=True, exist_ok=True)
            rows.write_parquet(out)
            counts[store.name] = rows.height
        summary = {"player_key": key, "consent": consent_of(lake_root, key), "rows": counts}
        staged.mkdir(parents=True, exist_ok=True)
        (staged / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        target.mkdir(parents=True, exist_ok=True)
        landed = target / f".{key}.partial"
        shutil.move(str(staged), str(landed))
        final = target / key
        if final.exists():
            shutil.rmtree(final)
        landed.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return summary
