"""The `distill` command. Each module of `distill_assets.commands` adds one subcommand.

Every `DISTILL_*` setting is validated before any command starts (`lib.startup.resolve_settings`
and `check_startup`: values, roots, the Hub and player-key rules): a bad one ends the command
with one line and exit status 2, whichever command it is. Warnings are printed by the commands
that run the pipeline (`startup_settings`), not here. A storage error (disk full, read-only
or unwritable folder) ends it with one line naming the path (`lib.startup.storage_error_line`),
exit status 1.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sqlite3
import sys

from distill_assets import commands
from distill_assets.lib.startup import (
    SettingsError,
    check_startup,
    resolve_settings,
    storage_error_line,
)


def build_parser() -> argparse.ArgumentParser:
    """Return the parser with every subcommand registered."""
    parser = argparse.ArgumentParser(prog="distill", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `distill <command>`; return its exit status."""
    args = build_parser().parse_args(argv)
    try:
        check_startup(resolve_settings())
    except SettingsError as exc:
        print(f"[distill] error: {exc}")
        return 2
    try:
        return int(args.func(args) or 0)
    except (OSError, sqlite3.OperationalError) as exc:
        line = storage_error_line(exc)
        if line is None:
            raise
        print(f"[distill] error: {line}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
