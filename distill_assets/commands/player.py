"""`distill player show|export <raw id>`: what the lake and the releases hold about one player.

Subject access (docs/privacy.md#subject-access): the raw id given is turned into the player's
`player_key` with the configured player-id key (`DISTILL_PLAYER_ID_KEY`) and never written or
printed; rows are found by that key (`defs/telemetry/subject_access.py`). `show` lists the
stores and row counts and the player's consent per data type; `export` writes the rows too,
under `<out>/<player_key>/`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from upath import UPath

from distill_assets.defs.player_ids import PlayerIdHasher, player_key
from distill_assets.defs.telemetry import subject_access
from distill_assets.lib.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `player` subcommand with its `show` and `export` actions."""
    parser = subparsers.add_parser("player", help="subject access: one player's rows")
    actions = parser.add_subparsers(dest="action", required=True)
    show = actions.add_parser("show", help="list the stores holding the player's rows")
    show.add_argument("raw_id", help="the player's raw id (hashed, never printed)")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    export = actions.add_parser("export", help="write every row held about the player")
    export.add_argument("raw_id", help="the player's raw id (hashed, never printed)")
    export.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Show or export the player's rows; print the summary."""
    settings = Settings.resolve()
    key = player_key(PlayerIdHasher().resolved().key, args.raw_id)
    hub_dir = UPath(settings.hub_root) / settings.dataset_name
    if args.action == "export":
        summary = subject_access.export(settings.lake_root, hub_dir, key, args.out)
        print(json.dumps(summary, indent=2, sort_keys=True))
        return 0
    rows = {
        store.name: frame.height
        for store, frame in subject_access.player_rows(settings.lake_root, hub_dir, key)
    }
    summary = {
        "player_key": key,
        "consent": subject_access.consent_of(settings.lake_root, key),
        "rows": rows,
    }
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
        return 0
    print(f"player_key {key}")
    for data_type, granted in sorted(summary["consent"].items()):
        print(f"  consent {data_type:6} {'granted' if granted else 'not granted'}")
    for name, count in rows.items():
        print(f"  {count:>8}  {name}")
    return 0
