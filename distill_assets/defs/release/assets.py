"""Release assets: build the next dataset version, check it, publish it.

`release/candidate` builds the Hugging Face dataset repository (data files, card, manifest) from
every curated table into the lake; blocking asset checks (`checks.py`) inspect it; only then does
`release/dataset` publish it (see `publish.py`). Because the checks are blocking and the publish
step is a separate downstream asset, a failing check stops the run before anything is published.
Version naming and when a new version is made: `build.py`.
"""

import dagster as dg

from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.partitions import last_partition_date, skipped_raw_folders
from distill_assets.defs.release.build import PreviousShards, build_release, previous_manifest
from distill_assets.defs.release.candidate import candidate_dir, load_release_inputs, read_manifest
from distill_assets.defs.release.extras import ReleaseContributions
from distill_assets.defs.release.folders import local_folder, staged_folder
from distill_assets.defs.release.publish import PublishedRelease
from distill_assets.defs.release.resources import PublisherResource
from distill_assets.defs.release.withhold import (
    find_withheld,
    record_withheld,
    withheld_lines,
    withhold_inputs,
)
from distill_assets.defs.resources import DistillSettings
from distill_assets.lib.cleanup import remove_orphans

GROUP = "release"
CANDIDATE_KEY = dg.AssetKey([GROUP, "candidate"])
DATASET_KEY = dg.AssetKey([GROUP, "dataset"])
CURATED_KEYS = [dg.AssetKey(["curation", config]) for config in CONFIG_FEEDS]
DUPLICATE_KEYS = [dg.AssetKey(["curation", f"{config}_duplicates"]) for config in CONFIG_FEEDS]


def counts_table(manifest: ReleaseManifest) -> dg.MetadataValue:
    """Render rows per config and split as Markdown."""
    lines = [
        f"| {config} | {split} | {rows} |"
        for config in manifest.configs
        for split, rows in manifest.split_rows(config).items()
    ]
    return dg.MetadataValue.md("| config | split | rows |\n|---|---|---|\n" + "\n".join(lines))


def release_metadata(manifest: ReleaseManifest) -> dict[str, dg.MetadataValue]:
    """Return the metadata both release assets report about a version."""
    return {
        "version": dg.MetadataValue.text(manifest.version),
        "previous_version": dg.MetadataValue.text(manifest.previous_version or ""),
        "newest_partition": dg.MetadataValue.text(manifest.newest_partition or ""),
        "configs": dg.MetadataValue.json(list(manifest.configs)),
        "empty_configs": dg.MetadataValue.json(manifest.empty_configs),
        "rows": dg.MetadataValue.int(sum(f.rows for f in manifest.files)),
        "counts": counts_table(manifest),
        "rules": dg.MetadataValue.json(manifest.rules),
    }


@dg.asset(
    key=CANDIDATE_KEY,
    group_name=GROUP,
    deps=[*CURATED_KEYS, *DUPLICATE_KEYS],
    kinds={"polars", "parquet"},
)
def candidate(
    context: dg.AssetExecutionContext,
    settings: DistillSettings,
    publisher: PublisherResource,
    release_contributions: dg.ResourceParam[ReleaseContributions],
) -> dg.MaterializeResult:
    """Stage the next dataset version in the lake at `release/candidate/`.

    One folder laid out as a Hugging Face dataset repository
    (`data/<config>/<split>/<partition>-NNNNN.parquet`, `README.md` dataset card, `release.json`
    manifest with checksums) built from every curated table's partition files; data files whose
    curated partition did not change are linked or copied from the latest published version when
    the publisher keeps it locally (`shards_reused`). Rows the independent scan flags in the
    curated text are left out and listed (`withhold.py`, `withheld_rows`). Blocking checks
    inspect it before `release/dataset` publishes it. Its metadata also lists the raw folders
    not ingested because their name is not a valid or complete date (`skipped_raw_folders`). The
    source rooms' extra files and card notes come from the `release_contributions` resource
    (`definitions.py`).
    """
    cfg = settings.resolved()
    target = publisher.publisher(cfg)
    latest = target.latest_manifest()
    shards = PreviousShards(latest, target.version_folder(latest.version) if latest else None)
    inputs = load_release_inputs(cfg.lake_root, cfg.dataset_name)
    withheld = find_withheld(cfg.lake_root, inputs.curated)
    folder = candidate_dir(cfg.lake_root)
    with staged_folder(folder) as staging:
        manifest = build_release(
            withhold_inputs(inputs, withheld),
            staging,
            previous_for=lambda version: previous_manifest(
                latest, version, target.version_manifest
            ),
            previous_shards=shards,
            contributions=release_contributions,
        )
        manifest = record_withheld(staging, manifest, withheld, release_contributions.card_notes)
    context.log.info(f"staged {manifest.version} at {folder}")
    for line in withheld_lines(withheld):
        context.log.warning(line)
    written = sorted({f.path for f in manifest.files} - set(shards.reused))
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(folder)),
            "shards_written": dg.MetadataValue.json(written),
            "shards_reused": dg.MetadataValue.int(len(shards.reused)),
            "withheld_rows": dg.MetadataValue.int(withheld.height),
            "skipped_raw_folders": dg.MetadataValue.json(
                skipped_raw_folders(cfg.raw_root, last_partition_date(cfg))
            ),
            **release_metadata(manifest),
        }
    )


@dg.asset(
    key=DATASET_KEY,
    group_name=GROUP,
    deps=[CANDIDATE_KEY],
    kinds={"huggingface"},
)
def dataset(
    context: dg.AssetExecutionContext, settings: DistillSettings, publisher: PublisherResource
) -> dg.MaterializeResult:
    """Publish the checked candidate as the dataset's new version.

    Copied to `<hub>/<name>/versions/<version>/` (immutable) and `<hub>/<name>/latest/`, or
    uploaded to the Hugging Face Hub and tagged with the version when a repo id and token are
    configured. Load it with `datasets.load_dataset(<path or repo>, "<config>")`. Orphaned
    temporary files of killed writes in the hub and lake are removed first (`lib/cleanup.py`).
    """
    cfg = settings.resolved()
    for orphan in remove_orphans(cfg.hub_root) + remove_orphans(cfg.lake_root):
        context.log.info(f"removed orphaned temporary {orphan}")
    folder = candidate_dir(cfg.lake_root)
    manifest = read_manifest(folder)
    with local_folder(folder) as local:
        published = publisher.publisher(cfg).publish(local, manifest.version)
    context.log.info(f"published {published.version} at {published.location}")
    return dg.MaterializeResult(metadata=published_metadata(published, manifest))


def published_metadata(
    published: PublishedRelease, manifest: ReleaseManifest
) -> dict[str, dg.MetadataValue]:
    """Return the materialization metadata of a publish: where, which version, how to load."""
    snippets = [published.load_snippet(config) for config in manifest.configs]
    return {
        "path": dg.MetadataValue.text(published.load_path),
        "version_location": dg.MetadataValue.text(published.location),
        "new_version": dg.MetadataValue.bool(published.created),
        "load_dataset": dg.MetadataValue.md(
            "```python\nfrom datasets import load_dataset\n\n"
            + "\n".join(f"ds = {s}" for s in snippets)
            + "\n```"
        ),
        **release_metadata(manifest),
    }
