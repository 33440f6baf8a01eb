"""Build one dataset version into a folder: data files, `release.json`, `README.md`.

Versions are named from content: `v<YYYYMMDD>-<hash8>`, where the date is the newest input
partition over all feed tables (`v00000000` before any) and `hash8` is the first 8 hex digits of
SHA-256 over the sorted lines `file <path> <sha256>` of every data file and `rules <module>
<version>` of every rules module. So a new version is made exactly when a published row, column,
order or file changes, a rules module changes, or a newer input partition arrives; re-building
the same inputs under the same rules gives the same version and byte-identical files (no wall
clock anywhere). The card compares with the previous version: the one currently published as
latest, or, when latest already is this version (a re-build), the version it was compared with
when first built, so a re-build writes the same card.

Data files are written per curated partition (`layout.py`). A file whose path and fingerprint
(`shard_fingerprint`: the digest of the curated partition's rows, split, shard, layout) match a
file of the previous version is hard-linked or copied from it (`PreviousShards`) instead of being
read and written again, so a night writes the shards of the partitions it changed.
"""

from __future__ import annotations

import hashlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from distill_assets import rules as rules_package
from distill_assets.contracts.published import published_schema
from distill_assets.contracts.release import (
    ConfigSummary,
    CountChange,
    ReleaseFile,
    ReleaseManifest,
    RulesChange,
    ScoreSummary,
    SplitSummary,
)
from distill_assets.defs.release.card import render_card
from distill_assets.defs.release.extras import ReleaseContributions, write_extras
from distill_assets.defs.release.layout import (
    LAYOUT_FORMAT,
    MANIFEST,
    README,
    SHARD_ROWS,
    data_file_path,
    link_or_copy,
    published_arrow_schema,
    shard_count,
    write_data_file,
)
from distill_assets.lib.scrub import placeholder_counts, placeholders, scrubbed_columns
from distill_assets.rules import rules_version
from distill_assets.rules.curation import SPLITS

NO_PARTITION_DATE = "00000000"
VERSION_HASH_DIGITS = 8
SCORE_BINS = 10
SCORE_DECIMALS = 6

PreviousLookup = Callable[[str], ReleaseManifest | None]
ReadRows = Callable[[list[str] | None], pl.DataFrame]
# the columns the manifest's summaries read from every partition (never the text)
SUMMARY_COLUMNS = ["split", "source", "quality_score"]


@dataclass(frozen=True)
class CuratedPart:
    """One partition of a config's curated rows, as the release reads it.

    `read(columns)` returns its rows (only `columns` when given) in curated order;
    `placeholders` counts the placeholders in its published text; `fingerprint` identifies its
    content (None: its data files are never reused).
    """

    partition: str
    fingerprint: str | None
    placeholders: dict[str, int]
    read: ReadRows


def frame_parts(config: str, curated: pl.DataFrame) -> list[CuratedPart]:
    """Return in-memory curated rows (with their `partition` column) as parts, never reused."""
    columns = scrubbed_columns(published_schema(config))
    parts = []
    for (partition,), rows in sorted(
        curated.partition_by("partition", as_dict=True, maintain_order=True).items()
    ):

        def read(names: list[str] | None, rows: pl.DataFrame = rows) -> pl.DataFrame:
            return rows.select(names) if names is not None else rows

        parts.append(CuratedPart(str(partition), None, placeholder_counts(rows, columns), read))
    return parts


class CuratedRows(Mapping[str, pl.DataFrame]):
    """Every config's curated rows, read from its parts only when asked for (then kept)."""

    def __init__(self, parts: Mapping[str, list[CuratedPart]]) -> None:
        self.parts = parts
        self.loaded: dict[str, pl.DataFrame] = {}

    def __getitem__(self, config: str) -> pl.DataFrame:
        """Return the rows of `config`, partition after partition."""
        if config not in self.loaded:
            frames = [part.read(None) for part in self.parts[config]]
            self.loaded[config] = pl.concat(frames, how="vertical") if frames else pl.DataFrame()
        return self.loaded[config]

    def __iter__(self) -> Iterator[str]:
        """Iterate over the configs."""
        return iter(self.parts)

    def __len__(self) -> int:
        """Return the number of configs."""
        return len(self.parts)


class PreviousShards:
    """The data files of the previous version that a new version may reuse.

    A file is reused when the previous manifest lists the same path with the same fingerprint and
    the file is in `folder` (a local copy of that version); paths reused are kept in `reused`.
    """

    def __init__(self, manifest: ReleaseManifest | None, folder: Path | None) -> None:
        usable = manifest is not None and folder is not None
        self.files = {f.path: f for f in manifest.files if f.fingerprint} if usable else {}
        self.folder = folder
        self.reused: list[str] = []

    def place(self, path: str, fingerprint: str, out_dir: Path) -> ReleaseFile | None:
        """Link or copy the previous file at `path` into `out_dir` if it has `fingerprint`."""
        entry = self.files.get(path)
        if entry is None or entry.fingerprint != fingerprint or self.folder is None:
            return None
        source = self.folder / path
        if not source.is_file():
            return None
        link_or_copy(source, out_dir / path)
        self.reused.append(path)
        return entry


def shard_fingerprint(config: str, part: str, split: str, index: int, shard_rows: int) -> str:
    """Return the fingerprint of one data file made from a curated part's fingerprint `part`."""
    lines = [LAYOUT_FORMAT, config, str(published_schema(config)), part, split]
    lines += [str(index), str(shard_rows)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass(frozen=True)
class ReleaseInputs:
    """Everything a release is built from: curated rows per config and their provenance."""

    name: str
    curated: dict[str, list[CuratedPart]]
    duplicates_removed: dict[str, int]
    created_from: dict[str, list[str]]
    rules: dict[str, str]
    funnels: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def newest_partition(self) -> str | None:
        """Return the newest partition over all feed tables, if any."""
        days = [day for partitions in self.created_from.values() for day in partitions]
        return max(days) if days else None


def all_rules_versions() -> dict[str, str]:
    """Return the version of every module of `distill_assets.rules`, by module name."""
    names = sorted(info.name for info in pkgutil.iter_modules(rules_package.__path__))
    return {name: rules_version(name) for name in names}


def release_version(
    newest_partition: str | None, files: list[ReleaseFile], rules: dict[str, str]
) -> str:
    """Return the content-derived version name (see module docstring)."""
    lines = [f"file {f.path} {f.sha256}" for f in sorted(files, key=lambda f: f.path)]
    lines += [f"rules {name} {version}" for name, version in sorted(rules.items())]
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    day = newest_partition.replace("-", "") if newest_partition else NO_PARTITION_DATE
    return f"v{day}-{digest[:VERSION_HASH_DIGITS]}"


def previous_manifest(
    latest: ReleaseManifest | None, version: str, lookup: PreviousLookup
) -> ReleaseManifest | None:
    """Return the manifest a build of `version` is compared with (see module docstring)."""
    if latest is None:
        return None
    if latest.version != version:
        return latest
    return lookup(latest.previous_version) if latest.previous_version else None


def score_summary(scores: pl.Series) -> ScoreSummary:
    """Summarize quality scores: count, mean, min, max and a 10-bin histogram over [0, 1]."""
    clean = scores.drop_nulls().cast(pl.Float64)
    if clean.is_empty():
        return ScoreSummary(rows=0, histogram=[0] * SCORE_BINS)
    bins = (clean * SCORE_BINS).floor().clip(0, SCORE_BINS - 1).cast(pl.Int64)
    counts = dict(bins.value_counts().iter_rows())
    return ScoreSummary(
        rows=clean.len(),
        mean=round(float(clean.mean()), SCORE_DECIMALS),
        min=round(float(clean.min()), SCORE_DECIMALS),
        max=round(float(clean.max()), SCORE_DECIMALS),
        histogram=[int(counts.get(i, 0)) for i in range(SCORE_BINS)],
    )


def chosen_longer_share(parts: list[CuratedPart]) -> float | None:
    """Return the share of pairs whose `chosen` messages hold more characters than `rejected`.

    None for a config without preference pairs or rows. The card reports it: a preference set
    whose chosen side is mostly the longer one teaches a length bias.
    """
    frames = [part.read(["chosen", "rejected"]) for part in parts]
    pairs = pl.concat([f for f in frames if f.height], how="vertical") if frames else None
    if pairs is None or pairs.is_empty():
        return None

    def chars(column: str) -> pl.Expr:
        contents = pl.col(column).list.eval(pl.element().struct.field("content").str.len_chars())
        return contents.list.sum()

    longer = pairs.select((chars("chosen") > chars("rejected")).mean()).item()
    return round(float(longer), SCORE_DECIMALS)


def summed_placeholders(parts: list[CuratedPart]) -> dict[str, int]:
    """Return the placeholder counts of all parts (kinds in rule order, zero counts left out)."""
    totals = {name: sum(p.placeholders.get(name, 0) for p in parts) for name in placeholders()}
    return {name: n for name, n in totals.items() if n}


def metadata_counts(
    parts: list[CuratedPart], keys: Sequence[str]
) -> dict[str, dict[str, dict[str, int]]]:
    """Return split -> metadata key -> value -> rows over the parts' rows (values sorted).

    Only `split` and `metadata` are read, one part at a time; a row without the key (or a null
    value) is not counted.
    """
    counts: dict[str, dict[str, dict[str, int]]] = {}
    if not keys:
        return counts
    for part in parts:
        rows = part.read(["split", "metadata"])
        for key in keys:
            value = pl.col("metadata").str.json_path_match(f"$.{key}").alias("value")
            found = rows.select("split", value).drop_nulls().group_by("split", "value").len()
            for split, name, n in found.iter_rows():
                by_value = counts.setdefault(split, {}).setdefault(key, {})
                by_value[name] = by_value.get(name, 0) + int(n)
    return {
        split: {key: dict(sorted(values.items())) for key, values in sorted(by_key.items())}
        for split, by_key in counts.items()
    }


def split_summaries(
    curated: pl.DataFrame, counted: Mapping[str, dict[str, dict[str, int]]] | None = None
) -> dict[str, SplitSummary]:
    """Return split -> rows in total, per source and per counted metadata value (every split)."""
    by_split = curated.group_by("split", "source").len().sort("split", "source")
    sources: dict[str, dict[str, int]] = {split: {} for split in SPLITS}
    for split, source, rows in by_split.iter_rows():
        sources.setdefault(split, {})[source] = int(rows)
    counted = counted or {}
    return {
        split: SplitSummary(
            rows=sum(by_source.values()),
            sources=by_source,
            metadata_counts=counted.get(split, {}),
        )
        for split, by_source in sources.items()
    }


def count_changes(
    previous: ReleaseManifest | None, configs: dict[str, ConfigSummary]
) -> dict[str, dict[str, CountChange]]:
    """Return config -> split -> row counts before and now (empty without a previous version)."""
    if previous is None:
        return {}
    changes: dict[str, dict[str, CountChange]] = {}
    for config in sorted(set(previous.configs) | set(configs)):
        before = previous.split_rows(config)
        now = (
            {split: s.rows for split, s in configs[config].splits.items()}
            if config in configs
            else {}
        )
        changes[config] = {
            split: CountChange(
                previous=before.get(split, 0),
                current=now.get(split, 0),
                delta=now.get(split, 0) - before.get(split, 0),
            )
            for split in SPLITS
        }
    return changes


def rules_changes(
    previous: ReleaseManifest | None, rules: dict[str, str]
) -> dict[str, RulesChange]:
    """Return the rules modules whose version differs from the previous release's."""
    if previous is None:
        return {}
    return {
        name: RulesChange(previous=previous.rules.get(name), current=rules.get(name))
        for name in sorted(set(previous.rules) | set(rules))
        if previous.rules.get(name) != rules.get(name)
    }


def write_config(
    config: str,
    parts: list[CuratedPart],
    out_dir: Path,
    shard_rows: int,
    previous: PreviousShards,
) -> tuple[list[ReleaseFile], pl.DataFrame]:
    """Write one config's data files; return them and the parts' `SUMMARY_COLUMNS`.

    Each part's split gets `shard_count` files (a split with no rows none); a part is read
    whole only when one of its files cannot be reused from `previous`.
    """
    schema = published_arrow_schema(config)
    files, summaries = [], []
    for part in parts:
        summary = part.read(SUMMARY_COLUMNS)
        summaries.append(summary)
        rows: pl.DataFrame | None = None
        counts = dict(summary.group_by("split").len().iter_rows())
        for split in SPLITS:
            count = counts.get(split, 0)
            for index in range(shard_count(count, shard_rows) if count else 0):
                path = data_file_path(config, split, part.partition, index)
                fingerprint = (
                    shard_fingerprint(config, part.fingerprint, split, index, shard_rows)
                    if part.fingerprint
                    else None
                )
                reused = previous.place(path, fingerprint, out_dir) if fingerprint else None
                if reused is not None:
                    files.append(reused)
                    continue
                if rows is None:
                    rows = part.read(None)
                shard = rows.filter(pl.col("split") == split).slice(index * shard_rows, shard_rows)
                written = write_data_file(shard, schema, out_dir / path)
                files.append(
                    ReleaseFile(
                        path=path,
                        config=config,
                        split=split,
                        rows=written.rows,
                        bytes=written.bytes,
                        sha256=written.sha256,
                        fingerprint=fingerprint,
                    )
                )
    files.sort(key=lambda f: (SPLITS.index(f.split), f.path))
    frames = [s for s in summaries if s.height]
    return files, (pl.concat(frames, how="vertical") if frames else pl.DataFrame())


def build_release(
    inputs: ReleaseInputs,
    out_dir: Path,
    previous_for: Callable[[str], ReleaseManifest | None],
    shard_rows: int = SHARD_ROWS,
    previous_shards: PreviousShards | None = None,
    *,
    contributions: ReleaseContributions | None = None,
) -> ReleaseManifest:
    """Write the repository of one version into `out_dir` and return its manifest.

    A split with no rows has no file and is not listed (the `datasets` library cannot load an
    empty Parquet split); a config with no rows at all is omitted and named in `empty_configs`.
    `previous_for(version)` returns the manifest to compare with (`previous_manifest`);
    `previous_shards` offers the data files of the previous version for reuse; `contributions`
    the sources' extra files and card notes (none when not given).
    """
    previous_shards = previous_shards or PreviousShards(None, None)
    contributions = contributions or ReleaseContributions()
    files: list[ReleaseFile] = []
    configs: dict[str, ConfigSummary] = {}
    empty: list[str] = []
    for config in sorted(inputs.curated):
        parts = inputs.curated[config]
        written, curated = write_config(config, parts, out_dir, shard_rows, previous_shards)
        if curated.is_empty():
            empty.append(config)
            continue
        files += written
        configs[config] = ConfigSummary(
            splits=split_summaries(curated, metadata_counts(parts, contributions.counted_metadata)),
            duplicates_removed=inputs.duplicates_removed.get(config, 0),
            scores=score_summary(curated.get_column("quality_score")),
            funnel=inputs.funnels.get(config, {}),
            redactions=summed_placeholders(parts),
            chosen_longer_share=(
                chosen_longer_share(parts) if "chosen" in published_schema(config) else None
            ),
        )
    extras = write_extras(
        CuratedRows(inputs.curated), inputs.newest_partition, out_dir, contributions.writers
    )
    version = release_version(inputs.newest_partition, files, inputs.rules)
    previous = previous_for(version)
    manifest = ReleaseManifest(
        name=inputs.name,
        version=version,
        previous_version=previous.version if previous else None,
        newest_partition=inputs.newest_partition,
        configs=configs,
        empty_configs=empty,
        created_from={k: inputs.created_from[k] for k in sorted(inputs.created_from)},
        rules=dict(sorted(inputs.rules.items())),
        files=files,
        changes=count_changes(previous, configs),
        rules_changed=rules_changes(previous, inputs.rules),
        extra_files=extras,
    )
    (out_dir / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out_dir / README).write_text(render_card(manifest, contributions.card_notes), encoding="utf-8")
    return manifest
