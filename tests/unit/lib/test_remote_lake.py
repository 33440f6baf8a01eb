"""Lake and hub roots on a non-local fsspec filesystem (`memory://`, the stand-in for `s3://`).

The same code paths as an `s3://` root (the real S3 API is tested in `tests/integration/`):
DuckDB reads remote lake paths through the registered fsspec filesystem, a remote file is read
through a local copy, and the object-store publisher keeps versions and `latest`.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import fsspec
import polars as pl
import pytest
from upath import UPath

from distill_assets.defs.release.build import build_release
from distill_assets.defs.release.objectstore import ObjectStorePublisher, load_hint
from distill_assets.defs.release.publish import LocalPublisher
from distill_assets.defs.release.resources import PublisherResource
from distill_assets.lib.lake import (
    is_remote,
    local_file,
    parquet_file,
    partition_path,
    read_parquet_table,
    write_parquet_atomic,
)
from distill_assets.lib.settings import Settings
from distill_assets.lib.sql import connect
from tests.unit.release.test_build import inputs, no_previous, tree


@pytest.fixture
def memory_root(monkeypatch: pytest.MonkeyPatch) -> str:
    root = f"memory://distill-{uuid.uuid4().hex}"
    monkeypatch.setenv("DISTILL_LAKE_ROOT", f"{root}/lake")
    monkeypatch.setenv("DISTILL_HUB_ROOT", f"{root}/hub")
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


def test_duckdb_reads_a_remote_lake_file_without_extensions(memory_root: str) -> None:
    path = partition_path(f"{memory_root}/lake", "traces", "events", "2026-11-20")
    write_parquet_atomic(pl.DataFrame({"a": [3, 1, 2]}), path)
    assert is_remote(path)
    con = connect(f"{memory_root}/lake")
    try:
        rows = con.execute("SELECT sum(a), count(*) FROM read_parquet($p)", {"p": str(path)})
        assert rows.fetchall() == [(6, 3)]
    finally:
        con.close()
    with local_file(path) as local:
        assert isinstance(local, Path) and local.is_file()
        assert pl.read_parquet(local)["a"].to_list() == [3, 1, 2]
    assert not local.exists()


def test_local_file_of_a_local_path_is_the_path_itself(tmp_path: Path) -> None:
    path = UPath(tmp_path / "t.parquet")
    write_parquet_atomic(pl.DataFrame({"a": [1]}), path)
    with local_file(path) as local:
        assert local == tmp_path / "t.parquet"
    assert local.exists()


def _snapshot(fs: fsspec.AbstractFileSystem, root: str) -> dict[str, bytes]:
    return {p[len(root) + 1 :]: fs.cat_file(p) for p in sorted(fs.find(root))}


def test_object_store_publisher_keeps_versions_and_latest(memory_root: str, tmp_path: Path) -> None:
    publisher = PublisherResource().publisher(Settings.resolve())
    assert isinstance(publisher, ObjectStorePublisher)
    assert publisher.latest_manifest() is None
    first = tmp_path / "b1"
    manifest = build_release(inputs(), first, no_previous)
    second = tmp_path / "b2"
    manifest2 = build_release(inputs(sft=40), second, no_previous)
    fs = fsspec.filesystem("memory")
    repo = f"{memory_root}/hub/distill".removeprefix("memory://")
    local = {name: (first / name).read_bytes() for name in tree(first)}

    published = publisher.publish(first, manifest.version)
    assert (published.created, published.location) == (
        True,
        f"memory://{repo}/versions/{manifest.version}",
    )
    assert _snapshot(fs, f"/{repo}/versions/{manifest.version}") == local
    assert fs.cat_file(f"/{repo}/LATEST") == manifest.version.encode()
    assert publisher.latest_manifest() == manifest
    assert publisher.publish(first, manifest.version).created is False

    publisher.publish(second, manifest2.version)
    assert publisher.latest_manifest() == manifest2
    assert publisher.version_manifest(manifest.version) == manifest
    assert _snapshot(fs, f"/{repo}/versions/{manifest.version}") == local
    assert sorted(p.rsplit("/", 1)[1] for p in fs.ls(f"/{repo}/versions", detail=False)) == sorted(
        [manifest.version, manifest2.version]
    )
    assert [p for p in fs.find(f"/{repo}") if ".tmp" in p] == []
    snippet = published.load_snippet("sft")
    assert snippet.startswith('load_dataset("parquet", data_files=')
    assert f"memory://{repo}/versions/{manifest.version}/data/sft/train/*.parquet" in snippet


def test_a_local_hub_root_keeps_the_local_publisher(tmp_path: Path) -> None:
    settings = Settings.resolve(hub_root=str(tmp_path / "hub"))
    assert isinstance(PublisherResource().publisher(settings), LocalPublisher)
    assert load_hint(UPath(tmp_path / "x"), "dpo") == f'load_dataset("{tmp_path / "x"}", "dpo")'


def test_parquet_is_read_by_name_locally_and_through_a_file_object_remotely(
    memory_root: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frame = pl.DataFrame({"a": [3, 1, 2], "b": ["x", "y", "z"]})
    remote = partition_path(f"{memory_root}/lake", "traces", "events", "2026-11-20")
    local = partition_path(str(tmp_path), "traces", "events", "2026-11-20")
    for path in (remote, local):
        write_parquet_atomic(frame, path)
    assert read_parquet_table(remote, ["a"]).column("a").to_pylist() == [3, 1, 2]

    # a local file is never read through a Python file object (Arrow's exit-time abort)
    def no_file_objects(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("local Parquet read through a Python file object")

    monkeypatch.setattr(UPath, "open", no_file_objects)
    assert read_parquet_table(local).to_pydict() == {"a": [3, 1, 2], "b": ["x", "y", "z"]}
    with parquet_file(local) as parquet:
        assert parquet.read_row_group(0, columns=["b"]).column("b").to_pylist() == ["x", "y", "z"]
