"""Release extras: files a source room contributes to each version folder beside `data/`.

`contracts.published.RELEASE_EXTRAS` lists writers as `"module:function"` strings (data, so the
release never imports a source room by name). Each is called with the curated rows of every
config (the exact rows being published), the newest input partition and the version folder, and
returns the files it wrote (e.g. `tfrecord/` for `rlds`). The card's `configs:` still point
`load_dataset` at the Parquet data. Writers must be deterministic (no wall clock).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from pathlib import Path

import polars as pl

from distill_assets.contracts.published import RELEASE_EXTRAS

ExtraWriter = Callable[[Mapping[str, pl.DataFrame], str | None, Path], list[Path]]


def load_writer(spec: str) -> ExtraWriter:
    """Return the writer named `module:function`."""
    module, _, name = spec.partition(":")
    return getattr(import_module(module), name)


def write_extras(
    curated: Mapping[str, pl.DataFrame], newest_partition: str | None, out_dir: Path
) -> list[Path]:
    """Run every extras writer into `out_dir`; return the files written, sorted by path."""
    written: list[Path] = []
    for spec in RELEASE_EXTRAS:
        written += load_writer(spec)(curated, newest_partition, out_dir)
    return sorted(written)
