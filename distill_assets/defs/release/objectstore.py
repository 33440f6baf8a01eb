"""Publishing to a hub root on object storage (`DISTILL_HUB_ROOT=s3://bucket/hub`).

The same layout as `LocalPublisher`: `<hub root>/<name>/versions/<version>/` (immutable) and
`<hub root>/<name>/latest/`, written through fsspec. Object stores have no folder rename, so a
folder is uploaded under a temporary prefix and copied into place key by key; the keys are copied
in sorted order, so `release.json` (the manifest a reader checks first) lands after the data files.
A version whose manifest exists is never rewritten. Data files with the same path and checksum as
in the latest version are not uploaded but copied server-side from that version, and `latest/` is
copied server-side from the new version, so a night uploads only the shards it rewrote.

`datasets.load_dataset` cannot open a remote folder as a repository, so `load_snippet` reads the
config's Parquet files with the `parquet` builder (credentials and endpoint come from the
environment, as for the lake).
"""

from __future__ import annotations

from pathlib import Path

from upath import UPath

from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.release.folders import upload_folder
from distill_assets.defs.release.layout import MANIFEST, split_pattern
from distill_assets.defs.release.publish import PublishedRelease, Publisher
from distill_assets.lib.lake import is_remote
from distill_assets.rules.curation import SPLITS


def load_hint(folder: UPath, config: str) -> str:
    """Return the `load_dataset(...)` call that loads `config` of a published repository folder."""
    if not is_remote(folder):
        return f'load_dataset("{folder.path}", "{config}")'
    splits = ", ".join(f'"{split}": "{folder}/{split_pattern(config, split)}"' for split in SPLITS)
    data_files = f"{{{splits}}}"
    return f'load_dataset("parquet", data_files={data_files})'


class RemoteRelease(PublishedRelease):
    """A release on object storage: loaded by its Parquet files, not as a repository folder."""

    def load_snippet(self, config: str) -> str:
        """Return a `load_dataset("parquet", data_files=...)` call for `config`."""
        return load_hint(UPath(self.load_path), config)


class ObjectStorePublisher(Publisher):
    """Versions under `<hub root>/<name>/versions/` on object storage, the latest in `latest/`."""

    def __init__(self, hub_root: str, name: str) -> None:
        self.repo = UPath(hub_root) / name
        self.versions = self.repo / "versions"
        self.latest = self.repo / "latest"

    def version_manifest(self, version: str | None) -> ReleaseManifest | None:
        """Read `release.json` of a version folder (or of `latest`), if there is one."""
        path = (self.versions / version if version else self.latest) / MANIFEST
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
        """Upload `folder` to `versions/<version>` unless it exists, then make it `latest`."""
        target = self.versions / version
        created = not (target / MANIFEST).exists()
        if created:
            upload_folder(folder, target, self._unchanged(folder))
        latest = self.latest / MANIFEST
        current = latest.read_bytes() if latest.exists() else None
        if current != (folder / MANIFEST).read_bytes():
            names = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
            upload_folder(folder, self.latest, {n: f"{target.path}/{n}" for n in names})
        return RemoteRelease(
            version=version,
            location=str(target),
            load_path=str(self.latest),
            revision=None,
            created=created,
        )
