"""Publishing a release to a real S3 API (moto's server on 127.0.0.1) with parallel uploads.

s3fs runs its requests on one event loop that the upload threads share: a publish uploads
several files at once, and a failed upload leaves `LATEST` on the previous version.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest
from upath import UPath

from distill_assets.defs.release.build import build_release
from distill_assets.defs.release.objectstore import ObjectStorePublisher
from tests.unit.release.test_build import inputs, no_previous, tree

pytestmark = pytest.mark.integration

BUCKET = "distill-publish"


def test_parallel_publish_to_s3_and_a_failed_upload_keeps_latest(
    s3_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in s3_env.items():
        monkeypatch.setenv(name, value)
    first, second = tmp_path / "build1", tmp_path / "build2"
    manifest = build_release(inputs(), first, no_previous)
    manifest2 = build_release(inputs(sft=40), second, no_previous)
    root = f"s3://{BUCKET}/hub"
    fs = UPath(root).fs
    fs.mkdir(BUCKET)
    ObjectStorePublisher(root, "distill", workers=8).publish(first, manifest.version)
    repo = f"{BUCKET}/hub/distill"
    assert fs.cat_file(f"{repo}/LATEST").decode() == manifest.version

    put_file = fs.put_file
    together = threading.Barrier(2, timeout=60)
    started = itertools.count()
    failing = "data/sft/train/2026-11-19-00000.parquet"

    def put(local: str, remote: str, **kwargs: object) -> None:
        # the first two uploads wait for each other: only a parallel publish gets past here
        if next(started) < 2:
            together.wait()
        if remote.endswith(failing):
            raise OSError(f"upload of {failing} failed")
        put_file(local, remote, **kwargs)

    monkeypatch.setattr(fs, "put_file", put)
    with pytest.raises(OSError, match=r"upload of \S+ failed"):
        ObjectStorePublisher(root, "distill", workers=8).publish(second, manifest2.version)
    fs.invalidate_cache()
    assert fs.cat_file(f"{repo}/LATEST").decode() == manifest.version
    assert not fs.exists(f"{repo}/versions/{manifest2.version}/release.json")

    monkeypatch.setattr(fs, "put_file", put_file)
    ObjectStorePublisher(root, "distill", workers=8).publish(second, manifest2.version)
    fs.invalidate_cache()
    assert fs.cat_file(f"{repo}/LATEST").decode() == manifest2.version
    prefix = f"{repo}/versions/{manifest2.version}/"
    assert sorted(p[len(prefix) :] for p in fs.find(prefix)) == tree(second)
    for name in tree(second):
        assert fs.cat_file(prefix + name) == (second / name).read_bytes(), name
