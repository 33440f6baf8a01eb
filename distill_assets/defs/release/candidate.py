"""The release candidate: the repository of the next version, staged in the lake before publish.

It lives at `<lake root>/release/candidate/` (same layout as a published version). The checks
read it from there, and only a candidate that passed them is published.
"""

from __future__ import annotations

import polars as pl
from upath import UPath

from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.contracts.release import ReleaseFile, ReleaseManifest
from distill_assets.defs.curation.curated_table import CuratedPartition, stored_partitions
from distill_assets.defs.curation.funnel import read_funnel
from distill_assets.defs.curation.pipeline import feed_name
from distill_assets.defs.release.build import CuratedPart, ReleaseInputs, all_rules_versions
from distill_assets.defs.release.layout import MANIFEST, without_extensions
from distill_assets.lib.lake import (
    global_path,
    parquet_row_count,
    partition_files,
    read_parquet_table,
)
from distill_assets.rules.curation import DUPLICATE_REASONS

CURATION_GROUP = "curation"


def candidate_dir(lake_root: str) -> UPath:
    """Return the folder the release candidate is staged in."""
    return UPath(lake_root) / "release" / "candidate"


def read_parquet(path: UPath, columns: list[str] | None = None) -> pl.DataFrame:
    """Read a Parquet file from any filesystem the lake may be on."""
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: materialize its asset first")
    table = without_extensions(read_parquet_table(path, columns))
    return pl.from_arrow(table)  # type: ignore[return-value]


def curated_parts(partitions: list[CuratedPartition]) -> list[CuratedPart]:
    """Return curated partition files as release parts (read on demand, keyed by content)."""
    return [
        CuratedPart(
            partition=p.partition,
            fingerprint=p.content,
            placeholders=p.placeholders,
            read=lambda columns, path=p.path: read_parquet(path, columns),
        )
        for p in partitions
    ]


def load_release_inputs(lake_root: str, name: str) -> ReleaseInputs:
    """List every curated table's partition files and what the release records about inputs."""
    curated = {
        config: curated_parts(stored_partitions(lake_root, config)) for config in CONFIG_FEEDS
    }
    duplicates = {
        config: duplicate_count(global_path(lake_root, CURATION_GROUP, f"{config}_duplicates"))
        for config in CONFIG_FEEDS
    }
    created_from: dict[str, list[str]] = {}
    for config in CONFIG_FEEDS:
        created_from.update(contributing_partitions(lake_root, config))
    return ReleaseInputs(
        name=name,
        curated=curated,
        duplicates_removed=duplicates,
        created_from=created_from,
        rules=all_rules_versions(),
        funnels={config: read_funnel(lake_root, config) for config in CONFIG_FEEDS},
    )


def contributing_partitions(lake_root: str, config: str) -> dict[str, list[str]]:
    """Return, per feed table of `config`, its partitions holding at least one row (sorted).

    A day without raw data, or with only quarantined records, leaves empty feed partitions: they
    contribute nothing, so they are not the "newest input partition" that names the version and
    the dated export files (a day of no data must not rename an unchanged release).
    """
    return {
        feed_name(source, table): [
            path.rsplit("/", 1)[-1].removesuffix(".parquet")
            for path in partition_files(lake_root, source, table)
            if parquet_row_count(UPath(path)) > 0
        ]
        for source, table in CONFIG_FEEDS.get(config, [])
    }


def duplicate_count(path: UPath) -> int:
    """Return how many removed rows of a curation removal table are duplicates of a kept row."""
    reasons = read_parquet(path, ["reason"]).get_column("reason")
    return int(reasons.is_in(list(DUPLICATE_REASONS)).sum())


def read_manifest(folder: UPath) -> ReleaseManifest:
    """Read the manifest of a staged or published repository folder."""
    return ReleaseManifest.model_validate_json((folder / MANIFEST).read_text(encoding="utf-8"))


def read_config_rows(
    folder: UPath, manifest: ReleaseManifest, config: str, columns: list[str] | None = None
) -> pl.DataFrame:
    """Read every data file of `config` (optionally only `columns`) with its `split` added."""
    return read_files_rows(folder, [f for f in manifest.files if f.config == config], columns)


def read_files_rows(
    folder: UPath, files: list[ReleaseFile], columns: list[str] | None = None
) -> pl.DataFrame:
    """Read data files of a candidate (optionally only `columns`) with their `split` added."""
    frames = [
        read_parquet(folder / f.path, columns).with_columns(pl.lit(f.split).alias("split"))
        for f in files
    ]
    return pl.concat(frames, how="vertical") if frames else pl.DataFrame()
