import pytest
from upath import UPath

from distill_assets.defs.release.folders import copy_folder, local_folder, staged_folder


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


def test_copy_folder_swaps_in_a_copy(tmp_path):
    write(tmp_path / "src", {"x.txt": "new"})
    write(tmp_path / "dst", {"old.txt": "old"})
    copy_folder(tmp_path / "src", tmp_path / "dst")
    assert [p.name for p in (tmp_path / "dst").iterdir()] == ["x.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dst", "src"]
