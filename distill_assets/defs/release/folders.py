"""Folder moves for staging and publishing: build aside, then swap into place.

POSIX cannot atomically replace a non-empty folder, so a swap is two renames (old aside, new in)
within the same parent folder; a reader sees either the old or the new complete folder, or (for the
instant between the renames) none. Folders are never half-written in place. A name readers must
always find (the hub's `latest`) is therefore a symlink instead (`point_link`): a new link made
beside it replaces it in one `rename(2)`, so a reader, or a crash, sees the old target or the new
one, never no `latest`. Windows is not a target (POSIX symlinks and renames are assumed).
Object stores (lake roots such as `s3://`) have no folder rename: there a folder is uploaded
under a temporary name and moved, which is as close as they allow.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from upath import UPath

from distill_assets.lib.lake import is_remote


def sibling(path: Path, label: str) -> Path:
    """Return a fresh hidden name beside `path` (same folder, so renames stay on one device)."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.{label}")


def swap_folder(new: Path, target: Path) -> None:
    """Replace folder `target` by folder `new` (same parent): old aside, new in, old removed."""
    old = sibling(target, "old")
    if target.exists():
        os.replace(target, old)
    os.replace(new, target)
    shutil.rmtree(old, ignore_errors=True)


# Linux renameat2(2) flag that swaps two names in one step (glibc >= 2.28)
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(first: Path, second: Path) -> bool:
    """Swap two existing names in one atomic step (Linux `renameat2`); False where unsupported."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    done = renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    return done == 0


def point_link(link: Path, target: str) -> None:
    """Make `link` a symlink to `target` (relative to its folder), atomically.

    A new link is made under a hidden sibling name and renamed over `link`: readers see the old
    target or the new one at every instant. A real folder at `link` (a `latest/` copy written by
    releases before links were used) is migrated by exchanging the two names in one step where
    the kernel can (Linux), else by moving it aside and the link in, then removed.
    """
    link.parent.mkdir(parents=True, exist_ok=True)
    if link.is_symlink() and os.readlink(link) == target:
        return
    tmp = sibling(link, "tmp")
    os.symlink(target, tmp)
    try:
        if not (link.is_dir() and not link.is_symlink()):
            os.replace(tmp, link)
        elif not exchange(tmp, link):
            old = sibling(link, "old")
            os.replace(link, old)
            os.replace(tmp, link)
            shutil.rmtree(old, ignore_errors=True)
    finally:
        # after an exchange the old folder is under the temporary name
        if tmp.is_dir() and not tmp.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)


def upload_folder(local: Path, target: UPath, copies: dict[str, str] | None = None) -> None:
    """Replace remote folder `target` by the files of `local` (uploaded aside, then copied in).

    `copies` maps file names (relative to `local`) to remote paths on the same store holding the
    same bytes: those are copied server-side from there instead of being uploaded.
    """
    fs = target.fs
    copies = copies or {}
    tmp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    names = [p.relative_to(local).as_posix() for p in sorted(local.rglob("*")) if p.is_file()]
    for name in names:
        if name not in copies:
            fs.put_file(str(local / name), f"{tmp.path}/{name}")
    if target.exists():
        fs.rm(target.path, recursive=True)
    # object stores have no folder rename: copy key by key (server-side), then drop the upload
    sources = [copies.get(n, f"{tmp.path}/{n}") for n in names]
    fs.copy(sources, [f"{target.path}/{n}" for n in names])
    if fs.exists(tmp.path):
        fs.rm(tmp.path, recursive=True)


@contextmanager
def staged_folder(target: UPath) -> Iterator[Path]:
    """Yield an empty local folder to build in; on success it replaces `target` whole."""
    if not is_remote(target):
        final = Path(target.path)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = sibling(final, "tmp")
        tmp.mkdir()
        try:
            yield tmp
            swap_folder(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    else:
        with tempfile.TemporaryDirectory(prefix="distill-stage-") as scratch:
            yield Path(scratch)
            upload_folder(Path(scratch), target)


@contextmanager
def local_folder(folder: UPath) -> Iterator[Path]:
    """Yield `folder` as a local path (downloading it to a temporary folder if it is remote)."""
    if not is_remote(folder):
        yield Path(folder.path)
        return
    with tempfile.TemporaryDirectory(prefix="distill-fetch-") as scratch:
        root = folder.path.rstrip("/")
        for remote in sorted(folder.fs.find(root)):
            local = Path(scratch) / remote[len(root) + 1 :]
            local.parent.mkdir(parents=True, exist_ok=True)
            folder.fs.get_file(remote, str(local))
        yield Path(scratch)
