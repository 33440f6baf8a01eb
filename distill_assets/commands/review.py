"""`distill review`: list, show, approve and reject escalation examples and telemetry rows.

One review mechanism, a queue per source (`--source`, default `escalations`): the same actions
and the same decision lines (`{id, decision, notes, reviewer, ts}`, appended, latest wins), a
rejection leaving the release at the next publish. Escalations: docs/sources/escalations.md#review
(below). Telemetry, the Witness queue (`--source telemetry`: list, show, approve, reject):
docs/sources/telemetry.md#witness-review, `defs/telemetry/witness.py`.

`list` shows, per example, why it is held back from the exports (`held_back`: the gate's reason,
e.g. `not_an_answer:user_request`); approving an example overturns an answer-ness rejection.
`edit ID --response-file F` records a corrected answer, used from the next materialization of
the example's partition. Reviews and edits made directly in `distilled/distillation.db` count
the same (`defs/escalations/working_store.py`); the latest timestamp wins.

Reads `distillation_examples` from the lake (every partition) with the decisions made so far
applied; a decision is appended to `<data dir>/distilled/review/decisions.jsonl` and reaches the
release at the next materialization (`defs/escalations/review.py`).
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
import time
from pathlib import Path

import polars as pl

from distill_assets.defs.escalations.gate import gate_reason
from distill_assets.defs.escalations.review import (
    PENDING_COLUMNS,
    REVIEW_COLUMNS,
    append_decision,
    apply_decisions,
    distilled_root,
    read_decisions,
    scan_examples,
)
from distill_assets.defs.telemetry import witness
from distill_assets.lib.settings import Settings

QUERY_WIDTH = 60
# ids named in the one-line error of an ambiguous prefix
AMBIGUOUS_SHOWN = 3
# What `list` shows of each example (all it reads: not the extracted structures).
LISTED_COLUMNS = tuple(dict.fromkeys([*PENDING_COLUMNS, *REVIEW_COLUMNS, "partition"]))
REVIEW_SOURCES = ("escalations", "telemetry")
# what `list --json` shows of a queued telemetry row
WITNESS_LISTED = ("id", "partition", "table", "config", "quality_score", "triggers", "decision")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `review` subcommand and its actions."""
    parser = subparsers.add_parser("review", help="review escalation examples or telemetry rows")
    parser.add_argument(
        "--source",
        choices=REVIEW_SOURCES,
        default="escalations",
        help="whose review queue: escalation examples or telemetry rows (Witness review)",
    )
    actions = parser.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="examples awaiting review")
    listing.add_argument("--json", action="store_true", help="machine-readable output")
    listing.add_argument("--all", action="store_true", help="include reviewed examples")
    show = actions.add_parser("show", help="one example in full")
    show.add_argument("id", help="the example id, or any unique prefix of it")
    for action in ("approve", "reject", "edit"):
        decide = actions.add_parser(
            action,
            help="correct an example's answer" if action == "edit" else f"{action} an example",
        )
        decide.add_argument("id", help="the example id, or any unique prefix of it")
        decide.add_argument("--notes", default=None, help="reviewer notes")
        decide.add_argument("--reviewer", default=None, help="who decides (default: $USER)")
        if action == "edit":
            decide.add_argument(
                "--response-file", required=True, help="file holding the corrected answer"
            )
    parser.set_defaults(func=run)


def _examples(settings: Settings, example_id: str | None = None) -> pl.DataFrame:
    """Every example's listed columns, or every column of the one example `example_id`."""
    if example_id is None:
        examples = scan_examples(settings.lake_root, LISTED_COLUMNS).collect()
    else:
        examples = scan_examples(settings.lake_root).filter(pl.col("id") == example_id).collect()
    if examples.is_empty():
        return examples
    decided = apply_decisions(examples, read_decisions(distilled_root(settings.data_dir)))
    return decided.with_columns(gate_reason().alias("held_back"))


def _table(rows: pl.DataFrame) -> str:
    header = (
        f"{'id':16}  {'date':10}  {'format':11}  {'score':>5}  {'flags':24}  "
        f"{'held back (approve to overturn)':30}  query"
    )
    lines = [header, "-" * len(header)]
    for row in rows.iter_rows(named=True):
        query = " ".join(row["query"].split())
        flags = ",".join(row["quality_flags"])
        held = row["held_back"] or "-"
        lines.append(
            f"{row['id']:16}  {row['partition']:10}  {row['training_format']:11}  "
            f"{row['quality_score']:5.2f}  {flags[:24]:24}  {held[:30]:30}  {query[:QUERY_WIDTH]}"
        )
    return "\n".join(lines)


def resolve_id(settings: Settings, prefix: str) -> str:
    """Return the one example id starting with `prefix`; raise `LookupError` (one line) if not."""
    ids = (
        scan_examples(settings.lake_root, ("id",))
        .filter(pl.col("id").cast(pl.String).str.starts_with(prefix))
        .select(pl.col("id").unique().sort())
        .collect()
        .get_column("id")
        .to_list()
    )
    if not ids:
        raise LookupError(f"unknown example id {prefix!r}")
    if len(ids) > 1:
        shown = ", ".join(ids[:AMBIGUOUS_SHOWN]) + (", ..." if len(ids) > AMBIGUOUS_SHOWN else "")
        raise LookupError(f"example id prefix {prefix!r} matches {len(ids)} examples: {shown}")
    return ids[0]


def _witness_table(rows: pl.DataFrame) -> str:
    header = f"{'id':16}  {'date':10}  {'table':14}  {'score':>5}  {'decision':8}  triggers"
    lines = [header, "-" * len(header)]
    for row in rows.iter_rows(named=True):
        lines.append(
            f"{row['id']:16}  {row['partition']:10}  {row['table']:14}  "
            f"{row['quality_score']:5.2f}  {row['decision'] or '-':8}  {','.join(row['triggers'])}"
        )
    return "\n".join(lines)


def run_witness(args: argparse.Namespace, settings: Settings) -> int:
    """Run one action on the telemetry Witness queue (`id`: any unique prefix of a queued row)."""
    if args.action == "edit":
        print(
            "distill review: telemetry rows are approved or rejected, not edited", file=sys.stderr
        )
        return 2
    queued = witness.queue(settings.lake_root, witness.read_decisions(settings.data_dir))
    if args.action == "list":
        rows = queued if args.all else queued.filter(pl.col("decision").is_null())
        if args.json:
            print(json.dumps(rows.select(WITNESS_LISTED).to_dicts(), indent=2))
        else:
            print(_witness_table(rows) if rows.height else "no telemetry rows awaiting review")
        return 0
    matches = queued.filter(pl.col("id").str.starts_with(args.id))
    if matches.height != 1:
        what = "matches no queued telemetry row" if matches.is_empty() else "is ambiguous"
        print(f"distill review: telemetry row id {args.id!r} {what}", file=sys.stderr)
        return 1
    row = matches.row(0, named=True)
    if args.action == "show":
        print(json.dumps(row, indent=2, sort_keys=True, default=str))
        return 0
    reviewer = args.reviewer or getpass.getuser()
    witness.append_decision(
        settings.data_dir,
        row["id"],
        args.action,
        notes=args.notes,
        reviewer=reviewer,
        ts=time.time(),
    )
    print(
        f"{args.action.rstrip('e')}ed telemetry row {row['id']} by {reviewer}"
        + (f": {args.notes}" if args.notes else "")
    )
    return 0


def run(args: argparse.Namespace) -> int:
    """Run one review action (`id`: any unique prefix); exit 1 with a one-line error if unknown."""
    settings = Settings.resolve()
    if args.source == "telemetry":
        return run_witness(args, settings)
    if args.action != "list":
        try:
            args.id = resolve_id(settings, args.id)
        except LookupError as error:
            print(f"distill review: {error}", file=sys.stderr)
            return 1
    examples = _examples(settings, None if args.action == "list" else args.id)
    if args.action == "list":
        rows = (
            examples
            if args.all or examples.is_empty()
            else examples.filter(pl.col("human_reviewed") == 0)
        )
        rows = rows.sort("partition", "id") if not rows.is_empty() else rows
        if args.json:
            columns = [
                *PENDING_COLUMNS,
                "partition",
                "human_reviewed",
                "reviewer_notes",
                "held_back",
            ]
            print(json.dumps(rows.select(columns).to_dicts() if rows.height else [], indent=2))
        else:
            print(_table(rows) if rows.height else "no examples awaiting review")
        return 0
    found = examples.filter(pl.col("id") == args.id) if not examples.is_empty() else examples
    if found.is_empty():
        print(f"distill review: unknown example id {args.id!r}", file=sys.stderr)
        return 1
    if args.action == "show":
        print(json.dumps(found.row(0, named=True), indent=2, sort_keys=True, default=str))
        return 0
    reviewer = args.reviewer or getpass.getuser()
    response = (
        Path(args.response_file).read_text(encoding="utf-8") if args.action == "edit" else None
    )
    line = append_decision(
        distilled_root(settings.data_dir),
        args.id,
        args.action,
        notes=args.notes,
        reviewer=reviewer,
        ts=time.time(),
        response=response,
    )
    print(
        f"{args.action.rstrip('e')}ed {args.id} by {reviewer}"
        + (f": {args.notes}" if args.notes else "")
    )
    return 0 if line else 1
