"""`distill stats escalations`: counts of the escalation examples.

See docs/sources/escalations.md#stats.

By domain, reasoning type, training format, quality tier, review state and flag over every
partition of `distillation_examples`, with review decisions applied — the same computation as the
asset's materialization metadata (`defs/escalations/stats.py`).
"""

from __future__ import annotations

import argparse
import json

from distill_assets.defs.escalations.review import (
    REVIEW_COLUMNS,
    apply_decisions,
    distilled_root,
    read_decisions,
    scan_examples,
)
from distill_assets.defs.escalations.stats import STATS_COLUMNS, escalation_stats
from distill_assets.lib.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `stats` subcommand (one action per source that has stats)."""
    parser = subparsers.add_parser("stats", help="counts of a source's curated examples")
    sources = parser.add_subparsers(dest="source", required=True)
    escalations = sources.add_parser("escalations", help="distillation_examples counts")
    escalations.add_argument("--json", action="store_true", help="machine-readable output")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the stats as tables, or JSON with `--json`."""
    settings = Settings.resolve()
    examples = scan_examples(settings.lake_root, [*STATS_COLUMNS, *REVIEW_COLUMNS]).collect()
    if not examples.is_empty():
        examples = apply_decisions(examples, read_decisions(distilled_root(settings.data_dir)))
    stats = escalation_stats(examples) if not examples.is_empty() else {"examples": {"total": 0}}
    if args.json:
        print(json.dumps(stats, indent=2))
        return 0
    for dimension, counts in stats.items():
        print(f"{dimension}:")
        for value, count in counts.items():
            print(f"  {value:24} {count:>8}")
    return 0
