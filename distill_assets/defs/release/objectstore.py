"""Publishing to a hub root on object storage (`DISTILL_HUB_ROOT=s3://bucket/hub`).

`<hub root>/<name>/versions/<version>/` (immutable) as for `LocalPublisher`, written through
fsspec, and `<hub root>/<name>/LATEST`, a pointer object holding the latest version's name.
Object stores have no folder rename, so a version is uploaded under a temporary prefix and copied
into place key by key; uploads and copies run on a bounded pool of threads (`workers`, the
publisher resource's `upload_workers`), and `release.json` (the manifest a reader checks first)
is copied alone after every other file is in place, never if one of them failed; a version whose
manifest exists is never rewritten. Only once the
version is complete does the publish overwrite `LATEST`, in one PUT, which an object store makes
atomic: a reader that resolves `LATEST` and then reads `versions/<version>/` sees the old
complete version or the new one at every instant, also when a publish crashes between any two of
its steps. A `latest/` folder copied key by key by releases before the pointer is followed while
there is no `LATEST`, and removed by the first publish that writes one. Data files with the same
path and checksum as in the latest version are not uploaded but copied server-side from that
version, so a night uploads only the shards it rewrote.

`datasets.load_dataset` cannot open a remote folder as a repository, so `load_snippet` reads the
config's Parquet files of the version with the `parquet` builder (credentials and endpoint come
from the environment, as for the lake).
"""

from __future__ import annotations

from pathlib import Path

from upath import UPath

from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.release.folders import UPLOAD_WORKERS, upload_folder
from distill_assets.defs.release.layout import MANIFEST, split_pattern
from distill_assets.defs.release.publish import PublishedRelease, Publisher
from distill_assets.lib.lake import is_remote
from distill_assets.rules.curation import SPLITS

# the pointer object naming the latest version (its whole content is the version's name)
POINTER = "LATEST"


def load_hint(folder: UPath, config: str) -> str:
    """Return the `load_dataset(...)` call that loads `config` of a published repository folder."""
    if not is_remote(folder):
        return f'load_dataset("{folder.path}", "{config}")'
    splits = ", ".join(f'"{split}": "{folder}/{split_pattern(config, split)}"' for split in SPLITS)
    data_files = f"{{{splits}}}"
    return f'load_dataset("parquet", data_files={data_files})'


def latest_folder(repo: UPath) -> UPath:
    """Return the folder of a hub repository's latest version, as readers resolve it.

    Local: the `latest` link. Object storage: `versions/<version>` of the version `LATEST` names
    (the `latest/` folder of releases before the pointer while there is none).
    """
    pointer = repo / POINTER
    if is_remote(repo) and pointer.exists():
        return repo / "versions" / pointer.read_text(encoding="utf-8").strip()
    return repo / "latest"


class RemoteRelease(PublishedRelease):
    """A release on object storage: loaded by its Parquet files, not as a repository folder."""

    def load_snippet(self, config: str) -> str:
        """Return a `load_dataset("parquet", data_files=...)` call for `config`."""
        return load_hint(UPath(self.load_path), config)


class ObjectStorePublisher(Publisher):
    """Versions under `<hub root>/<name>/versions/` on object storage; `LATEST` names the latest."""

    def __init__(self, hub_root: str, name: str, workers: int = UPLOAD_WORKERS) -> None:
        self.workers = workers
        self.repo = UPath(hub_root) / name
        self.versions = self.repo / "versions"
        self.pointer = self.repo / POINTER
        # the key-by-key copy of the latest version written before the pointer (read, then removed)
        self.legacy_latest = self.repo / "latest"

    def latest_version(self) -> str | None:
        """Return the version `LATEST` names (None: no pointer yet)."""
        if not self.pointer.exists():
            return None
        return self.pointer.read_text(encoding="utf-8").strip() or None

    def version_manifest(self, version: str | None) -> ReleaseManifest | None:
        """Read `release.json` of a version folder (None: the one `LATEST` names), if any."""
        if version is None:
            version = self.latest_version()
        folder = self.versions / version if version else self.legacy_latest
        path = folder / MANIFEST
        if not path.exists():
            return None
        return ReleaseManifest.model_validate_json(path.read_text(encoding="utf-8"))

    def _unchanged(self, folder: Path) -> dict[str, str]:
        """Return the data files of `folder` the latest version holds with the same checksum."""
        latest = self.latest_manifest()
        if latest is None:
            return {}
        previous = {f.path: f.sha256 for f in latest.files}
        source = self.versions / latest.version
        built = ReleaseManifest.model_validate_json((folder / MANIFEST).read_text(encoding="utf-8"))
        return {
            f.path: f"{source.path}/{f.path}"
            for f in built.files
            if previous.get(f.path) == f.sha256 and (source / f.path).exists()
        }

    def publish(self, folder: Path, version: str) -> PublishedRelease:
        """Upload `folder` to `versions/<version>` unless it exists, then point `LATEST` at it."""
        target = self.versions / version
        created = not (target / MANIFEST).exists()
        if created:
            upload_folder(
                folder, target, self._unchanged(folder), last=(MANIFEST,), workers=self.workers
            )
        fs = self.repo.fs
        if self.latest_version() != version:
            # one PUT of a few bytes: atomic on an object store (the reader's only switch)
            fs.pipe_file(self.pointer.path, version.encode("utf-8"))
        if self.legacy_latest.exists():
            fs.rm(self.legacy_latest.path, recursive=True)
        return RemoteRelease(
            version=version,
            location=str(target),
            load_path=str(target),
            revision=None,
            created=created,
        )
