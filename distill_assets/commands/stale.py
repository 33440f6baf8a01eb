"""`distill stale`: list asset partitions built under rules that changed since (and downstream)."""

from __future__ import annotations

import argparse
import json

from distill_assets.lib.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `stale` subcommand."""
    parser = subparsers.add_parser(
        "stale",
        help="list asset partitions whose recorded rules version differs from the current one",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON array instead of lines")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print one line (or JSON object) per stale asset partition; nothing when none is stale."""
    from distill_assets.definitions import defs
    from distill_assets.lib.stale import find_stale
    from distill_assets.operations.instance import project_instance

    with project_instance(Settings.resolve()) as instance:
        entries = find_stale(instance, defs().resolve_asset_graph())
    if args.json:
        print(json.dumps([e.as_json() for e in entries], indent=2))
    else:
        for entry in entries:
            print(entry.describe())
    return 0
