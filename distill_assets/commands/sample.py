"""`distill sample`: write deterministic raw data for every source (tests, benchmarks)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from distill_assets.lib.settings import SOURCES
from distill_assets.operations.dates import DateError, parse_day
from distill_assets.samples import GeneratedDay

Generator = Callable[[Path, str, int, int], GeneratedDay]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `sample` subcommand."""
    parser = subparsers.add_parser("sample", help="generate deterministic raw data")
    parser.add_argument("--out", type=Path, required=True, help="raw root to write into")
    parser.add_argument("--days", type=int, default=2, help="number of ingest dates")
    parser.add_argument("--scale", type=int, default=1, help="volume multiplier (1 ≈ 100/day)")
    parser.add_argument("--seed", type=int, default=0, help="generator seed")
    parser.add_argument("--start", default="2026-11-19", help="first ingest date (YYYY-MM-DD)")
    parser.add_argument(
        "--sources", default=",".join(SOURCES), help="comma-separated sources to generate"
    )
    parser.set_defaults(func=run)


def generators() -> dict[str, Generator]:
    """Return each source's `generate_day` (imported on use, so the CLI starts without them)."""
    from distill_assets.samples import escalations, revisions, telemetry, traces

    return {
        "traces": traces.generate_day,
        "escalations": escalations.generate_day,
        "revisions": revisions.generate_day,
        "telemetry": telemetry.generate_day,
    }


def run(args: argparse.Namespace) -> int:
    """Generate the requested days for each source and print what was written."""
    try:
        start = parse_day(args.start, "--start")
    except DateError as error:
        print(f"distill sample: {error}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.sources.split(",")) - set(SOURCES))
    if unknown:
        print(f"distill sample: unknown source(s) {', '.join(unknown)}", file=sys.stderr)
        return 2
    by_source = generators()
    for source in args.sources.split(","):
        for offset in range(args.days):
            day = (start + timedelta(days=offset)).isoformat()
            written = by_source[source](args.out, day, args.scale, args.seed)
            bad = sum(written.bad_records.values())
            print(f"[sample] {source} {day}: {written.records} records ({bad} bad)")
    return 0
