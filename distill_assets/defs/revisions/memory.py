"""The principles memory (docs/sources/revisions.md#memory: principle format, location, retrieval).

One markdown file per merged principle under `<memory root>/Improvements/Principles/`, in the
seed's format: front matter `category`, `trigger_pattern`, `source_turn`, `confidence`,
`created_at` (the event time of the earliest turn, UTC, `YYYY-MM-DDTHH:MM:SS`), `tags:
[improvement-principle, <category>]`, then `# Title`, the principle, `## Why This Works` and
`## Pattern` with `**Original issue:**` and `**Successful fix:**`. A principle merged from several
turns adds `support` and `source_turns` after `confidence`; one from a single turn has exactly the
seed's six keys.

`sync_memory` writes each file atomically (temporary name, then rename) and only when its content
changed, and removes files this writer owns (`<slug>-<16 hex digits>.md`) that no longer name a
principle; other files in the folder (hand-written principles) are left alone, and `search`
retrieves them too.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from distill_assets.lib.embed import Embedder, top_k_cosine

PRINCIPLES_FOLDER = ("Improvements", "Principles")
TAG = "improvement-principle"
OWNED_FILE = re.compile(r"^[a-z0-9-]+-[0-9a-f]{16}\.md$")
# a front-matter value is written bare unless YAML could read it as something else
_PLAIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ .,/()'+-]*$")


def principles_folder(memory_root: str | Path) -> Path:
    """Return `<memory root>/Improvements/Principles`."""
    return Path(memory_root).joinpath(*PRINCIPLES_FOLDER)


def _value(text: str) -> str:
    """Return a front-matter scalar: bare when safe, else JSON-quoted (valid YAML)."""
    return text if _PLAIN.match(text) and text == text.strip() else json.dumps(text)


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def render_principle(row: Mapping[str, Any]) -> str:
    """Return the markdown file of one merged principle (a row of `revisions/principles`)."""
    front = [
        f"category: {_value(row['category'])}",
        f"trigger_pattern: {_value(row['trigger_pattern'])}",
        f"source_turn: {_value(row['source_turns'][0])}",
        f"confidence: {row['confidence']}",
    ]
    if row["support"] > 1:
        turns = ", ".join(_value(t) for t in row["source_turns"])
        front += [f"support: {row['support']}", f"source_turns: [{turns}]"]
    front += [
        f"created_at: {_timestamp(row['created_at'])}",
        f"tags: [{TAG}, {_value(row['category'])}]",
    ]
    body = [
        f"# {row['title']}",
        row["principle"],
        "## Why This Works",
        row["why"],
        "## Pattern",
        f"**Original issue:** {row['original_issue']}",
        f"**Successful fix:** {row['successful_fix']}",
    ]
    return "---\n" + "\n".join(front) + "\n---\n\n" + "\n\n".join(body) + "\n"


@dataclass(frozen=True)
class MemorySync:
    """What `sync_memory` did to the folder."""

    written: int
    unchanged: int
    removed: int


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def sync_memory(folder: Path, principles: pl.DataFrame) -> MemorySync:
    """Make `folder` hold exactly one file per principle (see the module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = {row["file"]: render_principle(row) for row in principles.iter_rows(named=True)}
    written = unchanged = removed = 0
    for name, text in sorted(wanted.items()):
        path = folder / name
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            unchanged += 1
            continue
        _write_atomic(path, text)
        written += 1
    for path in sorted(folder.iterdir()):
        if path.is_file() and OWNED_FILE.match(path.name) and path.name not in wanted:
            path.unlink()
            removed += 1
    return MemorySync(written=written, unchanged=unchanged, removed=removed)


def memory_drift(folder: Path, principles: pl.DataFrame) -> dict[str, int]:
    """Count files missing, differing from their principle, or stale (owned, no principle)."""
    wanted = {row["file"]: render_principle(row) for row in principles.iter_rows(named=True)}
    present = {p.name: p for p in folder.iterdir() if p.is_file()} if folder.is_dir() else {}
    missing = [name for name in wanted if name not in present]
    differing = [
        name
        for name, text in wanted.items()
        if name in present and present[name].read_text(encoding="utf-8") != text
    ]
    stale = [name for name in present if OWNED_FILE.match(name) and name not in wanted]
    return {"missing": len(missing), "differing": len(differing), "stale": len(stale)}


def parse_principle_file(text: str) -> dict[str, str]:
    """Return the front-matter keys, `title` and `principle` of a principle markdown file."""
    fields: dict[str, str] = {}
    body = text
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end > 0:
            for line in text[4:end].splitlines():
                key, sep, value = line.partition(":")
                if sep:
                    value = value.strip()
                    if value.startswith('"'):
                        try:
                            value = json.loads(value)
                        except ValueError:
                            value = value.strip('"')
                    fields[key.strip()] = value
            body = text[end + 4 :]
    lines = body.strip().splitlines()
    title_at = next((i for i, line in enumerate(lines) if line.startswith("# ")), None)
    fields["title"] = lines[title_at][2:].strip() if title_at is not None else ""
    rest = lines[title_at + 1 :] if title_at is not None else lines
    stop = next((i for i, line in enumerate(rest) if line.startswith("## ")), len(rest))
    fields["principle"] = " ".join(line.strip() for line in rest[:stop] if line.strip())
    return fields


def read_memory(folder: Path) -> list[dict[str, str]]:
    """Return every principle file of the folder (parsed, with its `file` name), sorted by name."""
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.md")):
        fields = parse_principle_file(path.read_text(encoding="utf-8"))
        found.append({**fields, "file": path.name})
    return found


def search_text(principle: Mapping[str, str]) -> str:
    """Return the text a query is compared with: trigger pattern, title and principle."""
    parts = (principle.get("trigger_pattern", ""), principle.get("title", ""))
    return ". ".join([*(p for p in parts if p), principle.get("principle", "")])


def search(
    folder: Path, query: str, embedder: Embedder, top: int
) -> list[tuple[float, dict[str, str]]]:
    """Return the `top` principles most similar to `query`, best first, with their scores."""
    principles = read_memory(folder)
    if not principles or top <= 0:
        return []
    corpus = embedder.embed([search_text(p) for p in principles])
    queries = embedder.embed([query])
    indices, scores = top_k_cosine(queries, corpus, top)
    return [
        (round(float(score), 4), principles[int(i)])
        for i, score in zip(indices[0], scores[0], strict=True)
        if np.isfinite(score)
    ]
