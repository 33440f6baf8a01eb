"""Deterministic raw-data generators, one module per source, in the raw contracts of docs/sources/.

Each module defines `generate_day(out_dir, day, scale, seed) -> GeneratedDay`, writing
`<out_dir>/<source>/<day>/...` and reporting how many records (and bad records, by reason) it wrote.
The same seed, day and scale always write byte-identical files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class GeneratedDay:
    """What a generator wrote for one source and day."""

    source: str
    day: str
    files: list[Path] = field(default_factory=list)
    records: int = 0
    bad_records: dict[str, int] = field(default_factory=dict)
