import itertools
import os
import threading

import pytest
from upath import UPath

from distill_assets.defs.release.build import build_release
from distill_assets.defs.release.objectstore import ObjectStorePublisher
from distill_assets.defs.release.publish import HubPublisher, LocalPublisher
from distill_assets.defs.release.resources import PublisherResource
from distill_assets.lib.settings import Settings
from distill_assets.lib.startup import SettingsError
from tests.unit.release.fake_hub import FakeHubApi
from tests.unit.release.test_build import inputs, no_previous, tree


@pytest.fixture
def builds(tmp_path):
    first = tmp_path / "build1"
    second = tmp_path / "build2"
    return (
        (first, build_release(inputs(), first, no_previous)),
        (second, build_release(inputs(sft=40), second, no_previous)),
    )


def snapshot(folder):
    return {name: (folder / name).read_bytes() for name in tree(folder)}


def test_local_publish_creates_an_immutable_version_and_a_latest_link(tmp_path, builds):
    (folder, manifest), (folder2, manifest2) = builds
    publisher = LocalPublisher(tmp_path / "hub", "distill")
    assert publisher.latest_manifest() is None

    published = publisher.publish(folder, manifest.version)
    version_dir = tmp_path / "hub" / "distill" / "versions" / manifest.version
    latest = tmp_path / "hub" / "distill" / "latest"
    assert (published.created, published.location, published.load_path) == (
        True,
        str(version_dir),
        str(latest),
    )
    assert published.load_snippet("sft") == f'load_dataset("{latest}", "sft")'
    assert os.readlink(latest) == f"versions/{manifest.version}" and latest.is_dir()
    assert snapshot(version_dir) == snapshot(folder) == snapshot(latest)
    assert publisher.latest_manifest() == manifest

    again = publisher.publish(folder, manifest.version)
    assert again.created is False
    assert snapshot(latest) == snapshot(folder)

    publisher.publish(folder2, manifest2.version)
    assert sorted(p.name for p in (tmp_path / "hub" / "distill" / "versions").iterdir()) == sorted(
        [manifest.version, manifest2.version]
    )
    assert snapshot(latest) == snapshot(folder2)
    assert snapshot(version_dir) == snapshot(folder)
    assert publisher.version_manifest(manifest.version) == manifest
    assert publisher.version_manifest("v19990101-00000000") is None
    assert sorted(p.name for p in (tmp_path / "hub" / "distill").iterdir()) == [
        "latest",
        "versions",
    ]


def test_an_existing_version_is_never_rewritten(tmp_path, builds):
    (folder, manifest), (folder2, _) = builds
    publisher = LocalPublisher(tmp_path / "hub", "distill")
    publisher.publish(folder, manifest.version)
    result = publisher.publish(folder2, manifest.version)
    assert result.created is False
    assert snapshot(tmp_path / "hub" / "distill" / "versions" / manifest.version) == snapshot(
        folder
    )


def test_hub_publish_uploads_the_folder_and_tags_the_commit_once(tmp_path, builds):
    (folder, manifest), (folder2, manifest2) = builds
    api = FakeHubApi(tmp_path / "fake_hub")
    publisher = HubPublisher("org/distill", api)
    assert publisher.latest_manifest() is None

    published = publisher.publish(folder, manifest.version)
    assert published.created is True
    assert (
        published.load_snippet("dpo")
        == f'load_dataset("org/distill", "dpo", revision="{manifest.version}")'
    )
    assert (
        published.location == f"https://huggingface.co/datasets/org/distill/tree/{manifest.version}"
    )
    oid = api.repos["org/distill"].tags[manifest.version]
    assert snapshot(api.commit_dir("org/distill", oid)) == snapshot(folder)
    assert publisher.latest_manifest() == manifest
    assert api.repos["org/distill"].private is True

    assert publisher.publish(folder, manifest.version).created is False
    assert len(api.repos["org/distill"].commits) == 1

    publisher.publish(folder2, manifest2.version)
    assert publisher.latest_manifest() == manifest2
    assert publisher.version_manifest(manifest.version) == manifest
    assert publisher.version_manifest("v19990101-00000000") is None
    newest = api.commit_dir("org/distill", api.repos["org/distill"].tags[manifest2.version])
    assert snapshot(newest) == snapshot(folder2)  # stale data files of the old version deleted
    assert api.calls == [
        "create_repo org/distill dataset private=True",
        "upload_folder org/distill distill release " + manifest.version,
        f"create_tag org/distill {manifest.version} {oid}",
        "create_repo org/distill dataset private=True",
        "create_repo org/distill dataset private=True",
        "upload_folder org/distill distill release " + manifest2.version,
        f"create_tag org/distill {manifest2.version} {'2'.zfill(40)}",
    ]


def test_publisher_resource_uses_the_hub_only_with_repo_and_token(tmp_path, monkeypatch):
    monkeypatch.delenv("DISTILL_HUB_REPO_ID", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    settings = Settings.resolve(hub_root=str(tmp_path / "hub"), dataset_name="mine")
    local = PublisherResource().publisher(settings)
    assert isinstance(local, LocalPublisher)
    assert local.latest == tmp_path / "hub" / "mine" / "latest"
    with pytest.raises(SettingsError, match="HF_TOKEN is not: refusing to publish locally"):
        PublisherResource(hub_repo_id="org/x").publisher(settings)
    monkeypatch.setenv("DISTILL_HUB_REPO_ID", "org/x")
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    hub = PublisherResource().publisher(settings)
    assert isinstance(hub, HubPublisher)
    assert hub.repo_id == "org/x"


def test_object_store_publish_uploads_only_files_the_latest_version_lacks(tmp_path, builds):
    (folder, manifest), (folder2, manifest2) = builds
    root = f"memory://{tmp_path.name}/hub"
    publisher = ObjectStorePublisher(root, "distill")
    fs = UPath(root).fs
    uploaded: list[str] = []
    put_file = fs.put_file

    def recording_put(local, remote, **kwargs):
        uploaded.append(remote.split(".tmp/", 1)[1])
        return put_file(local, remote, **kwargs)

    fs.put_file = recording_put
    try:
        publisher.publish(folder, manifest.version)
        assert uploaded == tree(folder)
        uploaded.clear()
        publisher.publish(folder2, manifest2.version)
    finally:
        fs.put_file = put_file
    # dpo's rows did not change: its files are copied server-side from the first version
    assert [name for name in tree(folder2) if name not in uploaded] == [
        "data/dpo/test/2026-11-19-00000.parquet",
        "data/dpo/train/2026-11-19-00000.parquet",
    ]
    published = UPath(root) / "distill" / "versions" / manifest2.version
    assert {n: (published / n).read_bytes() for n in tree(folder2)} == snapshot(folder2)
    assert (UPath(root) / "distill" / "LATEST").read_text() == manifest2.version
    assert publisher.latest_manifest() == manifest2


class Crash(Exception):
    """A publish killed between two of its steps."""


# every call through which a publish writes to or deletes from the object store
STORE_WRITES = ("put_file", "cp_file", "pipe_file", "rm_file", "rm")


def crash_at(fs, monkeypatch, step):
    """Make the `step`-th store write (counting from 1) raise `Crash` instead of running.

    Writes run on several threads: `next` of one shared counter numbers each exactly once.
    """
    counter = itertools.count(1)
    for name in STORE_WRITES:
        original = getattr(fs, name)

        def write(*args, _original=original, **kwargs):
            if next(counter) == step:
                raise Crash(step)
            return _original(*args, **kwargs)

        monkeypatch.setattr(fs, name, write)


def reader_sees(root):
    """Return the version a fresh reader resolves and whether all its listed files are whole."""
    reader = ObjectStorePublisher(root, "distill")
    manifest = reader.latest_manifest()
    if manifest is None:
        return None, False
    folder = reader.versions / manifest.version
    whole = all((folder / f.path).exists() for f in manifest.files)
    return manifest.version, whole


def test_object_store_latest_is_the_old_or_the_new_version_at_every_crash(
    tmp_path, builds, monkeypatch
):
    (folder, manifest), (folder2, manifest2) = builds
    step, crashes = 0, 0
    while True:
        step += 1
        root = f"memory://{tmp_path.name}-crash-{step}/hub"
        ObjectStorePublisher(root, "distill").publish(folder, manifest.version)
        # a hub written before the pointer also had a key-by-key `latest/` copy: gone after
        fs = UPath(root).fs
        with monkeypatch.context() as patched:
            crash_at(fs, patched, step)
            try:
                ObjectStorePublisher(root, "distill").publish(folder2, manifest2.version)
            except Crash:
                crashes += 1
                version, whole = reader_sees(root)
                assert version in (manifest.version, manifest2.version), step
                assert whole, step
            else:
                break
        # the next publish completes what the crashed one left
        ObjectStorePublisher(root, "distill").publish(folder2, manifest2.version)
        assert reader_sees(root) == (manifest2.version, True)
    assert crashes == step - 1 > len(tree(folder2))
    assert reader_sees(root) == (manifest2.version, True)


def test_object_store_follows_then_removes_a_latest_folder_of_older_releases(tmp_path, builds):
    (folder, manifest), (folder2, manifest2) = builds
    root = f"memory://{tmp_path.name}-legacy/hub"
    publisher = ObjectStorePublisher(root, "distill")
    publisher.publish(folder, manifest.version)
    fs = UPath(root).fs
    repo = UPath(root) / "distill"
    # the layout of releases before the pointer: a `latest/` copy and no `LATEST`
    fs.rm((repo / "LATEST").path)
    fs.put(str(folder), (repo / "latest").path, recursive=True)
    assert publisher.latest_version() is None
    assert publisher.latest_manifest() == manifest
    publisher.publish(folder2, manifest2.version)
    assert publisher.latest_manifest() == manifest2
    assert not (repo / "latest").exists()
    assert sorted(p.name for p in repo.iterdir()) == ["LATEST", "versions"]


def test_object_store_uploads_in_parallel_and_a_failed_upload_leaves_latest_as_it_was(
    tmp_path, builds, monkeypatch
):
    (folder, manifest), (folder2, manifest2) = builds
    root = f"memory://{tmp_path.name}-parallel/hub"
    ObjectStorePublisher(root, "distill").publish(folder, manifest.version)
    fs = UPath(root).fs
    put_file, cp_file = fs.put_file, fs.cp_file
    # the first two uploads wait for each other: a serial publish would time out here
    together = threading.Barrier(2, timeout=30)
    started = itertools.count()
    failing = "data/sft/train/2026-11-19-00000.parquet"
    copied: list[str] = []

    def put(local, remote, **kwargs):
        if next(started) < 2:
            together.wait()
        if remote.endswith(failing):
            raise OSError(f"upload of {failing} failed")
        return put_file(local, remote, **kwargs)

    def cp(source, destination, **kwargs):
        copied.append(destination)
        return cp_file(source, destination, **kwargs)

    monkeypatch.setattr(fs, "put_file", put)
    monkeypatch.setattr(fs, "cp_file", cp)
    with pytest.raises(OSError, match=f"upload of {failing} failed"):
        ObjectStorePublisher(root, "distill", workers=4).publish(folder2, manifest2.version)
    assert copied == []
    assert (UPath(root) / "distill" / "LATEST").read_text() == manifest.version
    assert reader_sees(root) == (manifest.version, True)
    assert not (UPath(root) / "distill" / "versions" / manifest2.version / "release.json").exists()

    monkeypatch.setattr(fs, "put_file", put_file)
    ObjectStorePublisher(root, "distill", workers=4).publish(folder2, manifest2.version)
    # every data file is in place before the manifest, which is copied last
    assert copied[-1].endswith(f"/{manifest2.version}/release.json")
    assert sorted(c.split(f"/{manifest2.version}/", 1)[1] for c in copied) == tree(folder2)
    assert reader_sees(root) == (manifest2.version, True)


def test_object_store_manifest_is_not_copied_when_a_data_copy_fails(tmp_path, builds, monkeypatch):
    (folder, manifest), (folder2, manifest2) = builds
    root = f"memory://{tmp_path.name}-copyfail/hub"
    ObjectStorePublisher(root, "distill").publish(folder, manifest.version)
    fs = UPath(root).fs
    cp_file = fs.cp_file

    def cp(source, destination, **kwargs):
        if destination.endswith("data/sft/test/2026-11-19-00000.parquet"):
            raise OSError("copy failed")
        return cp_file(source, destination, **kwargs)

    monkeypatch.setattr(fs, "cp_file", cp)
    with pytest.raises(OSError, match="copy failed"):
        ObjectStorePublisher(root, "distill", workers=8).publish(folder2, manifest2.version)
    version = UPath(root) / "distill" / "versions" / manifest2.version
    assert not (version / "release.json").exists()
    assert reader_sees(root) == (manifest.version, True)
    monkeypatch.setattr(fs, "cp_file", cp_file)
    # the next publish sees no manifest, so it uploads the version again, whole
    ObjectStorePublisher(root, "distill", workers=8).publish(folder2, manifest2.version)
    assert {n: (version / n).read_bytes() for n in tree(folder2)} == snapshot(folder2)
    assert reader_sees(root) == (manifest2.version, True)
