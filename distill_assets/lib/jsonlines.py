"""Append-only JSON Lines files (review decisions): one sorted-key JSON object per line."""

import json
from collections.abc import Iterable, Mapping
from pathlib import Path


def append_lines(path: Path, records: Iterable[Mapping[str, object]]) -> None:
    """Append each record to `path` as one JSON line (keys sorted), creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(record, sort_keys=True) + "\n" for record in records)
