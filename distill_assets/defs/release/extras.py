"""Release extras: what source rooms contribute to each version beside `data/`.

`ReleaseContributions` holds them as callables and text, wired in `definitions.py` (the layer
above the rooms) and given to the release as the `release_contributions` resource, so the release
never imports a source room. Each writer is called with the curated rows of every config (the
exact rows being published), the newest input partition and the version folder, and returns the
files it wrote; card notes are shown per config the version holds (`notes.py`); the values of the
`counted_metadata` keys of the published rows are counted per config and split
(`SplitSummary.metadata_counts`, a card section). The card's
`configs:` still point `load_dataset` at the Parquet data; extras are listed with checksums in
`release.json` (`extra_files`). Writers must be deterministic (no wall clock): their bytes are
part of what a version contains.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from distill_assets.contracts.release import ExtraFile

ExtraWriter = Callable[[Mapping[str, pl.DataFrame], str | None, Path], list[Path]]


@dataclass(frozen=True)
class ReleaseContributions:
    """What source rooms add to every version: extra files and per-config card notes."""

    writers: Sequence[ExtraWriter] = ()
    # config -> markdown notes shown in the card when the version holds the config
    card_notes: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # `metadata` keys whose values the manifest and card count per config and split
    counted_metadata: Sequence[str] = ()


def write_extras(
    curated: Mapping[str, pl.DataFrame],
    newest_partition: str | None,
    out_dir: Path,
    writers: Sequence[ExtraWriter],
) -> list[ExtraFile]:
    """Run every extras writer into `out_dir`; return the files written, sorted by path."""
    written: list[Path] = []
    for writer in writers:
        written += writer(curated, newest_partition, out_dir)
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
