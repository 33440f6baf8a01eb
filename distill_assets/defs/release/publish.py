"""Publishing a built version: to the local hub folder (default) or the Hugging Face Hub.

`LocalPublisher` keeps `<hub root>/<name>/versions/<version>/` (immutable: an existing version is
never rewritten) and `<hub root>/<name>/latest`, a relative symlink to `versions/<version>`
replaced in one atomic rename (`folders.point_link`), so `latest` is never absent, not even for a
crash mid-publish. Copy or sync it with links followed (`cp -rL`, `rsync -L`).

`HubPublisher` uploads the same folder to a dataset repository's main branch and tags the commit
with the version, so `load_dataset(repo, config, revision=version)` pins it; an existing tag means
the version is already published and nothing is uploaded. It talks to the Hub through `HubApi`,
the subset of `huggingface_hub.HfApi` it needs (tests pass a fixture-backed fake).

`resources.PublisherResource` picks the target (the Hub, a local folder or object storage).
"""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.release.folders import point_link, sibling
from distill_assets.defs.release.layout import DATA_DIR, MANIFEST, link_or_copy

HUB_REPO_TYPE = "dataset"


@dataclass(frozen=True)
class PublishedRelease:
    """Where a version was published and how to load it."""

    version: str
    location: str
    load_path: str
    revision: str | None
    created: bool

    def load_snippet(self, config: str) -> str:
        """Return the `load_dataset(...)` call that loads `config` of this release."""
        pin = f', revision="{self.revision}"' if self.revision else ""
        return f'load_dataset("{self.load_path}", "{config}"{pin})'


class Publisher(ABC):
    """A place dataset versions are published to."""

    @abstractmethod
    def version_manifest(self, version: str | None) -> ReleaseManifest | None:
        """Return the manifest of a published version (None: latest), or None if there is none."""

    def latest_manifest(self) -> ReleaseManifest | None:
        """Return the manifest of the latest published version, if any."""
        return self.version_manifest(None)

    def version_folder(self, version: str) -> Path | None:
        """Return a local folder holding a published version's files (None: none is local).

        The release links or copies unchanged data files from it instead of writing them.
        """
        return None

    @abstractmethod
    def publish(self, folder: Path, version: str) -> PublishedRelease:
        """Publish the repository built in `folder` as `version` and make it the latest."""


class LocalPublisher(Publisher):
    """Versions under `<hub root>/<name>/versions/`; `<name>/latest` links to the latest."""

    def __init__(self, hub_root: str | Path, name: str) -> None:
        self.repo = Path(hub_root) / name
        self.versions = self.repo / "versions"
        self.latest = self.repo / "latest"

    def version_manifest(self, version: str | None) -> ReleaseManifest | None:
        """Read `release.json` of a version folder (or of `latest`)."""
        path = (self.versions / version if version else self.latest) / MANIFEST
        if not path.is_file():
            return None
        return ReleaseManifest.model_validate_json(path.read_text(encoding="utf-8"))

    def version_folder(self, version: str) -> Path | None:
        """Return `versions/<version>` if that version is published."""
        folder = self.versions / version
        return folder if (folder / MANIFEST).is_file() else None

    def publish(self, folder: Path, version: str) -> PublishedRelease:
        """Copy `folder` to `versions/<version>` unless it exists, then point `latest` at it.

        Files are hard-linked where the filesystem allows (published files are never modified in
        place), so unchanged data files cost no space or copy time.
        """
        target = self.versions / version
        created = not target.exists()
        if created:
            self.versions.mkdir(parents=True, exist_ok=True)
            tmp = sibling(target, "tmp")
            try:
                shutil.copytree(folder, tmp, copy_function=link_or_copy)
                os.replace(tmp, target)
            except OSError:
                # Another run published the same version (same content) first: keep it.
                if not (target / MANIFEST).is_file():
                    raise
                created = False
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        point_link(self.latest, f"{self.versions.name}/{version}")
        return PublishedRelease(
            version=version,
            location=str(target),
            load_path=str(self.latest),
            revision=None,
            created=created,
        )


class HubApi(Protocol):
    """The part of `huggingface_hub.HfApi` the Hub publisher uses."""

    def create_repo(
        self, repo_id: str, *, repo_type: str | None, private: bool | None, exist_ok: bool
    ) -> Any:
        """Create the repository (no error if it exists)."""

    def list_repo_refs(self, repo_id: str, *, repo_type: str | None) -> Any:
        """Return the repository's refs; `.tags` holds objects with a `.name`."""

    def upload_folder(
        self,
        *,
        repo_id: str,
        folder_path: str | Path,
        repo_type: str | None,
        commit_message: str | None,
        delete_patterns: list[str] | str | None,
    ) -> Any:
        """Upload a folder as one commit on main; the result has the commit's `.oid`."""

    def create_tag(
        self,
        repo_id: str,
        *,
        tag: str,
        tag_message: str | None,
        revision: str | None,
        repo_type: str | None,
    ) -> None:
        """Tag a commit."""

    def hf_hub_download(
        self, repo_id: str, filename: str, *, repo_type: str | None, revision: str | None
    ) -> str:
        """Download one file of a revision; return its local path."""


def _missing_errors() -> tuple[type[Exception], ...]:
    from huggingface_hub.errors import (
        EntryNotFoundError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    return (
        EntryNotFoundError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )


class HubPublisher(Publisher):
    """A Hugging Face Hub dataset repository; versions are tags on main."""

    def __init__(self, repo_id: str, api: HubApi, private: bool = True) -> None:
        self.repo_id = repo_id
        self.api = api
        self.private = private

    def version_manifest(self, version: str | None) -> ReleaseManifest | None:
        """Download `release.json` at tag `version` (None: main), or None if absent."""
        try:
            path = self.api.hf_hub_download(
                self.repo_id, MANIFEST, repo_type=HUB_REPO_TYPE, revision=version
            )
        except _missing_errors():
            return None
        return ReleaseManifest.model_validate_json(Path(path).read_text(encoding="utf-8"))

    def publish(self, folder: Path, version: str) -> PublishedRelease:
        """Upload `folder` to main (replacing old data files) and tag it, unless the tag exists."""
        self.api.create_repo(
            self.repo_id, repo_type=HUB_REPO_TYPE, private=self.private, exist_ok=True
        )
        tags = {
            tag.name for tag in self.api.list_repo_refs(self.repo_id, repo_type=HUB_REPO_TYPE).tags
        }
        created = version not in tags
        if created:
            commit = self.api.upload_folder(
                repo_id=self.repo_id,
                folder_path=folder,
                repo_type=HUB_REPO_TYPE,
                commit_message=f"distill release {version}",
                delete_patterns=[f"{DATA_DIR}/**"],
            )
            self.api.create_tag(
                self.repo_id,
                tag=version,
                tag_message=f"distill release {version}",
                revision=commit.oid,
                repo_type=HUB_REPO_TYPE,
            )
        return PublishedRelease(
            version=version,
            location=f"https://huggingface.co/datasets/{self.repo_id}/tree/{version}",
            load_path=self.repo_id,
            revision=version,
            created=created,
        )
