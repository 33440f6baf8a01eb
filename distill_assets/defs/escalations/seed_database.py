"""The seed's SQLite database in two steps: staged beside curation, finished after the publish.

`distilled/distillation.db` (compat.py) holds every example with review decisions applied and
`export_count`/`last_exported_at` from the export history. Almost none of it depends on the
version being published, only the export counts of the examples that version publishes, so:

- **Stage** (`stage_database`, `escalations/seed_database`, beside curation): harvest the live
  database (working_store.py), then write the whole database as the single rewrite writes it,
  with the export counts of the history recorded so far and no change log, into
  `distilled/.distillation.staged.db` (the same folder: the final rename is atomic). What it was
  built from goes into the sidecar `.distillation.staged.json`: the examples' partition files
  fingerprint (`lake.feed_fingerprint`), the decisions file's length and digest at the last
  complete line, the history's versions, and the ids of the rows kept from the live database.
- **Finish** (`finish_database`, `escalations/export_history`, after the publish): harvest the
  live database again (changes made since the stage are not lost), and when the staged file is
  current apply to it only what changed since: the kept rows (as the live database has them
  now), the review state of the examples with a decision line appended since or a change in the
  live database (`apply_decisions` on their latest lake row), and the export counts of the
  examples the published version holds (`with_export_counts` over the whole history); then
  install the change log, remove the sidecar and rename the file into place. When the staged
  file is missing or stale the database is rewritten whole (logged in one line why).

Either way the file holds the same rows, schema objects and empty change log as one rewrite
from the same inputs (tests/unit/escalations/test_seed_database.py). Rows another writer
inserted that the stage already landed as raw lines are not landed twice.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
from upath import UPath

from distill_assets.contracts.escalations import SEED_SQLITE_COLUMNS
from distill_assets.defs.escalations.compat import with_export_counts, write_seed_sqlite
from distill_assets.defs.escalations.examples import BATCH_ROWS
from distill_assets.defs.escalations.review import (
    EXAMPLES,
    SOURCE,
    apply_decisions,
    decisions_path,
    example_partitions,
    read_decisions,
    scan_examples,
)
from distill_assets.defs.escalations.working_store import (
    database_decisions,
    database_path,
    harvest,
    inserted_rows,
    install_change_log,
)
from distill_assets.lib.lake import feed_fingerprint, partition_files

STAGED_NAME = ".distillation.staged.db"
SIDECAR_NAME = ".distillation.staged.json"
# what a decision changes in the seed's table (`apply_decisions`)
REVIEWED_COLUMNS = ("human_reviewed", "reviewer_notes", "claude_response", "training_ready")
EXAMPLE_COLUMNS = (*SEED_SQLITE_COLUMNS, "answer_rejection")


@dataclass(frozen=True)
class Harvested:
    """The live database read back: counts carried, rows to keep, the decisions to apply."""

    counts: dict[str, int]
    kept: pl.DataFrame
    decisions: pl.DataFrame


@dataclass(frozen=True)
class Built:
    """What a staged database was built from (its sidecar)."""

    examples: str
    decisions_bytes: int
    decisions_sha256: str
    versions: list[str]
    kept: list[str]


@dataclass(frozen=True)
class Written:
    """A finished database: its rows, what the harvest carried, and why it was rewritten whole."""

    rows: int
    counts: dict[str, int]
    rewritten_because: str | None


def staged_path(root: Path) -> Path:
    """Return the staged database next to `distilled/distillation.db`."""
    return root / STAGED_NAME


def _sidecar_path(root: Path) -> Path:
    return root / SIDECAR_NAME


def examples_fingerprint(lake_root: str) -> str:
    """Return the fingerprint of every `distillation_examples` partition file."""
    return feed_fingerprint([UPath(f) for f in partition_files(lake_root, SOURCE, EXAMPLES)])


def _decisions_prefix(path: Path) -> bytes:
    """Return the decisions file up to its last complete line (empty when there is none)."""
    data = path.read_bytes() if path.exists() else b""
    return data[: data.rfind(b"\n") + 1]


def harvest_database(
    lake_root: str, raw_root: str, root: Path, landed: Iterable[str] = ()
) -> Harvested:
    """Carry the live database's changes over (`working_store.harvest`) and read what to write.

    Inserted rows whose id the lake knows are not kept (the lake's row is written); those in
    `landed` (the stage landed them already) are kept but not landed again.
    """
    inserted = inserted_rows(root)
    # which of the inserted rows' ids the lake knows (not every id of the lake)
    known = set(
        scan_examples(lake_root, ["id"])
        .filter(pl.col("id").is_in(inserted.get_column("id").to_list()))
        .select("id")
        .collect()
        .get_column("id")
        .to_list()
    )
    counts = harvest(root, decisions_path(root), raw_root, known | set(landed))
    kept = inserted.filter(~pl.col("id").is_in(list(known)))
    return Harvested(counts, kept, read_decisions(root))


def seed_batches(
    lake_root: str, decisions: pl.DataFrame, history: pl.DataFrame
) -> Iterator[pl.DataFrame]:
    """Yield every partition's examples, decisions and export counts applied, a batch at a time."""
    for batch in example_partitions(lake_root, EXAMPLE_COLUMNS, BATCH_ROWS):
        yield with_export_counts(apply_decisions(batch, decisions), history)


def rewrite_database(
    lake_root: str, raw_root: str, root: Path, history: pl.DataFrame, landed: Iterable[str] = ()
) -> Written:
    """Harvest the live database and rewrite it whole from the lake (the single-step path)."""
    harvested = harvest_database(lake_root, raw_root, root, landed)
    rows = write_seed_sqlite(
        seed_batches(lake_root, harvested.decisions, history), database_path(root), harvested.kept
    )
    return Written(rows, harvested.counts, None)


def stage_database(lake_root: str, raw_root: str, root: Path, history: pl.DataFrame) -> Written:
    """Harvest the live database and write the whole database staged, with what it was built from.

    `history` is the export history recorded so far. The staged file has no change log; a
    previous staged file and its sidecar are removed first, so a crash leaves no sidecar that
    names another file's inputs.
    """
    sidecar = _sidecar_path(root)
    sidecar.unlink(missing_ok=True)
    staged_path(root).unlink(missing_ok=True)
    examples = examples_fingerprint(lake_root)
    harvested = harvest_database(lake_root, raw_root, root)
    # read after the harvest appended, before the decisions: a line appended in between is
    # past the recorded length, so the finish applies it again
    prefix = _decisions_prefix(decisions_path(root))
    decisions = read_decisions(root)
    rows = write_seed_sqlite(
        seed_batches(lake_root, decisions, history),
        staged_path(root),
        harvested.kept,
        change_log=False,
    )
    built = Built(
        examples=examples,
        decisions_bytes=len(prefix),
        decisions_sha256=hashlib.sha256(prefix).hexdigest(),
        versions=sorted(set(history.get_column("version").to_list())),
        kept=sorted(harvested.kept.get_column("id").to_list()),
    )
    tmp = sidecar.with_name(f"{sidecar.name}.tmp")
    tmp.write_text(json.dumps(built.__dict__, sort_keys=True), encoding="utf-8")
    tmp.replace(sidecar)
    return Written(rows, harvested.counts, None)


def read_built(root: Path) -> Built | None:
    """Return what the staged database was built from, or None without a readable sidecar."""
    try:
        return Built(**json.loads(_sidecar_path(root).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def stale_reason(
    built: Built | None, lake_root: str, root: Path, versions: Iterable[str]
) -> str | None:
    """Return why the staged database cannot be finished, or None when it is current.

    `versions` are the history's versions before the published one was recorded.
    """
    if built is None or not staged_path(root).exists():
        return "is missing"
    if built.examples != examples_fingerprint(lake_root):
        return "was built from other examples partitions"
    prefix = _decisions_prefix(decisions_path(root))[: built.decisions_bytes]
    if (
        len(prefix) != built.decisions_bytes
        or hashlib.sha256(prefix).hexdigest() != built.decisions_sha256
    ):
        return "was built from a decisions file since rewritten"
    if built.versions != sorted(set(versions)):
        return "was built from another export history"
    return None


def _appended_ids(root: Path, offset: int) -> set[str]:
    """Return the ids of the decision lines past `offset` of the decisions file."""
    path = decisions_path(root)
    if not path.exists():
        return set()
    with path.open("rb") as handle:
        handle.seek(offset)
        tail = handle.read()
    ids = set()
    for line in tail.splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and value.get("id") is not None:
            ids.add(str(value["id"]))
    return ids


def _reviewed_rows(lake_root: str, ids: set[str], decisions: pl.DataFrame) -> pl.DataFrame:
    """Return (REVIEWED_COLUMNS, id) of the latest lake row of `ids`, decisions applied."""
    if not ids:
        return pl.DataFrame(schema={c: pl.Null() for c in (*REVIEWED_COLUMNS, "id")})
    rows = (
        scan_examples(lake_root, EXAMPLE_COLUMNS)
        .filter(pl.col("id").is_in(sorted(ids)))
        .collect()
        # partitions come oldest first: the latest partition's row (the later one within one)
        .unique("id", keep="last", maintain_order=True)
    )
    return apply_decisions(rows, decisions).select(*REVIEWED_COLUMNS, "id").sort("id")


def finish_database(
    lake_root: str,
    raw_root: str,
    root: Path,
    history: pl.DataFrame,
    *,
    versions: Iterable[str],
    published: Iterable[str],
) -> Written:
    """Finish the staged database into `distilled/distillation.db`, or rewrite it whole.

    `history` is the whole export history (the published version recorded), `versions` its
    versions before that, `published` the example ids of the published version.
    """
    built = read_built(root)
    landed = built.kept if built is not None else []
    reason = stale_reason(built, lake_root, root, versions)
    if built is None or reason is not None:
        _sidecar_path(root).unlink(missing_ok=True)
        staged_path(root).unlink(missing_ok=True)
        written = rewrite_database(lake_root, raw_root, root, history, landed)
        return Written(written.rows, written.counts, reason)
    harvested = harvest_database(lake_root, raw_root, root, landed)
    changed = _appended_ids(root, built.decisions_bytes) | set(
        database_decisions(root).get_column("id").to_list()
    )
    reviewed = _reviewed_rows(lake_root, changed, harvested.decisions)
    kept_ids = set(harvested.kept.get_column("id").to_list())
    counted = with_export_counts(
        pl.DataFrame({"id": sorted(set(published) - kept_ids)}, schema={"id": pl.String()}),
        history,
    )
    staged = staged_path(root)
    con = sqlite3.connect(staged)
    try:
        con.executemany(
            "DELETE FROM distillation_examples WHERE id = ?", ((i,) for i in built.kept)
        )
        if not harvested.kept.is_empty():
            marks = ", ".join("?" * len(SEED_SQLITE_COLUMNS))
            con.executemany(
                f"INSERT OR IGNORE INTO distillation_examples VALUES ({marks})",
                harvested.kept.select(SEED_SQLITE_COLUMNS).iter_rows(),
            )
        assignments = ", ".join(f"{c} = ?" for c in REVIEWED_COLUMNS)
        con.executemany(
            f"UPDATE distillation_examples SET {assignments} WHERE id = ?", reviewed.iter_rows()
        )
        con.executemany(
            "UPDATE distillation_examples SET export_count = ?, last_exported_at = ? WHERE id = ?",
            counted.select("export_count", "last_exported_at", "id").iter_rows(),
        )
        install_change_log(con)
        con.commit()
        rows = con.execute("SELECT count(*) FROM distillation_examples").fetchone()[0]
    finally:
        con.close()
    _sidecar_path(root).unlink()
    staged.replace(database_path(root))
    return Written(rows, harvested.counts, None)
