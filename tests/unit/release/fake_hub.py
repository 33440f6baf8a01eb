"""A fixture-backed stand-in for `huggingface_hub.HfApi`: repositories are folders on disk.

Each commit is a full snapshot folder under `<root>/<repo>/commits/<n>/`; `main` is the newest
commit and tags point at commits, like the Hub. Missing repositories, revisions and files raise
the same exception types as the real client.
"""

from __future__ import annotations

import fnmatch
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
from huggingface_hub.errors import (
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import CommitInfo, GitRefInfo, GitRefs


def _response(url: str) -> httpx2.Response:
    return httpx2.Response(404, request=httpx2.Request("GET", url))


@dataclass
class FakeRepo:
    commits: list[str] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    private: bool | None = None


class FakeHubApi:
    """Records every call; stores uploads under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repos: dict[str, FakeRepo] = {}
        self.calls: list[str] = []

    def _repo(self, repo_id: str) -> FakeRepo:
        if repo_id not in self.repos:
            raise RepositoryNotFoundError(repo_id, response=_response(repo_id))
        return self.repos[repo_id]

    def commit_dir(self, repo_id: str, oid: str) -> Path:
        return self.root / repo_id / "commits" / oid

    def create_repo(self, repo_id, *, repo_type=None, private=None, exist_ok=False):
        self.calls.append(f"create_repo {repo_id} {repo_type} private={private}")
        assert repo_type == "dataset"
        self.repos.setdefault(repo_id, FakeRepo(private=private))

    def list_repo_refs(self, repo_id, *, repo_type=None):
        repo = self._repo(repo_id)
        tags = [
            GitRefInfo(name=t, ref=f"refs/tags/{t}", target_commit=c) for t, c in repo.tags.items()
        ]
        return GitRefs(branches=[], converts=[], tags=tags)

    def upload_folder(
        self, *, repo_id, folder_path, repo_type=None, commit_message=None, delete_patterns=None
    ):
        repo = self._repo(repo_id)
        oid = f"{len(repo.commits) + 1:040d}"
        target = self.commit_dir(repo_id, oid)
        if repo.commits:
            shutil.copytree(self.commit_dir(repo_id, repo.commits[-1]), target)
            for path in sorted(p for p in target.rglob("*") if p.is_file()):
                rel = path.relative_to(target).as_posix()
                if any(fnmatch.fnmatch(rel, pattern) for pattern in delete_patterns or []):
                    path.unlink()
        shutil.copytree(folder_path, target, dirs_exist_ok=True)
        repo.commits.append(oid)
        self.calls.append(f"upload_folder {repo_id} {commit_message}")
        return CommitInfo(
            commit_url=f"https://huggingface.co/datasets/{repo_id}/commit/{oid}",
            commit_message=commit_message,
            commit_description="",
            oid=oid,
        )

    def create_tag(self, repo_id, *, tag, tag_message=None, revision=None, repo_type=None):
        repo = self._repo(repo_id)
        assert revision in repo.commits
        repo.tags[tag] = revision
        self.calls.append(f"create_tag {repo_id} {tag} {revision}")

    def hf_hub_download(self, repo_id, filename, *, repo_type=None, revision=None):
        repo = self._repo(repo_id)
        oid = repo.tags.get(revision) if revision else (repo.commits[-1] if repo.commits else None)
        if oid is None:
            raise RevisionNotFoundError(str(revision), response=_response(repo_id))
        path = self.commit_dir(repo_id, oid) / filename
        if not path.is_file():
            raise RemoteEntryNotFoundError(filename, response=_response(filename))
        return str(path)
