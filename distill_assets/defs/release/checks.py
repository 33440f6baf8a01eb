"""Blocking checks on the release candidate: nothing is published unless all of them pass.

Each check reads the staged candidate (`release/candidate/` in the lake) and reports what it found
per config. `release/dataset` is downstream of the candidate, so a failing check stops the run
before the publish step.
"""

import hashlib

import dagster as dg
import polars as pl
import pyarrow.parquet as pq

from distill_assets.contracts.published import published_schema
from distill_assets.defs.curation.curated import read_curated
from distill_assets.defs.curation.scrub import leak_counts, scrubbed_columns
from distill_assets.defs.release.assets import CANDIDATE_KEY
from distill_assets.defs.release.candidate import candidate_dir, read_config_rows, read_manifest
from distill_assets.defs.release.layout import DATA_DIR, README, arrow_schema
from distill_assets.defs.release.scan import scan_frame
from distill_assets.defs.resources import DistillSettings
from distill_assets.rules.curation import SPLIT_BY_GROUP


def _result(failures: dict[str, object], **metadata: object) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        passed=not failures,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"failures": dg.MetadataValue.json(failures), **metadata},
    )


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def files_match_manifest(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check the files against release.json.

    Every listed data file exists with its checksum and row count, no other data file exists,
    and the card is there.
    """
    folder = candidate_dir(settings.resolved().lake_root)
    manifest = read_manifest(folder)
    failures: dict[str, object] = {}
    for entry in manifest.files:
        path = folder / entry.path
        if not path.exists():
            failures[entry.path] = "missing"
            continue
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        with path.open("rb") as handle:
            rows = pq.ParquetFile(handle).metadata.num_rows
        if digest != entry.sha256 or rows != entry.rows:
            failures[entry.path] = {"sha256": digest, "rows": rows}
    listed = {entry.path for entry in manifest.files}
    data = folder / DATA_DIR
    present = (
        {p.relative_to(folder).as_posix() for p in data.rglob("*.parquet")}
        if data.exists()
        else set()
    )
    for extra in sorted(present - listed):
        failures[extra] = "not in release.json"
    if not (folder / README).exists():
        failures[README] = "missing"
    return _result(failures, files=dg.MetadataValue.int(len(manifest.files)))


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def matches_contract(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check every data file against its config's published contract.

    Exactly the published columns and types, no null id/source/source_ref/metadata, and quality
    scores in [0, 1].
    """
    folder = candidate_dir(settings.resolved().lake_root)
    manifest = read_manifest(folder)
    failures: dict[str, object] = {}
    for entry in manifest.files:
        expected = arrow_schema(published_schema(entry.config))
        with (folder / entry.path).open("rb") as handle:
            actual = pq.read_schema(handle).remove_metadata()
        if not actual.equals(expected):
            failures[entry.path] = {"schema": str(actual), "expected": str(expected)}
    for config in manifest.configs:
        rows = read_config_rows(
            folder, manifest, config, ["id", "source", "source_ref", "metadata", "quality_score"]
        )
        bad = rows.filter(
            pl.any_horizontal(pl.col("id", "source", "source_ref", "metadata").is_null())
            | ~pl.col("quality_score").is_between(0.0, 1.0)
            | pl.col("quality_score").is_null()
        )
        if bad.height:
            failures[config] = {"invalid_rows": bad.height, "ids": bad["id"].head(5).to_list()}
    return _result(failures)


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def ids_unique(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check that no id appears twice within a config (across all its splits and files)."""
    folder = candidate_dir(settings.resolved().lake_root)
    manifest = read_manifest(folder)
    failures: dict[str, object] = {}
    for config in manifest.configs:
        ids = read_config_rows(folder, manifest, config, ["id"]).get_column("id")
        repeated = ids.filter(ids.is_duplicated()).unique().sort()
        if repeated.len():
            failures[config] = {"repeated_ids": repeated.len(), "ids": repeated.head(5).to_list()}
    return _result(failures)


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def groups_within_one_split(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check that no split group (task, session, scenario, player) spans splits.

    Judged on the published files joined with the curated partition files' `split_group`. Rows
    curation deliberately split by a finer key (`split_by` other than `group`: an oversized group
    split by row, or a key moved so that both splits exist; `rules/curation.py`) are left out.
    """
    lake_root = settings.resolved().lake_root
    folder = candidate_dir(lake_root)
    manifest = read_manifest(folder)
    failures: dict[str, object] = {}
    for config in manifest.configs:
        published = read_config_rows(folder, manifest, config, ["id", "source_ref"])
        groups = read_curated(lake_root, config, ["id", "source_ref", "split_group", "split_by"])
        joined = published.join(groups, on=["id", "source_ref"], how="left").filter(
            pl.col("split_by").fill_null(SPLIT_BY_GROUP) == SPLIT_BY_GROUP
        )
        unknown = joined.filter(pl.col("split_group").is_null()).height
        spanning = (
            joined.drop_nulls("split_group")
            .group_by("split_group")
            .agg(pl.col("split").n_unique().alias("splits"))
            .filter(pl.col("splits") > 1)
            .sort("split_group")
        )
        if unknown or spanning.height:
            failures[config] = {
                "groups_in_several_splits": spanning.height,
                "groups": spanning["split_group"].head(5).to_list(),
                "rows_without_group": unknown,
            }
    return _result(failures)


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def no_unscrubbed_secrets(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check that no published text still matches a secret, e-mail or phone pattern.

    The patterns are those scrubbing applies (`rules/curation.py`).
    """
    folder = candidate_dir(settings.resolved().lake_root)
    manifest = read_manifest(folder)
    failures: dict[str, object] = {}
    for config in manifest.configs:
        rows = read_config_rows(folder, manifest, config)
        leaks = {
            kind: n
            for kind, n in leak_counts(rows, scrubbed_columns(published_schema(config))).items()
            if n
        }
        if leaks:
            failures[config] = leaks
    return _result(failures)


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def independent_pii_scan(settings: DistillSettings) -> dg.AssetCheckResult:
    """Scan every published text with detectors independent of the scrubber; any hit blocks.

    detect-secrets plugins, phonenumbers and validators (ipaddress, Luhn, SSA, IBAN mod 97) — see
    `defs/release/scan.py`. Failures name the config, row ids and finding types.
    """
    folder = candidate_dir(settings.resolved().lake_root)
    manifest = read_manifest(folder)
    failures: dict[str, object] = {}
    for config in manifest.configs:
        rows = read_config_rows(folder, manifest, config)
        findings = scan_frame(rows, scrubbed_columns(published_schema(config)))
        if findings.height:
            by_type = findings.group_by("type").len().sort("type")
            failures[config] = {
                "findings": dict(by_type.iter_rows()),
                "rows": findings.unique().sort("id", "column", "type").head(20).rows(),
            }
    return _result(failures)


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def has_rows(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check that the candidate has at least one row (an empty repository cannot be loaded)."""
    manifest = read_manifest(candidate_dir(settings.resolved().lake_root))
    rows = sum(entry.rows for entry in manifest.files)
    return _result({} if rows else {"rows": 0}, rows=dg.MetadataValue.int(rows))
