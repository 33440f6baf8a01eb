"""Working folders and orphaned temporary files: nothing unscrubbed is left lying around.

- `working_dir(kind)` makes a local scratch folder `<system temp>/distill-<pid>-<kind>-…`; an
  asset that stages Parquet there has it removed when the lake IO manager has moved its files
  into place (`remove_if_empty`), or at once when the asset fails. A process killed mid-asset
  leaves its folder behind; `remove_orphaned_workdirs` (run by `distill run` at start) removes
  every such folder whose process is gone.
- Atomic writes use hidden siblings `.<name>.<32 hex>.tmp` (and `.old` while a folder is
  swapped); a killed write leaves them in the lake or hub. `remove_orphans` (run by every
  publish) removes those older than `ORPHAN_MIN_AGE_SECONDS`, so a write in flight in another
  process is never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from upath import UPath

from distill_assets.lib.lake import is_remote

WORKDIR_PREFIX = "distill-"
ORPHAN_MIN_AGE_SECONDS = 600
_WORKDIR = re.compile(r"^distill-(\d+)-")
_ORPHAN = re.compile(r"^\..+\.[0-9a-f]{32}\.(?:tmp|old)$")


def working_dir(kind: str) -> Path:
    """Create and return a scratch folder of this process (`distill-<pid>-<kind>-…`)."""
    return Path(tempfile.mkdtemp(prefix=f"{WORKDIR_PREFIX}{os.getpid()}-{kind}-"))


def remove_if_empty(folder: Path) -> None:
    """Remove `folder` if it is an empty working folder (another staged file may still be in it)."""
    if _WORKDIR.match(folder.name):
        with contextlib.suppress(OSError):
            folder.rmdir()


def remove_orphaned_workdirs(root: str | None = None) -> list[str]:
    """Remove the working folders of processes that no longer run; return their paths."""
    removed = []
    base = Path(root or tempfile.gettempdir())
    for entry in sorted(base.iterdir()) if base.is_dir() else []:
        match = _WORKDIR.match(entry.name)
        if match and entry.is_dir() and not process_alive(int(match.group(1))):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(str(entry))
    return removed


def remove_orphans(root: str, min_age_seconds: float = ORPHAN_MIN_AGE_SECONDS) -> list[str]:
    """Remove orphaned `.…<hex>.tmp`/`.old` files and folders under a local root; return them."""
    location = UPath(root)
    if is_remote(location) or not Path(location.path).is_dir():
        return []
    cutoff = time.time() - min_age_seconds
    removed = []
    for folder, dirs, files in os.walk(location.path):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            if not _ORPHAN.match(name) or path.lstat().st_mtime > cutoff:
                continue
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
                dirs.remove(name)
            else:
                path.unlink(missing_ok=True)
            removed.append(str(path))
    return sorted(removed)


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists (one we may not signal counts as existing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
