"""`distill principles search`: retrieve improvement principles from the memory.

See docs/sources/revisions.md#retrieval.

Ranks every markdown principle under `<memory root>/Improvements/Principles/` by the cosine
similarity of the query to its trigger pattern, title and principle, with the project's embedder
(`DISTILL_EMBEDDER`: the offline hashed default, or a local model2vec folder), and prints the best
`--top` as a table (score, category, title, file) or as JSON.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from distill_assets.defs.revisions.memory import principles_folder, search
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.settings import Settings

DEFAULT_TOP = 5
JSON_FIELDS = ("category", "trigger_pattern", "title", "principle")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `principles` subcommand (`principles search`)."""
    parser = subparsers.add_parser("principles", help="the improvement principles memory")
    actions = parser.add_subparsers(dest="action", required=True)
    find = actions.add_parser("search", help="rank principles by similarity to a query")
    find.add_argument("query", help="the query to find principles for")
    find.add_argument("--top", type=int, default=DEFAULT_TOP, help="how many to show")
    find.add_argument("--json", action="store_true", help="print JSON instead of a table")
    find.add_argument(
        "--memory-root", type=Path, default=None, help="memory root (default DISTILL_MEMORY_ROOT)"
    )
    find.set_defaults(func=run_search)


def run_search(args: argparse.Namespace) -> int:
    """Print the principles most similar to the query; 1 when the memory holds none."""
    settings = Settings.resolve()
    folder = principles_folder(args.memory_root or settings.memory_root)
    embedder = load_embedder(settings.embedder, settings.embedder_model)
    found = search(folder, args.query, embedder, args.top)
    if args.json:
        rows = [
            {
                "rank": rank,
                "score": score,
                **{name: principle.get(name, "") for name in JSON_FIELDS},
                "confidence": _number(principle.get("confidence"), float),
                "support": _number(principle.get("support", "1"), int),
                "file": str(folder / principle["file"]),
            }
            for rank, (score, principle) in enumerate(found, start=1)
        ]
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not found:
        print(f"[principles] no principles in {folder}")
        return 1
    header = ("#", "score", "category", "title", "file")
    table = [
        (str(rank), f"{score:.3f}", p.get("category", ""), p.get("title", ""), p["file"])
        for rank, (score, p) in enumerate(found, start=1)
    ]
    widths = [max(len(row[i]) for row in (header, *table)) for i in range(len(header))]
    for row in (header, tuple("-" * w for w in widths), *table):
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())
    print(f"[principles] best {len(found)} from {folder}")
    return 0


def _number(text: str | None, kind: type[float] | type[int]) -> float | int | None:
    """Return a front-matter number, or None when it is absent or not a number."""
    try:
        return kind(text) if text is not None else None
    except ValueError:
        return None
