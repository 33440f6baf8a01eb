"""`distill check`: validate every setting and the environment, then exit (0 or 2).

What `distill run` checks before any work (`lib.startup`), for launchers that do not go through a
`distill` command: `make ui` runs it before starting Dagster, so a bad setting is one line there
too instead of a code location that fails to load.
"""

from __future__ import annotations

import argparse

from distill_assets.lib.startup import startup_settings

PREFIX = "[distill]"


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `check` subcommand."""
    parser = subparsers.add_parser(
        "check", help="validate every DISTILL_* setting (one line and exit 2 on the first error)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the warnings and `settings ok`, or the first error (exit 2)."""
    if startup_settings(PREFIX) is None:
        return 2
    print(f"{PREFIX} settings ok")
    return 0
