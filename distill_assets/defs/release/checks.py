"""Blocking checks on the release candidate: nothing is published unless all of them pass.

Each check reads the staged candidate (`release/candidate/` in the lake) and reports what it found
per config. `release/dataset` is downstream of the candidate, so a failing check stops the run
before the publish step.

The checks that read the published text (`matches_contract`'s row checks, `no_unscrubbed_secrets`,
`independent_pii_scan`) remember the data files they passed, by the SHA-256 of the bytes they
read, in `release/checked_<check>.parquet` with the `checks_version` they ran under (a digest of
the checks, the scan, the scrubber and their rules and libraries). A night's candidate reuses
most files of the previous version byte for byte, so only the files the night wrote are read
again; a change to any check, pattern or detector changes the version and every file is read
again. A config with a finding remembers none of its files.
"""

import hashlib
import math
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import dagster as dg
import polars as pl
from upath import UPath

from distill_assets.contracts.published import published_schema
from distill_assets.contracts.release import ReleaseFile, ReleaseManifest
from distill_assets.defs.curation.curated_table import read_curated
from distill_assets.defs.player_ids import PlayerIdHasher
from distill_assets.defs.release import scan
from distill_assets.defs.release.assets import CANDIDATE_KEY
from distill_assets.defs.release.candidate import (
    candidate_dir,
    read_config_rows,
    read_files_rows,
    read_manifest,
)
from distill_assets.defs.release.continuity import allowed_drops, drop_reasons
from distill_assets.defs.release.known_players import known_player_findings, known_players
from distill_assets.defs.release.layout import DATA_DIR, README, published_arrow_schema
from distill_assets.defs.release.split_audit import config_leaks, record_leaks
from distill_assets.defs.release.withhold import read_line_memory, read_withheld
from distill_assets.defs.resources import DistillSettings
from distill_assets.lib import scrub
from distill_assets.lib.lake import (
    global_path,
    parquet_file,
    parquet_row_count,
    read_parquet_table,
    write_parquet_atomic,
)
from distill_assets.lib.scrub import leak_counts, scrubbed_columns
from distill_assets.rules import rules_version
from distill_assets.rules.curation import WITHHELD_MAX_ROWS, WITHHELD_MAX_SHARE


def checks_version() -> str:
    """Return the version the text checks run under: any change to what they apply changes it.

    A digest of the source of this module, of the scan (`scan.py`) and the scrubber
    (`lib/scrub.py`), the curation rules' version and the detector libraries' versions.
    """
    digest = hashlib.sha256()
    for module in (__file__, scan.__file__, scrub.__file__):
        digest.update(Path(module).read_bytes())
    for library in ("detect-secrets", "phonenumbers"):
        digest.update(f"{library}=={version(library)}".encode())
    digest.update(rules_version("curation").encode())
    return digest.hexdigest()[:16]


class PassedFiles:
    """The data files a text check passed before, under the current `checks_version`."""

    def __init__(self, lake_root: str, check: str) -> None:
        """Read what `check` remembers (nothing when its table is absent or of another version)."""
        self.path = global_path(lake_root, "release", f"checked_{check}")
        self.version = checks_version()
        self.passed: set[str] = set()
        if self.path.exists():
            table = pl.from_arrow(read_parquet_table(self.path))
            assert isinstance(table, pl.DataFrame)
            self.passed = set(table.filter(pl.col("checks_version") == self.version)["sha256"])
        self.remembered = len(self.passed)

    def pending(self, manifest: ReleaseManifest, config: str) -> list[ReleaseFile]:
        """Return the data files of `config` this check has not passed (listed checksum)."""
        return [f for f in manifest.files if f.config == config and f.sha256 not in self.passed]

    def add(self, folder: UPath, files: list[ReleaseFile]) -> None:
        """Remember `files` as passed, by the checksum of their bytes as they are now."""
        for entry in files:
            with (folder / entry.path).open("rb") as handle:
                self.passed.add(hashlib.file_digest(handle, "sha256").hexdigest())

    def save(self, manifest: ReleaseManifest) -> None:
        """Write what is remembered about files of `manifest`, when it changed (atomically)."""
        listed = {f.sha256 for f in manifest.files}
        kept = sorted(self.passed & listed)
        if len(kept) == self.remembered and set(kept) == self.passed:
            return
        write_parquet_atomic(
            pl.DataFrame(
                {"checks_version": [self.version] * len(kept), "sha256": kept},
                schema={"checks_version": pl.String(), "sha256": pl.String()},
            ),
            self.path,
        )


def _text_check(
    settings: DistillSettings,
    check: str,
    columns: list[str] | None,
    failures_of: Callable[[str, pl.DataFrame], dict[str, object] | None],
) -> dg.AssetCheckResult:
    """Run a text check over the data files it has not passed yet; remember those that pass.

    `failures_of(config, rows)` returns the failures of a config's unchecked rows (read with
    `columns`, all when None), or None.
    """
    lake_root = settings.resolved().lake_root
    folder = candidate_dir(lake_root)
    manifest = read_manifest(folder)
    memory = PassedFiles(lake_root, check)
    failures: dict[str, object] = {}
    read = 0
    for config in manifest.configs:
        pending = memory.pending(manifest, config)
        if not pending:
            continue
        read += len(pending)
        found = failures_of(config, read_files_rows(folder, pending, columns))
        if found:
            failures[config] = found
        else:
            memory.add(folder, pending)
    if not failures:
        memory.save(manifest)
    return _result(
        failures,
        files_read=dg.MetadataValue.int(read),
        files_passed_before=dg.MetadataValue.int(len(manifest.files) - read),
    )


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
        rows = parquet_row_count(path)
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

    Exactly the published columns and types (every file's footer), no null
    id/source/source_ref/metadata, and quality scores in [0, 1] (the rows of the files not
    passed before, see the module docstring).
    """
    folder = candidate_dir(settings.resolved().lake_root)
    manifest = read_manifest(folder)
    schemas: dict[str, object] = {}
    for entry in manifest.files:
        expected = published_arrow_schema(entry.config)
        with parquet_file(folder / entry.path) as footer:
            actual = footer.schema_arrow.remove_metadata()
        if not actual.equals(expected):
            schemas[entry.path] = {"schema": str(actual), "expected": str(expected)}
    if schemas:
        return _result(schemas)

    def invalid(_config: str, rows: pl.DataFrame) -> dict[str, object] | None:
        bad = rows.filter(
            pl.any_horizontal(pl.col("id", "source", "source_ref", "metadata").is_null())
            | ~pl.col("quality_score").is_between(0.0, 1.0)
            | pl.col("quality_score").is_null()
        )
        return (
            {"invalid_rows": bad.height, "ids": bad["id"].head(5).to_list()} if bad.height else None
        )

    return _text_check(
        settings,
        "matches_contract",
        ["id", "source", "source_ref", "metadata", "quality_score"],
        invalid,
    )


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
    """Check that nothing leaks across splits: groups, prompts, source records, metadata.

    Judged on the published files joined with the curated partition files' `split_group`
    (`split_audit.py` lists what is looked for). A row without a curated group fails too.
    """
    lake_root = settings.resolved().lake_root
    folder = candidate_dir(lake_root)
    manifest = read_manifest(folder)
    failures: dict[str, object] = {}
    records = []
    for config in manifest.configs:
        published = read_config_rows(folder, manifest, config)
        groups = read_curated(lake_root, config, ["id", "source_ref", "split_group"])
        joined = published.join(groups, on=["id", "source_ref"], how="left")
        leaks = config_leaks(config, joined)
        unknown = joined.filter(pl.col("split_group").is_null()).height
        if unknown:
            leaks["rows_without_group"] = unknown
        if leaks:
            failures[config] = leaks
        records.append(
            joined.select(pl.lit(config).alias("config"), "source", "source_ref", "split")
        )
    across = record_leaks(pl.concat(records, how="vertical")) if records else {}
    if across:
        failures["across_configs"] = across
    return _result(failures)


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def no_unscrubbed_secrets(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check that no published text still matches a secret, e-mail or phone pattern.

    The patterns are those scrubbing applies (`rules/curation.py`); files passed before under
    the same checks version are not read again (module docstring).
    """

    def leaks(config: str, rows: pl.DataFrame) -> dict[str, object] | None:
        counts = leak_counts(rows, scrubbed_columns(published_schema(config)))
        found = {kind: n for kind, n in counts.items() if n}
        return found or None

    return _text_check(settings, "no_unscrubbed_secrets", None, leaks)


def withheld_limit(rows: int) -> int:
    """Return the most withheld rows a config of `rows` rows (published plus withheld) may have.

    The larger of `WITHHELD_MAX_ROWS` and `WITHHELD_MAX_SHARE` of the rows, rounded up.
    """
    return max(WITHHELD_MAX_ROWS, math.ceil(rows * WITHHELD_MAX_SHARE))


def withheld_over_threshold(
    withheld: pl.DataFrame, published: dict[str, int]
) -> dict[str, dict[str, int]]:
    """Return, per config withholding more rows than `withheld_limit` allows, its counts.

    `withheld` holds the candidate's withheld findings (`WITHHELD_SCHEMA`; a row may have several),
    `published` the rows each config publishes.
    """
    per_config = dict(withheld.group_by("config").agg(pl.col("id").n_unique()).iter_rows())
    over = {}
    for config, count in sorted(per_config.items()):
        rows = published.get(config, 0) + count
        limit = withheld_limit(rows)
        if count > limit:
            over[config] = {"withheld_rows": count, "rows": rows, "threshold": limit}
    return over


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def independent_pii_scan(
    settings: DistillSettings, player_id_hasher: PlayerIdHasher
) -> dg.AssetCheckResult:
    """Scan every published text with detectors independent of the scrubber; any hit blocks.

    detect-secrets plugins, phonenumbers and validators (ipaddress, Luhn, SSA, IBAN mod 97) — see
    `defs/release/scan.py` — and the known-player detector (a token whose keyed hash is a known
    player_key, `defs/release/known_players.py`). The candidate already left out the rows the
    scan flagged in the curated text (`withhold.py`), so a hit here is text the release built
    itself. More withheld rows in one config than `withheld_limit` allows also block (a
    systematic scrubber failure). Failures name the config, row ids, columns and finding types.
    Files passed before under the same checks version are not read again (module docstring);
    every line of the files read is split and prefiltered here, and the detectors read the
    candidate lines the candidate's own scan did not read (`withhold.read_line_memory`: same
    findings by line digest).
    """
    withheld = read_withheld(settings.resolved().lake_root)
    manifest = read_manifest(candidate_dir(settings.resolved().lake_root))
    published = {
        config: sum(split.rows for split in entry.splits.values())
        for config, entry in manifest.configs.items()
    }
    over = withheld_over_threshold(withheld, published)
    if over:
        return _result(over, withheld_rows=dg.MetadataValue.int(withheld.height))
    known = known_players(settings.resolved().lake_root, player_id_hasher)
    lines = read_line_memory(settings.resolved().lake_root)

    def findings_of(config: str, rows: pl.DataFrame) -> dict[str, object] | None:
        columns = scrubbed_columns(published_schema(config))
        findings = pl.concat(
            [scan.scan_frame(rows, columns, lines), known_player_findings(rows, columns, known)]
        )
        if not findings.height:
            return None
        by_type = findings.group_by("type").len().sort("type")
        return {
            "findings": dict(by_type.iter_rows()),
            "rows": findings.unique().sort("id", "column", "type").head(20).rows(),
        }

    return _text_check(settings, "independent_pii_scan", None, findings_of)


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def keeps_previous_configs(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check that every config and split the previous version had still has rows.

    A drop is reported as one line per config (`continuity.py`); configs named in
    `DISTILL_ALLOW_DROPPED_CONFIGS` (or `*`) may be dropped on purpose.
    """
    resolved = settings.resolved()
    manifest = read_manifest(candidate_dir(resolved.lake_root))
    reasons = drop_reasons(manifest, allowed_drops(resolved.allow_dropped_configs))
    return dg.AssetCheckResult(
        passed=not reasons,
        severity=dg.AssetCheckSeverity.ERROR,
        description="; ".join(reasons.values()) or None,
        metadata={"failures": dg.MetadataValue.json(reasons)},
    )


@dg.asset_check(asset=CANDIDATE_KEY, blocking=True)
def has_rows(settings: DistillSettings) -> dg.AssetCheckResult:
    """Check that the candidate has at least one row (an empty repository cannot be loaded)."""
    manifest = read_manifest(candidate_dir(settings.resolved().lake_root))
    rows = sum(entry.rows for entry in manifest.files)
    return _result({} if rows else {"rows": 0}, rows=dg.MetadataValue.int(rows))
