"""Folder moves for staging and publishing: build aside, then swap into place.

POSIX cannot atomically replace a non-empty folder, so a swap is two renames (old aside, new in)
within the same parent folder; a reader sees either the old or the new complete folder, or (for the
instant between the renames) none. Folders are never half-written in place. A name readers must
always find (the hub's `latest`) is therefore a symlink instead (`point_link`): a new link made
beside it replaces it in one `rename(2)`, so a reader, or a crash, sees the old target or the new
one, never no `latest`. Windows is not a target (POSIX symlinks and renames are assumed).
Object stores (lake roots such as `s3://`) have no folder rename: there a folder is uploaded
under a temporary name and moved, which is as close as they allow; its files are uploaded and
copied on a bounded pool of threads (`UPLOAD_WORKERS`), the files a reader checks first last.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from contextlib import contextmanager
from pathlib import Path

from upath import UPath

from distill_assets.lib.lake import is_remote

# uploads and server-side copies in flight at once (each is one request an object store serves
# in parallel with the others; a release is hundreds of shard files)
UPLOAD_WORKERS = 16


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


def each_in_parallel(
    action: Callable[[str, str], object], pairs: list[tuple[str, str]], workers: int
) -> None:
    """Run `action(source, destination)` for every pair on up to `workers` threads.

    The first error is raised once the calls already running have returned; the calls not yet
    started are cancelled, so nothing runs after this returns or raises.
    """
    if not pairs:
        return
    with ThreadPoolExecutor(max(1, min(workers, len(pairs))), "distill-upload") as pool:
        futures = [pool.submit(action, source, destination) for source, destination in pairs]
        _, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for future in pending:
            future.cancel()
        wait(pending)
        for future in futures:
            if future.done() and not future.cancelled() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]


def upload_folder(
    local: Path,
    target: UPath,
    copies: dict[str, str] | None = None,
    *,
    last: tuple[str, ...] = (),
    workers: int = UPLOAD_WORKERS,
) -> None:
    """Replace remote folder `target` by the files of `local` (uploaded aside, then copied in).

    `copies` maps file names (relative to `local`) to remote paths on the same store holding the
    same bytes: those are copied server-side from there instead of being uploaded. Uploads and
    copies run on up to `workers` threads; the files named in `last` are copied into `target`
    one by one only after every other file is in place (and not at all if one failed).
    """
    fs = target.fs
    copies = copies or {}
    tmp = target.parent / f".{target.name}.{uuid.uuid4().hex}.tmp"
    names = [p.relative_to(local).as_posix() for p in sorted(local.rglob("*")) if p.is_file()]
    uploads = [(str(local / n), f"{tmp.path}/{n}") for n in names if n not in copies]
    each_in_parallel(fs.put_file, uploads, workers)
    if target.exists():
        fs.rm(target.path, recursive=True)
    # object stores have no folder rename: copy key by key (server-side), then drop the upload
    moves = [(copies.get(n, f"{tmp.path}/{n}"), f"{target.path}/{n}") for n in names]
    first = [move for name, move in zip(names, moves, strict=True) if name not in last]
    each_in_parallel(fs.cp_file, first, workers)
    for name, (source, destination) in zip(names, moves, strict=True):
        if name in last:
            fs.cp_file(source, destination)
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
