"""Extra files a config contributes to a release folder (`contracts.published.RELEASE_EXTRAS`).

A source declares, per config, writers named `"module:function"`; each is called with the config,
its curated rows (with `split`) and the version folder, and writes files beside the Parquet data
(e.g. `tfrecord/` for `rlds`). The dataset card and `load_dataset` ignore them.
"""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import polars as pl

from distill_assets.contracts.published import RELEASE_EXTRAS


def write_extras(config: str, curated: pl.DataFrame, out_dir: Path) -> list[Path]:
    """Run every extra writer declared for `config`; return the files they wrote."""
    written: list[Path] = []
    for target in RELEASE_EXTRAS.get(config, []):
        module, _, name = target.partition(":")
        writer = getattr(import_module(module), name)
        written += writer(config, curated, out_dir)
    return written
