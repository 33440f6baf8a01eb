"""The release manifest (`release.json`): what a published dataset version holds and came from.

Every field is derived from the data and the rules (never from the wall clock), so building the
same inputs twice gives the same bytes. Dicts are written with sorted keys.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class ReleaseFile(BaseModel):
    """One Parquet data file of the release."""

    path: str = Field(
        description="path inside the repository, e.g. data/sft/train/2026-11-19-00000.parquet"
    )
    config: str
    split: str
    rows: int = Field(ge=0)
    bytes: int = Field(ge=0)
    sha256: str = Field(description="hex SHA-256 of the file's bytes")
    fingerprint: str | None = Field(
        default=None,
        description=(
            "hex SHA-256 of what the file's bytes are made from (the digest of the curated "
            "partition's rows, split, shard and layout); a later version with the same path and "
            "fingerprint reuses the file instead of writing it; null: never reused"
        ),
    )


class ScoreSummary(BaseModel):
    """Distribution of `quality_score` over a config's published rows."""

    rows: int = Field(ge=0)
    mean: float | None = None
    min: float | None = None
    max: float | None = None
    histogram: list[int] = Field(description="rows per score bin [i/10, (i+1)/10), last bin closed")


class CountChange(BaseModel):
    """Row count of one config and split in the previous and this version."""

    previous: int = Field(ge=0)
    current: int = Field(ge=0)
    delta: int


class RulesChange(BaseModel):
    """A rules module whose version differs from the previous release's."""

    previous: str | None = Field(description="version in the previous release (None: new module)")
    current: str | None = Field(description="version in this release (None: module removed)")


class SplitSummary(BaseModel):
    """Rows of one split of a config, in total and per source."""

    rows: int = Field(ge=0)
    sources: dict[str, int] = Field(description="source -> rows")
    metadata_counts: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description=(
            "metadata key -> value -> rows, for the keys the sources ask the card to count "
            "(`ReleaseContributions.counted_metadata`, e.g. telemetry's value_class); rows "
            "without the key are not counted"
        ),
    )


class WithheldRow(BaseModel):
    """A row the independent scan withheld from the release: where, never the value."""

    id: str
    column: str
    kind: str = Field(description="the finding's type, e.g. email or secret:AWS Access Key")


class ConfigSummary(BaseModel):
    """What one published config holds."""

    splits: dict[str, SplitSummary] = Field(description="split -> rows (a split without rows: 0)")
    duplicates_removed: int = Field(
        ge=0, description="rows removed as exact, near or semantic duplicates"
    )
    scores: ScoreSummary
    funnel: dict[str, int] = Field(
        default_factory=dict,
        description="curation stage -> rows left after it, in order (rows_in ... published)",
    )
    redactions: dict[str, int] = Field(
        default_factory=dict,
        description="placeholder (e.g. REDACTED_EMAIL) -> occurrences in the published rows",
    )
    withheld: list[WithheldRow] = Field(
        default_factory=list,
        description="rows left out because the independent scan found a secret or personal datum",
    )
    chosen_longer_share: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="preference configs: share of pairs whose chosen text is longer (length bias)",
    )


class ExtraFile(BaseModel):
    """A file a source contributed beside the data files (a release extra), e.g. JSONL exports."""

    path: str = Field(description="path inside the repository, e.g. exports/cot_20261119.jsonl")
    bytes: int = Field(ge=0)
    sha256: str


class ReleaseManifest(BaseModel):
    """Machine-readable description of one dataset version."""

    name: str = Field(description="dataset repository name")
    version: str = Field(
        description="v<YYYYMMDD of newest input partition>-<8 hex of content hash>"
    )
    previous_version: str | None = Field(
        default=None, description="the version this one is compared with, if any"
    )
    newest_partition: str | None = Field(
        default=None, description="newest input partition (YYYY-MM-DD) over all feed tables"
    )
    configs: dict[str, ConfigSummary] = Field(
        description="published configs (with at least one row), by name"
    )
    empty_configs: list[str] = Field(
        default_factory=list, description="configs with no rows, omitted from the repository"
    )
    created_from: dict[str, list[str]] = Field(
        description="feed table (source/table) -> the partitions present when the release was built"
    )
    rules: dict[str, str] = Field(description="rules module -> version (content hash)")
    files: list[ReleaseFile]
    changes: dict[str, dict[str, CountChange]] = Field(
        default_factory=dict,
        description="config -> split -> row counts against previous_version (empty if none)",
    )
    rules_changed: dict[str, RulesChange] = Field(
        default_factory=dict, description="rules modules whose version changed since previous"
    )
    extra_files: list[ExtraFile] = Field(
        default_factory=list, description="files sources added beside the data (release extras)"
    )

    def split_rows(self, config: str) -> dict[str, int]:
        """Return the number of rows per split of a config (empty if it is not published)."""
        summary = self.configs.get(config)
        return {split: s.rows for split, s in summary.splits.items()} if summary else {}
