"""The dataset card (`README.md`): YAML front matter that the Hub and `datasets` read, then tables.

The front matter lists every config's data files per split (`configs:`), the license, tags and
task categories. The body says what is inside (rows per config, split and source; quality score
distributions), from which inputs (partitions per feed table), under which rules (every rules
module's version) and what changed since the previous version. Everything comes from the
manifest, so the card is as deterministic as the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta

import yaml

from distill_assets.contracts.published import COMMON_SCHEMA, published_schema
from distill_assets.contracts.release import ConfigSummary, ReleaseManifest
from distill_assets.defs.release.layout import split_pattern
from distill_assets.defs.release.notes import notes_section
from distill_assets.rules.curation import (
    SPLITS,
    TEST_FRACTION,
    TEST_SPLIT,
)

LICENSE = "apache-2.0"
LANGUAGES = ["en"]
TASK_CATEGORIES = ["text-generation"]
BASE_TAGS = ["distill", "distillation", "synthetic"]
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"))
LARGEST_SIZE_CATEGORY = "100K<n<1M"


def size_category(rows: int) -> str:
    """Return the Hub's size category for a row count (capped at 100K<n<1M for this card)."""
    for limit, name in SIZE_CATEGORIES:
        if rows < limit:
            return name
    return LARGEST_SIZE_CATEGORY


def front_matter(manifest: ReleaseManifest) -> dict[str, object]:
    """Return the card's YAML metadata, `configs:` giving each config's file pattern per split.

    A split's files are `data/<config>/<split>/<partition>-<NNNNN>.parquet` (`layout.py`); the
    pattern `data/<config>/<split>/*.parquet` makes `datasets` read them in partition order.
    """
    configs = []
    for config in manifest.configs:
        data_files = []
        for split in SPLITS:
            if any(f.config == config and f.split == split for f in manifest.files):
                data_files.append({"split": split, "path": split_pattern(config, split)})
        configs.append({"config_name": config, "data_files": data_files})
    total = sum(f.rows for f in manifest.files)
    return {
        "pretty_name": manifest.name,
        "license": LICENSE,
        "language": LANGUAGES,
        "task_categories": TASK_CATEGORIES,
        "tags": [*BASE_TAGS, *manifest.configs],
        "size_categories": [size_category(total)],
        "configs": configs,
    }


def partition_ranges(days: list[str]) -> str:
    """Render sorted YYYY-MM-DD dates as runs of consecutive days, e.g. `2026-11-19..2026-11-20`."""
    runs: list[tuple[date, date]] = []
    for day in sorted(date.fromisoformat(d) for d in days):
        if runs and day == runs[-1][1] + timedelta(days=1):
            runs[-1] = (runs[-1][0], day)
        else:
            runs.append((day, day))
    return ", ".join(
        start.isoformat() if start == end else f"{start.isoformat()}..{end.isoformat()}"
        for start, end in runs
    )


def _table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _load_section(manifest: ReleaseManifest) -> str:
    config = next(iter(manifest.configs), "sft")
    return (
        "## Load\n\n```python\nfrom datasets import load_dataset\n\n"
        f'ds = load_dataset("path/to/{manifest.name}/latest", "{config}")  # local folder\n'
        f'ds = load_dataset("<org>/{manifest.name}", "{config}", revision="{manifest.version}")'
        "  # Hub, pinned\n```\n\n"
        "Each config has `train` and `test` splits; a split or config without rows is left out. "
        "Every row has `id` (stable content hash), `source`, `source_ref` (where in the raw data "
        "it came from), `quality_score` and `metadata` (a JSON string of source-specific fields)."
    )


def _configs_section(manifest: ReleaseManifest) -> str:
    rows = []
    for config in manifest.configs:
        per_split = manifest.split_rows(config)
        core = [c for c in published_schema(config).names() if c not in COMMON_SCHEMA]
        rows.append(
            [
                f"`{config}`",
                *(per_split.get(split, 0) for split in SPLITS),
                sum(per_split.values()),
                f"{test_share(per_split):.1%}",
                manifest.configs[config].duplicates_removed,
                ", ".join(f"`{c}`" for c in core),
            ]
        )
    text = "## Configs\n\n" + _table(
        ["config", *SPLITS, "total", "test share", "duplicates removed", "core columns"], rows
    )
    for config, summary in manifest.configs.items():
        if summary.chosen_longer_share is not None:
            text += (
                f"\n\nLength bias of `{config}`: `chosen` is the longer side in "
                f"{summary.chosen_longer_share:.1%} of pairs (a preference set that mostly "
                "prefers the longer answer teaches length)."
            )
    if manifest.empty_configs:
        names = ", ".join(f"`{c}`" for c in manifest.empty_configs)
        text += f"\n\nNo rows in this version (omitted): {names}."
    return text


def test_share(per_split: dict[str, int]) -> float:
    """Return the share of a config's rows in `test` (0 without rows)."""
    total = sum(per_split.values())
    return per_split.get(TEST_SPLIT, 0) / total if total else 0.0


def _funnel_section(manifest: ReleaseManifest) -> str:
    funnels = {c: s.funnel for c, s in manifest.configs.items() if s.funnel}
    if not funnels:
        return ""
    stages = list(next(iter(funnels.values())))
    rows = [[f"`{c}`", *(f.get(stage, "") for stage in stages)] for c, f in funnels.items()]
    return (
        "## Curation funnel\n\nRows left after each curation stage, per config: rows in, after "
        "removal by subject and scrubbing, after exact, near and semantic dedup, after "
        "decontamination against the evaluation sets, after the quality gate, published.\n\n"
        + _table(["config", *stages], rows)
    )


def _sources_section(manifest: ReleaseManifest) -> str:
    rows = [
        [f"`{config}`", split, source, rows]
        for config, summary in manifest.configs.items()
        for split in SPLITS
        for source, rows in summary.splits[split].sources.items()
    ]
    return "## Rows per config, split and source\n\n" + _table(
        ["config", "split", "source", "rows"], rows
    )


def _metadata_counts_section(manifest: ReleaseManifest) -> str:
    """Rows per value of each counted metadata key, per config and split (empty when none)."""
    rows = [
        [f"`{config}`", f"`{key}`", f"`{value}`", *(n.get(split, 0) for split in SPLITS)]
        for config, summary in manifest.configs.items()
        for key, values in _counted(summary).items()
        for value, n in values.items()
    ]
    if not rows:
        return ""
    return (
        "## Rows per metadata class\n\nPublished rows per value of the `metadata` keys the "
        "sources count (e.g. telemetry's `value_class`, the seed's five data classes), per "
        "split; rows without the key are not counted.\n\n"
        + _table(["config", "key", "value", *SPLITS], rows)
    )


def _counted(summary: ConfigSummary) -> dict[str, dict[str, dict[str, int]]]:
    """Return key -> value -> split -> rows of a config's counted metadata (sorted)."""
    counted: dict[str, dict[str, dict[str, int]]] = {}
    for split, split_summary in summary.splits.items():
        for key, values in split_summary.metadata_counts.items():
            for value, n in values.items():
                counted.setdefault(key, {}).setdefault(value, {})[split] = n
    return {key: dict(sorted(values.items())) for key, values in sorted(counted.items())}


def _scores_section(manifest: ReleaseManifest) -> str:
    scores = {config: summary.scores for config, summary in manifest.configs.items()}
    bins = len(next(iter(scores.values())).histogram) if scores else 0
    header = ["config", "rows", "mean", "min", "max"] + [
        f"[{i / bins:.1f}, {(i + 1) / bins:.1f}{']' if i == bins - 1 else ')'}" for i in range(bins)
    ]
    rows = [
        [f"`{config}`", s.rows, s.mean, s.min, s.max, *s.histogram] for config, s in scores.items()
    ]
    return "## Quality scores\n\nRows per `quality_score` bin.\n\n" + (_table(header, rows))


def _curation_section() -> str:
    return (
        "## Curation\n\n"
        "Before release every text field is scrubbed of API keys, tokens, private keys, JWTs, "
        "credentials in URLs, secrets in assignments, e-mail addresses, phone numbers, IPv4 and "
        "IPv6 addresses, payment card numbers (Luhn-checked), US SSNs, IBANs and the user names "
        "of home paths (replaced by typed placeholders such as `[REDACTED_EMAIL]`; loopback and "
        "documentation addresses, version numbers and published test card numbers are kept), "
        "and an independent scan (detect-secrets, phonenumbers, validators) must find nothing; "
        "rows with the same normalized content (lowercased, whitespace collapsed), near "
        "duplicates (MinHash LSH over word 3-gram shingles, Jaccard >= 0.8) and semantic "
        "duplicates (embedding cosine > 0.99) are deduplicated across all history, keeping the "
        "highest quality, then earliest, then smallest id; rows sharing a 13-word n-gram with a "
        "configured evaluation set are removed as contaminated, and rows below the config's "
        "quality gate are dropped. Rows are split by a stable SHA-256 hash of their group (task, "
        f"session, scenario, player) with {TEST_FRACTION:.0%} of groups in `test`; groups "
        "whose rows share a normalized prompt are one group. No group and no prompt spans "
        "splits, and a source record is in the same split in every config (a config whose "
        "groups all fall on one side has one split). "
        "Rules: `distill_assets/rules/curation.py`."
    )


def _redactions_section(manifest: ReleaseManifest) -> str:
    kinds = sorted({kind for s in manifest.configs.values() for kind in s.redactions})
    rows = [
        [f"`{config}`", *(s.redactions.get(kind, 0) for kind in kinds)]
        for config, s in manifest.configs.items()
    ]
    body = _table(["config", *(f"`[{k}]`" for k in kinds)], rows) if kinds else "None."
    return "## Redactions\n\nPlaceholders in the published rows, per config and type.\n\n" + body


def _withheld_section(manifest: ReleaseManifest) -> str:
    rows = [
        [f"`{config}`", f"`{row.id}`", f"`{row.column}`", row.kind]
        for config, summary in manifest.configs.items()
        for row in summary.withheld
    ]
    if not rows:
        return ""
    return (
        "## Withheld rows\n\nRows left out of this version because the independent scan found "
        "a secret or personal datum the scrubber missed (the value is never recorded).\n\n"
        + _table(["config", "row id", "column", "finding"], rows)
    )


def _rules_section(manifest: ReleaseManifest) -> str:
    rows = [[f"`{name}`", f"`{version}`"] for name, version in manifest.rules.items()]
    return "## Rules versions\n\n" + _table(["rules module", "version"], rows)


def _inputs_section(manifest: ReleaseManifest) -> str:
    rows = [
        [f"`{feed}`", len(days), partition_ranges(days) or "none"]
        for feed, days in manifest.created_from.items()
    ]
    return (
        "## Inputs\n\nFeed table partitions (ingest dates) present when this version was built.\n\n"
        + (_table(["feed table", "partitions", "dates"], rows))
    )


def _changes_section(manifest: ReleaseManifest) -> str:
    if manifest.previous_version is None:
        return "## Changes\n\nFirst version: nothing to compare with."
    rows = [
        [f"`{config}`", split, c.previous, c.current, f"{c.delta:+d}"]
        for config, splits in manifest.changes.items()
        for split, c in splits.items()
    ]
    text = f"## Changes since `{manifest.previous_version}`\n\n" + _table(
        ["config", "split", "previous rows", "rows", "delta"], rows
    )
    if manifest.rules_changed:
        rules = [
            [
                f"`{name}`",
                f"`{c.previous}`" if c.previous else "new",
                f"`{c.current}`" if c.current else "removed",
            ]
            for name, c in manifest.rules_changed.items()
        ]
        text += "\n\nRules changed:\n\n" + _table(["rules module", "previous", "now"], rules)
    else:
        text += "\n\nNo rules module changed."
    return text


def _files_section(manifest: ReleaseManifest) -> str:
    rows = [[f"`{f.path}`", f.rows, f.bytes, f"`{f.sha256}`"] for f in manifest.files]
    section = (
        "## Files\n\nEach config's split is stored as `data/<config>/<split>/<partition>-<NNNNN>"
        ".parquet`: the rows curated from one feed partition (ingest day), in shards numbered "
        "from 00000, read in path order. A version reuses the files of partitions whose rows did "
        "not change. Checksums are also in `release.json`.\n\n"
    ) + _table(["file", "rows", "bytes", "sha256"], rows)
    return section + _extra_files_table(manifest)


def _extra_files_table(manifest: ReleaseManifest) -> str:
    if not manifest.extra_files:
        return ""
    rows = [[f"`{f.path}`", f.bytes, f"`{f.sha256}`"] for f in manifest.extra_files]
    return (
        "\n\nBeside the data, sources add these files (not read by `load_dataset`; e.g. the "
        "escalation JSONL exports):\n\n" + _table(["file", "bytes", "sha256"], rows)
    )


def render_card(manifest: ReleaseManifest, card_notes: Mapping[str, Sequence[str]]) -> str:
    """Return the full `README.md` of a version, with the sources' notes of its configs."""
    meta = yaml.safe_dump(front_matter(manifest), sort_keys=False, allow_unicode=True)
    sections = [
        f"# {manifest.name}\n\nVersion `{manifest.version}`"
        + (
            f" (newest input partition {manifest.newest_partition})."
            if manifest.newest_partition
            else "."
        ),
        _load_section(manifest),
        _configs_section(manifest),
        *filter(None, [notes_section(manifest, card_notes)]),
        _sources_section(manifest),
        *filter(None, [_metadata_counts_section(manifest)]),
        _scores_section(manifest),
        _curation_section(),
        _funnel_section(manifest),
        _redactions_section(manifest),
        _withheld_section(manifest),
        _inputs_section(manifest),
        _rules_section(manifest),
        _changes_section(manifest),
        _files_section(manifest),
    ]
    return f"---\n{meta}---\n\n" + "\n\n".join(s for s in sections if s) + "\n"
