import os

import pytest
from upath import UPath

from distill_assets.defs.release import folders
from distill_assets.defs.release.folders import (
    exchange,
    local_folder,
    point_link,
    staged_folder,
)


def write(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_staged_folder_replaces_the_target_whole_and_leaves_no_temporaries(tmp_path):
    target = UPath(tmp_path / "release" / "candidate")
    with staged_folder(target) as stage:
        write(stage, {"a.txt": "1", "data/b.txt": "2"})
    with staged_folder(target) as stage:
        write(stage, {"c.txt": "3"})
    assert sorted(p.name for p in (tmp_path / "release").iterdir()) == ["candidate"]
    assert [p.name for p in (tmp_path / "release" / "candidate").iterdir()] == ["c.txt"]


def test_a_failed_build_keeps_the_previous_folder(tmp_path):
    target = UPath(tmp_path / "candidate")
    with staged_folder(target) as stage:
        write(stage, {"a.txt": "old"})
    with pytest.raises(RuntimeError), staged_folder(target) as stage:
        write(stage, {"a.txt": "half"})
        raise RuntimeError("build failed")
    assert (tmp_path / "candidate" / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["candidate"]


def test_remote_targets_are_uploaded_and_fetched_back(tmp_path):
    target = UPath("memory://lake/release/candidate")
    with staged_folder(target) as stage:
        write(stage, {"README.md": "card", "data/sft/train/2026-11-19-00000.parquet": "rows"})
    with staged_folder(target) as stage:
        write(stage, {"README.md": "card 2"})
    assert sorted(p.name for p in target.iterdir()) == ["README.md"]
    with local_folder(target) as local:
        assert (local / "README.md").read_text() == "card 2"


def test_point_link_replaces_the_link_in_one_rename(tmp_path):
    write(tmp_path / "versions", {"v1/x.txt": "one", "v2/x.txt": "two"})
    latest = tmp_path / "latest"
    point_link(latest, "versions/v1")
    assert (latest / "x.txt").read_text() == "one"
    point_link(latest, "versions/v2")
    assert os.readlink(latest) == "versions/v2"
    assert (latest / "x.txt").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "versions"]


def test_a_crash_at_any_step_of_the_swap_leaves_latest_whole(tmp_path, monkeypatch):
    """Kill the swap after the new link is made, then at the rename: latest stays the old one."""
    write(tmp_path / "versions", {"v1/x.txt": "one", "v2/x.txt": "two"})
    latest = tmp_path / "latest"
    point_link(latest, "versions/v1")
    real_symlink = os.symlink

    def symlink_then_die(target, name):
        real_symlink(target, name)
        raise KeyboardInterrupt("killed after the new link was made")

    monkeypatch.setattr(os, "symlink", symlink_then_die)
    with pytest.raises(KeyboardInterrupt):
        point_link(latest, "versions/v2")
    assert (latest / "x.txt").read_text() == "one"
    monkeypatch.setattr(os, "symlink", real_symlink)

    def die(*_args):
        raise KeyboardInterrupt("killed at the rename")

    monkeypatch.setattr(os, "replace", die)
    with pytest.raises(KeyboardInterrupt):
        point_link(latest, "versions/v2")
    assert (latest / "x.txt").read_text() == "one"
    monkeypatch.undo()
    point_link(latest, "versions/v2")
    assert (latest / "x.txt").read_text() == "two"


@pytest.mark.parametrize("kernel_exchange", [True, False])
def test_a_real_latest_folder_of_older_releases_migrates_to_a_link(
    tmp_path, monkeypatch, kernel_exchange
):
    write(tmp_path / "versions", {"v2/x.txt": "two"})
    write(tmp_path / "latest", {"x.txt": "one"})
    if not kernel_exchange:
        monkeypatch.setattr(folders, "exchange", lambda *_: False)
    point_link(tmp_path / "latest", "versions/v2")
    assert os.readlink(tmp_path / "latest") == "versions/v2"
    assert (tmp_path / "latest" / "x.txt").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "versions"]


def test_exchange_swaps_two_names_in_one_step(tmp_path):
    write(tmp_path, {"a/x.txt": "a", "b/x.txt": "b"})
    assert exchange(tmp_path / "a", tmp_path / "b")
    assert (tmp_path / "a" / "x.txt").read_text() == "b"
