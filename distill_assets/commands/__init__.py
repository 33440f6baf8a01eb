"""Subcommands of `distill`: every module defines `register(subparsers)` and sets `func`."""
