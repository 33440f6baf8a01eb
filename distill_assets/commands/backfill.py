"""`distill backfill`: rebuild a range of ingest dates, or exactly what `distill stale` lists.

`--stale` launches the stale asset partitions (only those: other assets of a partition are not
re-run), then the stale unpartitioned assets (curation, release), which publishes the release;
a stale asset made by one op with others that must be materialized together (the curation
multi-asset) brings them all.
Without `--stale`, every ingest asset of each date with raw data in `--from`..`--to` is rebuilt,
then the release job runs. When a Dagster daemon is alive on the project's instance (`make ui`;
`operations.daemon.daemon_alive`: a heartbeat seconds old, or a new one within the heartbeat
interval), the plan is submitted to it as one Dagster asset backfill (see it under "Backfills");
otherwise (said on one line), or with `--in-process`, runs execute here on the project's instance
(visible in the UI), one progress line per partition and asset, under the data dir's run lock
(another writer: exit 3).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

import dagster as dg
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph

from distill_assets.lib.runlock import LockHeld, run_lock
from distill_assets.lib.settings import Settings
from distill_assets.lib.startup import startup_settings
from distill_assets.operations.dates import DateError, check_order, days_in, parse_day

PREFIX = "[distill]"
# partition (None: the release job) -> asset keys to run (None: the whole job)
Plan = dict[str | None, list[dg.AssetKey] | None]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `backfill` subcommand."""
    parser = subparsers.add_parser(
        "backfill", help="rebuild stale asset partitions (--stale) or a date range, then release"
    )
    parser.add_argument(
        "--stale", action="store_true", help="rebuild exactly what `distill stale` lists"
    )
    parser.add_argument("--from", dest="start", default=None, help="first date (YYYY-MM-DD)")
    parser.add_argument("--to", dest="end", default=None, help="last date (YYYY-MM-DD)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run here even when a Dagster daemon is running (default: hand it the backfill)",
    )
    parser.add_argument("--verbose", action="store_true", help="show Dagster's run logs")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Plan the backfill, print it, and (unless `--dry-run`) run it."""
    try:
        start = parse_day(args.start, "--from") if args.start else None
        end = parse_day(args.end, "--to") if args.end else None
        if start and end:
            check_order(start, end)
        if not args.stale and not (start and end):
            raise DateError("give --stale, or a range with --from and --to")
    except DateError as error:
        print(f"distill backfill: {error}", file=sys.stderr)
        return 2
    settings = startup_settings(PREFIX)
    if settings is None:
        return 2
    from distill_assets.definitions import defs
    from distill_assets.operations.instance import project_instance

    definitions = defs()
    with project_instance(settings) as instance:
        if args.stale:
            plan = stale_plan(instance, definitions, args.start, args.end)
        else:
            plan = range_plan(settings, days_in(start, end))  # type: ignore[arg-type]
        if not plan:
            print(f"{PREFIX} nothing to backfill")
            return 0
        for partition, keys in plan.items():
            names = ", ".join(k.to_user_string() for k in keys) if keys else "all assets"
            print(f"{PREFIX} plan {partition or 'release'}: {names}")
        if args.dry_run:
            return 0
        return launch(args, instance, definitions, plan, settings)


def launch(
    args: argparse.Namespace,
    instance: dg.DagsterInstance,
    definitions: dg.Definitions,
    plan: Plan,
    settings: Settings,
) -> int:
    """Hand the plan to a live daemon, else run it here under the data dir's run lock."""
    from distill_assets.operations.daemon import (
        daemon_alive,
        daemon_gone,
        daemon_running,
        last_heartbeat,
    )

    if not args.in_process:
        beat = last_heartbeat(instance)
        if beat is not None and not daemon_running(instance) and not daemon_gone(instance):
            age = int(time.time() - beat)
            print(f"{PREFIX} the Dagster daemon's last heartbeat is {age} s old: waiting for one")
        if daemon_alive(instance):
            return submit_plan(instance, definitions, plan)
        print(f"{PREFIX} no Dagster daemon is running: running the backfill in this process")
    try:
        with run_lock(settings.data_dir):
            from distill_assets.operations.instance import recover

            for line in recover(instance):
                print(f"{PREFIX} {line}")
            return execute_plan(instance, definitions, plan, settings, args.verbose)
    except LockHeld as exc:
        print(f"{PREFIX} {exc}: not starting")
        return 3


def stale_plan(
    instance: dg.DagsterInstance, definitions: dg.Definitions, start: str | None, end: str | None
) -> Plan:
    """Group the stale entries by partition (None for unpartitioned), within the date range.

    The unpartitioned assets come with every asset their op must materialize with them.
    """
    from distill_assets.lib.stale import find_stale

    graph = definitions.resolve_asset_graph()
    plan: dict[str | None, list[dg.AssetKey]] = defaultdict(list)
    for entry in find_stale(instance, graph):
        if entry.partition is not None and (
            (start and entry.partition < start) or (end and entry.partition > end)
        ):
            continue
        plan[entry.partition].append(entry.key)
    ordered: Plan = {p: plan[p] for p in sorted(k for k in plan if k is not None)}
    if plan.get(None):
        ordered[None] = with_execution_sets(graph, plan[None])
    return ordered


def with_execution_sets(graph: BaseAssetGraph, keys: list[dg.AssetKey]) -> list[dg.AssetKey]:
    """Return `keys`, in order, each followed by the assets its op must materialize with it."""
    found: dict[dg.AssetKey, None] = {}
    for key in keys:
        found[key] = None
        for other in sorted(
            graph.get_execution_set_asset_and_check_keys(key), key=lambda k: k.to_user_string()
        ):
            if isinstance(other, dg.AssetKey):
                found[other] = None
    return list(found)


def range_plan(settings: Settings, days: list[str]) -> Plan:
    """Every ingest asset of each date in `days` that has raw files, then the whole release."""
    from distill_assets.defs.partitions import days_with_raw_files

    present = set(days_with_raw_files(settings.raw_root))
    plan: Plan = {day: None for day in days if day in present}
    if plan:
        plan[None] = None
    return plan


def submit_plan(instance: dg.DagsterInstance, definitions: dg.Definitions, plan: Plan) -> int:
    """Submit the plan to the running daemon as one asset backfill; print its id."""
    from distill_assets.defs.jobs import INGEST_JOB, RELEASE_JOB
    from distill_assets.defs.release.sensors import CLI_TAG
    from distill_assets.operations.daemon import submit_backfill

    graph = definitions.resolve_asset_graph()
    whole = {
        job: sorted(definitions.resolve_job_def(job).asset_layer.selected_asset_keys)
        for job in (INGEST_JOB, RELEASE_JOB)
    }
    explicit = {
        partition: keys
        if keys is not None
        else whole[RELEASE_JOB if partition is None else INGEST_JOB]
        for partition, keys in plan.items()
    }
    backfill_id = submit_backfill(
        instance, graph, explicit, tags={CLI_TAG: "backfill"}, title="distill backfill"
    )
    print(f"{PREFIX} a Dagster daemon is running: submitted backfill {backfill_id}")
    print(f"{PREFIX} follow it in the UI under Overview → Backfills")
    return 0


def execute_plan(
    instance: dg.DagsterInstance,
    definitions: dg.Definitions,
    plan: Plan,
    settings: Settings,
    verbose: bool,
) -> int:
    """Run each partition's assets, then (if every partition succeeded) the release assets."""
    from distill_assets.defs.jobs import INGEST_JOB, RELEASE_JOB
    from distill_assets.operations.launch import execute, quarantine_line

    ok = True
    for partition, keys in plan.items():
        if partition is None:
            continue
        result = execute(
            definitions,
            INGEST_JOB,
            instance,
            partition=partition,
            assets=keys,
            verbose=verbose,
            command="backfill",
        )
        if keys is None:
            print(f"{PREFIX} {quarantine_line(settings.lake_root, partition)}")
        ok &= result.success
    if None not in plan:
        return 0 if ok else 1
    if not ok:
        print(f"{PREFIX} a partition failed: not releasing (see the run in `make ui`)")
        return 1
    result = execute(
        definitions, RELEASE_JOB, instance, assets=plan[None], verbose=verbose, command="backfill"
    )
    return 0 if result.success else 1
