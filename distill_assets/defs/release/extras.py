"""Release extras: files a source room contributes to each version folder beside `data/`.

`contracts.published.RELEASE_EXTRAS` lists writers as `"module:function"` strings (data, so the
release never imports a source room by name). Each is called with the curated rows of every
config (the exact rows being published), the newest input partition and the version folder, and
returns the files it wrote. The card's `configs:` still point `load_dataset` at the Parquet data;
extras are listed with checksums in `release.json` (`extra_files`). Writers must be deterministic
(no wall clock): their bytes are part of what a version contains.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path

import polars as pl

from distill_assets.contracts.published import RELEASE_EXTRAS
from distill_assets.contracts.release import ExtraFile

ExtraWriter = Callable[[Mapping[str, pl.DataFrame], str | None, Path], list[Path]]


def load_writer(spec: str) -> ExtraWriter:
    """Return the writer named `module:function`."""
    module, _, name = spec.partition(":")
    return getattr(import_module(module), name)


def write_extras(
    curated: Mapping[str, pl.DataFrame],
    newest_partition: str | None,
    out_dir: Path,
    writers: list[str] | None = None,
) -> list[ExtraFile]:
    """Run every extras writer into `out_dir`; return the files written, sorted by path."""
    written: list[Path] = []
    for spec in RELEASE_EXTRAS if writers is None else writers:
        written += load_writer(spec)(curated, newest_partition, out_dir)
    files = []
    for path in written:
        data = Path(path).read_bytes()
        files.append(
            ExtraFile(
                path=Path(path).relative_to(out_dir).as_posix(),
                bytes=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
            )
        )
    return sorted(files, key=lambda f: f.path)
