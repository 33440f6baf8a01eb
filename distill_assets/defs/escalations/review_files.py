"""The seed's review folders, rewritten where something changed (docs/sources/escalations.md).

- `pending_review/batch_YYYYMMDD.json` — per partition (ingest date) of `distillation_examples`,
  its examples still awaiting review (`human_reviewed` = 0 and no decision), sorted by id, as
  `json.dumps(rows, indent=2, sort_keys=True)`; no file when nothing awaits review.
- `approved/reviewed_YYYYMMDD.jsonl` — per decision date (UTC), the examples with a decision,
  by decision time.

A batch depends only on its partition's file and on which of its ids have a decision, so it is
rewritten only when one of those changed (the partition's Parquet footer fingerprint, the
decided ids found in it), or when its file is not the one last written (deleted or edited by
hand: size or modification time differ); the others are kept without their partition being
read. A changed partition is read once, batch by batch; its pending examples are sorted into
id-ordered slices of about `SLICE_BYTES` (spilled to Arrow files when there are several) and
written as they are encoded (`lib/json_text.py`), so memory holds one slice, not the day.

The decided examples (`id`, `partition`, `source_ref`, `query`, `claude_response`: what the
reviewed files show) are kept in `review/review_files.parquet`, with, in its footer, each
partition's fingerprint and each written file's digest, size and time. A night reads, besides
the footers: the changed partitions, and the `id` column of the others only when some decided
id is new. The state is written last, atomically: after a crash it still describes the files
the previous run wrote, so every file written since is seen as changed and written again.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
from pyarrow import ipc
from upath import UPath

from distill_assets.defs.escalations.review import EXAMPLES, PENDING_COLUMNS, SOURCE
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.json_text import json_objects, write_json_array, write_json_lines
from distill_assets.lib.lake import (
    feed_fingerprint,
    is_remote,
    parquet_file,
    parquet_key_values,
    partition_files,
)

PENDING_FOLDER = "pending_review"
REVIEWED_FOLDER = "approved"
REVIEWED_COLUMNS = (
    "id",
    "source_ref",
    "decision",
    "notes",
    "reviewer",
    "ts",
    "query",
    "claude_response",
)
# what is kept of each decided example (the reviewed files' columns that are the example's)
DECIDED_SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "partition": pl.String(),
        "source_ref": pl.String(),
        "query": pl.String(),
        "claude_response": pl.String(),
    }
)
STATE_FILE = "review_files.parquet"
STATE_KEY = b"distill.review_files"
# a change of the files' format or of what a batch is made from rewrites every file
STATE_FORMAT = "1"
# the in-memory bytes of a partition's pending examples read at once (estimated from its first
# `SAMPLE_ROWS` rows)
SLICE_BYTES = 64 * 1024 * 1024
SAMPLE_ROWS = 8192
# rows encoded at once
ENCODE_ROWS = 2000


COUNTS = (
    "pending_batches_written",
    "pending_batches_kept",
    "pending_batches_deleted",
    "reviewed_files_written",
    "reviewed_files_kept",
    "reviewed_files_deleted",
    "partitions_read",
    "partitions_id_scanned",
)


@dataclass
class Written:
    """What a refresh listed, and the files it wrote, kept and deleted (counts only)."""

    pending: int = 0
    reviewed: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTS, 0))

    def count(self, key: str, n: int = 1) -> None:
        """Add `n` to the count `key`."""
        self.counts[key] += n


def state_path(root: Path) -> Path:
    """Return the refresh's state file under the `distilled/` folder."""
    return root / "review" / STATE_FILE


def _read_state(root: Path) -> tuple[pl.DataFrame, dict]:
    path = state_path(root)
    meta = json.loads(parquet_key_values(UPath(path)).get(STATE_KEY, b"{}"))
    if meta.get("format") != STATE_FORMAT:
        return pl.DataFrame(schema=DECIDED_SCHEMA), {"partitions": {}, "files": {}}
    return pl.read_parquet(path), meta


def _write_state(root: Path, decided: pl.DataFrame, meta: dict) -> None:
    path = state_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    table = decided.to_arrow()
    table = table.replace_schema_metadata({STATE_KEY: json.dumps(meta, sort_keys=True)})
    partial = path.with_name(f".{path.name}.partial")
    pq.write_table(table, partial, compression="zstd")
    partial.replace(path)


def _stat(path: Path) -> dict[str, int] | None:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _current(path: Path, recorded: dict | None, digest: str) -> bool:
    """Whether `path` is the file last written from the inputs `digest` (absent: no file)."""
    if recorded is None or recorded.get("digest") != digest:
        return False
    return _stat(path) == recorded.get("stat")


def _decided_rows(scan: pl.LazyFrame, ids: pl.Series, partition: str) -> pl.DataFrame:
    return (
        scan.filter(pl.col("id").is_in(ids.implode()))
        .select(*(c for c in DECIDED_SCHEMA if c != "partition"))
        .with_columns(pl.lit(partition).alias("partition"))
        .select(DECIDED_SCHEMA.names())
        .collect(engine="streaming")
    )


def _decided(
    files: dict[str, str],
    changed: set[str],
    decided_ids: pl.Series,
    previous: pl.DataFrame,
    written: Written,
) -> pl.DataFrame:
    """Return the decided examples per partition: kept for unchanged ones, else read."""
    unchanged = [p for p in files if p not in changed]
    kept = previous.filter(
        pl.col("partition").is_in(unchanged) & pl.col("id").is_in(decided_ids.implode())
    )
    # an id searched before has all its rows in unchanged partitions among `previous` (each
    # partition is searched for every decided id when it first appears or changes)
    new_ids = decided_ids.filter(~decided_ids.is_in(previous.get_column("id").implode()))
    parts = [kept]
    for partition in changed:
        parts.append(_decided_rows(pl.scan_parquet(files[partition]), decided_ids, partition))
        written.count("partitions_read")
    if new_ids.len():
        for partition in unchanged:
            scan = pl.scan_parquet(files[partition])
            hits = scan.select("id").filter(pl.col("id").is_in(new_ids.implode())).collect()
            written.count("partitions_id_scanned")
            if hits.height:
                parts.append(_decided_rows(scan, hits.get_column("id"), partition))
    found = pl.concat(parts)
    missing = decided_ids.filter(~decided_ids.is_in(found.get_column("id").implode()))
    not_found = pl.DataFrame({"id": missing}).with_columns(
        pl.lit(None, dtype=t).alias(c) for c, t in DECIDED_SCHEMA.items() if c != "id"
    )
    return pl.concat([found, not_found]).sort("partition", "id", nulls_last=True)


def _pending_keys(path: str, decided: pl.Series) -> tuple[pl.DataFrame, int]:
    """Return where each pending example of a partition goes, and the number of slices.

    A row per pending example: its row in the file (`_row`), its slice (`_slice`) and its
    place in id order (`_order`). Only the `id` and `human_reviewed` columns are read; a slice
    holds about `SLICE_BYTES` of examples (their size estimated from the first rows).
    """
    keys = (
        pl.scan_parquet(path)
        .select("id", "human_reviewed")
        .with_row_index("_row")
        .filter((pl.col("human_reviewed") == 0) & ~pl.col("id").is_in(decided.implode()))
        .select("id", "_row")
        .collect(engine="streaming")
        .sort("id", "_row")
        .select("_row")
        .with_row_index("_order")
    )
    sample = pl.scan_parquet(path).select(PENDING_COLUMNS).head(SAMPLE_ROWS).collect()
    row_bytes = sample.estimated_size() / max(sample.height, 1)
    slices = max(1, math.ceil(keys.height * row_bytes / SLICE_BYTES))
    size = max(1, math.ceil(keys.height / slices))
    return keys.with_columns((pl.col("_order") // size).cast(pl.Int64).alias("_slice")), slices


def _in_order(rows: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """Yield `rows` (a slice) by `_order`, `ENCODE_ROWS` at a time, as `PENDING_COLUMNS`."""
    order = rows.get_column("_order").arg_sort()
    pending = rows.select(PENDING_COLUMNS)
    for start in range(0, rows.height, ENCODE_ROWS):
        yield pending[order.slice(start, ENCODE_ROWS)]


def _picked(path: str, keys: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """Yield the pending rows of a partition as its batches are read (`_slice`, `_order`, ...)."""
    by_row = keys.sort("_row")
    rows = by_row.get_column("_row")
    offset = 0
    with parquet_file(UPath(path)) as parquet:
        batches = parquet.iter_batches(
            batch_size=ENCODE_ROWS,
            columns=list(PENDING_COLUMNS),
            use_threads=not is_remote(UPath(path)),
        )
        for record_batch in batches:
            end = offset + record_batch.num_rows
            low, high = rows.search_sorted(offset), rows.search_sorted(end)
            if high > low:
                wanted = by_row.slice(low, high - low)
                picked = pl.DataFrame(record_batch)[wanted.get_column("_row") - offset]
                yield pl.concat([wanted.select("_slice", "_order"), picked], how="horizontal")
            offset = end


def _pending_batches(path: str, decided: pl.Series) -> Iterator[pl.DataFrame]:
    """Yield a partition's pending examples (`PENDING_COLUMNS`) in id order, a batch at a time.

    One read of the partition, batch by batch: with one slice its pending rows are kept in
    memory; with several, each slice's rows go to an Arrow file of their own, then each slice
    is read back and sorted in turn, so memory holds one slice, not the day.
    """
    keys, slices = _pending_keys(path, decided)
    if keys.is_empty():
        return
    if slices == 1:
        yield from _in_order(pl.concat(_picked(path, keys)))
        return
    spill = working_dir("review-spill")
    try:
        writers: dict[int, ipc.RecordBatchFileWriter] = {}
        for batch in _picked(path, keys):
            for (number,), part in batch.partition_by("_slice", as_dict=True).items():
                table = part.drop("_slice").to_arrow()
                if number not in writers:
                    writers[number] = ipc.new_file(spill / f"{number}.arrow", table.schema)
                writers[number].write_table(table)
        for writer in writers.values():
            writer.close()
        for number in sorted(writers):
            yield from _in_order(pl.read_ipc(spill / f"{number}.arrow"))
            (spill / f"{number}.arrow").unlink()
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def _batch_name(partition: str) -> str:
    return f"{PENDING_FOLDER}/batch_{partition.replace('-', '')}.json"


def _remove_others(
    root: Path, folder: str, expected: set[str], written: Written, kind: str
) -> None:
    """Delete the `*.json*` files of a folder that are not `expected` (stale or left over)."""
    for path in sorted((root / folder).glob("*.json*")):
        if f"{folder}/{path.name}" not in expected:
            path.unlink()
            if not path.name.startswith("."):
                written.count(f"{kind}_deleted")


def _refresh_pending(
    root: Path,
    files: dict[str, str],
    fingerprints: dict[str, str],
    decided: pl.DataFrame,
    *,
    recorded: dict[str, dict],
    written: Written,
) -> dict[str, dict]:
    """Write the pending batches whose inputs changed; return every partition's file entry."""
    entries: dict[str, dict] = {}
    by_partition = decided.filter(pl.col("partition").is_not_null()).partition_by(
        "partition", as_dict=True
    )
    for partition, path in files.items():
        ids = by_partition.get((partition,), decided.clear()).get_column("id")
        name = _batch_name(partition)
        digest = hashlib.sha256(
            "\n".join([STATE_FORMAT, fingerprints[partition], *ids.to_list()]).encode()
        ).hexdigest()
        target = root / name
        entry = recorded.get(name)
        if entry is not None and _current(target, entry, digest):
            written.count("pending_batches_kept")
        else:
            existed = target.exists()
            rows = write_json_array(target, _pending_batches(path, ids))
            if rows:
                written.count("pending_batches_written")
            else:  # nothing awaits review: no file
                target.unlink()
                written.count("pending_batches_deleted", int(existed))
            entry = {"digest": digest, "rows": rows, "stat": _stat(target)}
        written.pending += entry["rows"]
        entries[name] = entry
    expected = {name for name, entry in entries.items() if entry["rows"]}
    _remove_others(root, PENDING_FOLDER, expected, written, "pending_batches")
    return entries


def _refresh_reviewed(
    root: Path,
    decided: pl.DataFrame,
    decisions: pl.DataFrame,
    recorded: dict[str, dict],
    written: Written,
) -> dict[str, dict]:
    """Write the reviewed files whose content changed; return every decision day's entry."""
    entries: dict[str, dict] = {}
    reviewed = (
        decided.filter(pl.col("partition").is_not_null())
        .join(decisions, on="id", how="inner")
        .sort("ts", "id", "partition")
        .with_columns(
            pl.from_epoch(pl.col("ts").cast(pl.Int64), time_unit="s")
            .dt.strftime("%Y%m%d")
            .alias("_day")
        )
    )
    written.reviewed = reviewed.height
    for (day,), batch in reviewed.group_by("_day", maintain_order=True):
        name = f"{REVIEWED_FOLDER}/reviewed_{day}.jsonl"
        rows = batch.select(REVIEWED_COLUMNS)
        text = json_objects(rows).str.join("\n").item()
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        target = root / name
        entry = recorded.get(name)
        if entry is not None and _current(target, entry, digest):
            written.count("reviewed_files_kept")
        else:
            batches = (rows.slice(s, ENCODE_ROWS) for s in range(0, rows.height, ENCODE_ROWS))
            write_json_lines(target, batches)
            entry = {"digest": digest, "rows": rows.height, "stat": _stat(target)}
            written.count("reviewed_files_written")
        entries[name] = entry
    _remove_others(root, REVIEWED_FOLDER, set(entries), written, "reviewed_files")
    return entries


def refresh_review_files(root: Path, lake_root: str, decisions: pl.DataFrame) -> Written:
    """Bring `pending_review/` and `approved/` up to date with the examples and `decisions`.

    Writes only the files whose inputs changed since the last refresh (or which are not the
    file it wrote); returns the examples listed per kind and the files written, kept and deleted.
    """
    previous, state = _read_state(root)
    for folder in (PENDING_FOLDER, REVIEWED_FOLDER):
        (root / folder).mkdir(parents=True, exist_ok=True)
    files = {Path(f).stem: f for f in partition_files(lake_root, SOURCE, EXAMPLES)}
    fingerprints = {p: feed_fingerprint([UPath(f)]) for p, f in files.items()}
    changed = {p for p, fp in fingerprints.items() if state["partitions"].get(p) != fp}
    written = Written()
    decided_ids = decisions.get_column("id").unique().sort()
    decided = _decided(files, changed, decided_ids, previous, written)
    recorded = state["files"]
    entries = _refresh_pending(
        root, files, fingerprints, decided, recorded=recorded, written=written
    )
    entries |= _refresh_reviewed(root, decided, decisions, recorded, written)
    meta = {"format": STATE_FORMAT, "partitions": fingerprints, "files": entries}
    _write_state(root, decided, meta)
    return written
