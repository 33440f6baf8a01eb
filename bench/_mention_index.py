"""The deletion's mention redaction with and without silver's mention index, on a kept night.

Not part of `make bench`: it needs a kept night's lake (`bench.night --keep`), read only: each
run works on a hard-linked copy (`cp -al`; the lake writes atomically, so the copy's rewrites
never touch the original) without its deletion log, so every request is new.

1. **The index** (what silver gains in cost): the day's known-player tokens as silver finds them
   (`privacy.player_tokens`, timed for reference: silver runs it anyway), then what silver adds:
   the index's fingerprint, the keys the tokens name (`mention_index.mentioned_keys`) and the
   write.
2. **Night 1**, every request new: the deletion's bronze steps as `telemetry_deletion_log` runs
   them (`plan` with the index only, `remove_players`, `redact_mentions`, `restamp`, then
   `remove_withdrawn`, `remaining_rows`), without and with the index.
3. **Night 2**: night 1 without the `--held` deleted players the index lists in no day, then a
   night of their requests only: the steady state of a night whose new requests name players
   the history's texts do not mention.

    nice -n 19 python -m bench._mention_index --lake /work/lakes/night2/data/lake \
        --scratch /tmp/mention-bench --repeats 2

Prints one JSON object of wall (and process CPU) seconds per run, and whether the bronze and
quarantine files after each night are the same with and without the index.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from distill_assets.defs.player_ids import DEVELOPMENT_KEY, ResolvedKey
from distill_assets.defs.telemetry import deletion, mention_index, privacy
from distill_assets.lib.lake import partition_files
from distill_assets.lib.sql import connect


def _timed(times: dict[str, float], name: str, step: Callable[[], object]) -> object:
    """Run `step`; record its wall seconds as `name` and its CPU seconds as `name cpu`."""
    start, cpu = time.perf_counter(), time.process_time()
    result = step()
    times[name] = round(time.perf_counter() - start, 2)
    times[f"{name} cpu"] = round(time.process_time() - cpu, 2)
    return result


def fresh_copy(lake: Path, target: Path, index: Path | None) -> Path:
    """Return a hard-linked copy of `lake` without its deletion log, with `index` if given."""
    if target.exists():
        shutil.rmtree(target)
    subprocess.run(["cp", "-al", str(lake), str(target)], check=True)
    (target / "telemetry" / "deletion_log.parquet").unlink(missing_ok=True)
    shutil.rmtree(target / mention_index.INDEX_FOLDER, ignore_errors=True)
    if index is not None:
        shutil.copytree(index, target / mention_index.INDEX_FOLDER)
    return target


def stores(lake: Path) -> dict[str, str]:
    """Return the sha256 of every bronze and quarantine file of `lake`."""
    return {
        f"{table}/{path.name}": hashlib.sha256(path.read_bytes()).hexdigest()
        for table in deletion.MENTION_COLUMNS
        for path in sorted((lake / "telemetry" / table).glob("*.parquet"))
    }


def build_index(lake: Path, pads: dict[str, bytes]) -> dict[str, float]:
    """Write every bronze day's mention index into `lake` as silver does; return the times."""
    times: dict[str, float] = {}
    root = str(lake)
    for path in partition_files(root, "telemetry", "events"):
        day = Path(path).stem
        con = connect(private=True)
        try:
            known = pl.concat(
                pl.scan_parquet(f).select("player_key")
                for f in partition_files(root, "telemetry", "events")
                if Path(f).stem <= day
            )
            con.register("known", known.unique().collect().to_arrow())
            con.read_parquet(path).select("payload").create_view("events")
            tokens = _timed(
                times, f"{day} tokens", functools.partial(privacy.player_tokens, con, pads)
            )
            start = time.perf_counter()
            index = mention_index.day_index(root, day)
            keys = mention_index.mentioned_keys(con, tokens, pads)
            mention_index.write_index(index, keys)
            times[f"{day} index"] = round(time.perf_counter() - start, 3)
            times[f"{day} tokens found"] = len(tokens)
            times[f"{day} keys indexed"] = len(keys)
        finally:
            con.close()
    return times


def night(
    lake: Path, players: list[str], pads: dict[str, bytes], consent: pl.DataFrame, indexed: bool
) -> dict[str, float]:
    """Run the deletion's lake steps for `players` (all new) as the asset does; return times."""
    root = str(lake)
    times: dict[str, float] = {}
    start = time.perf_counter()
    plan = (
        _timed(times, "plan", lambda: mention_index.plan_redaction(root, players))
        if indexed
        else mention_index.MentionPlan(frozenset(), {})
    )
    _timed(times, "remove_players", lambda: deletion.remove_players(root, players))
    changed = _timed(
        times,
        "redact_mentions",
        lambda: deletion.redact_mentions(root, players, pads, skipped=plan.skipped),
    )
    if indexed:
        _timed(times, "restamp", lambda: mention_index.restamp(root, plan, players))
    withdrawn = consent.filter(~pl.col("granted")).select("player_key", "data_type")
    _timed(times, "remove_withdrawn", lambda: deletion.remove_withdrawn(root, withdrawn))
    _timed(times, "remaining_rows", lambda: deletion.remaining_rows(root, players))
    times["total"] = round(time.perf_counter() - start, 2)
    times["mentions_redacted"] = changed
    times["bronze_skipped"] = len(plan.skipped)
    return times


def main() -> None:
    """Measure and print the runs (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lake", type=Path, required=True)
    parser.add_argument("--scratch", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--held", type=int, default=10)
    args = parser.parse_args()
    pads = ResolvedKey(DEVELOPMENT_KEY.encode(), "development-default").sql_params()
    args.scratch.mkdir(parents=True, exist_ok=True)
    deletions = pl.read_parquet(args.lake / "telemetry" / "deletions.parquet")
    players = privacy.deleted_players(deletions.lazy()).collect().to_series().to_list()
    consent = pl.read_parquet(args.lake / "telemetry" / "consent.parquet")

    base = fresh_copy(args.lake, args.scratch / "base", None)
    report: dict[str, object] = {"index": build_index(base, pads)}
    index = base / mention_index.INDEX_FOLDER
    named = {
        key
        for path in index.rglob("*.parquet")
        for key in pl.read_parquet(path).to_series().to_list()
    }
    held = sorted(p for p in players if p not in named)[: args.held]
    report["deleted players"] = len(players)
    report["deleted players some index lists"] = len(set(players) & named)
    runs: list[dict[str, object]] = []
    for repeat in range(args.repeats):
        digests: dict[str, dict[str, str]] = {}
        for indexed in (False, True):
            mode = "indexed" if indexed else "plain"
            with_index = index if indexed else None
            lake = fresh_copy(args.lake, args.scratch / f"first-{mode}", with_index)
            first = night(lake, players, pads, consent, indexed)
            digests[f"first-{mode}"] = stores(lake)
            lake = fresh_copy(args.lake, args.scratch / f"second-{mode}", with_index)
            rest = [p for p in players if p not in held]
            before = night(lake, rest, pads, consent, indexed)
            second = night(lake, held, pads, consent, indexed)
            digests[f"second-{mode}"] = stores(lake)
            runs.append(
                {
                    "repeat": repeat,
                    "index": indexed,
                    "night 1 (all new)": first,
                    "night 1 without the held": before,
                    f"night 2 ({len(held)} held)": second,
                }
            )
            print(json.dumps(runs[-1]), flush=True)
        for name in ("first", "second"):
            same = digests[f"{name}-plain"] == digests[f"{name}-indexed"]
            runs.append({"repeat": repeat, f"{name} night: bronze and quarantine identical": same})
            print(json.dumps(runs[-1]), flush=True)
            for mode in ("plain", "indexed"):
                shutil.rmtree(args.scratch / f"{name}-{mode}", ignore_errors=True)
    report["runs"] = runs
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
