"""Human review of `distillation_examples` (docs/sources/escalations.md#review).

Files live under the seed's `distilled/` folder of the data dir (`distilled_root`):

- `review/decisions.jsonl` — every decision `distill review approve|reject` made, one JSON object
  per line `{id, decision: approve|reject|edit, notes, reviewer, ts[, response, via]}`, appended,
  never edited; reviews and edits made in `distillation.db` join them (`working_store.py`) and
  the latest timestamp wins, field by field. Parquet is never edited in place: decisions are
  data, applied at the next materialization.
- `pending_review/batch_YYYYMMDD.json` — per ingest date, the examples still awaiting review;
- `approved/reviewed_YYYYMMDD.jsonl` — per decision date (UTC), the examples reviewed that day
  with their decision and notes (both refreshed by `review_files.refresh_review_files`).

Applying decisions: `human_reviewed` = 1 (approve) / -1 (reject) / the example's own state (0, or
a legacy review) without a decision; `reviewer_notes` = the decision's notes when given. A
rejected example is listed in the global exclusion table `escalations/review_exclusions`, so it
leaves every config at the next release even before its partition is re-materialized.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl

from distill_assets.defs.escalations.gate import training_ready
from distill_assets.defs.escalations.working_store import DECISION_SCHEMA, database_decisions
from distill_assets.lib.jsonlines import append_lines
from distill_assets.lib.lake import (
    frame_batches,
    partition_files,
    partition_scans,
    scan_partitions,
)

SOURCE = "escalations"
EXAMPLES = "distillation_examples"
DECISIONS = ("approve", "reject", "edit")
DECISION_STATE = {"approve": 1, "reject": -1}
REJECTED_REASON = "rejected_by_reviewer"
PENDING_COLUMNS = (
    "id",
    "source_ref",
    "domain",
    "reasoning_type",
    "training_format",
    "quality_score",
    "quality_flags",
    "answer_rejection",
    "query",
    "sam_attempt",
    "claude_response",
)
# What `apply_decisions` reads and sets (with `id`).
REVIEW_COLUMNS = (
    "id",
    "human_reviewed",
    "reviewer_notes",
    "quality_flags",
    "quality_score",
    "answer_rejection",
)


def distilled_root(data_dir: str) -> Path:
    """Return the seed's `distilled/` folder under the data dir."""
    return Path(data_dir) / "distilled"


def decisions_path(root: Path) -> Path:
    """Return the append-only decisions file."""
    return root / "review" / "decisions.jsonl"


def append_decision(
    root: Path,
    example_id: str,
    decision: str,
    *,
    notes: str | None,
    reviewer: str,
    ts: float,
    response: str | None = None,
) -> dict[str, object]:
    """Append one decision line and return it (`response`: a corrected answer, optional)."""
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}, not {decision!r}")
    line: dict[str, object] = {
        "id": example_id,
        "decision": decision,
        "notes": notes,
        "reviewer": reviewer,
        "ts": ts,
    }
    if response is not None:
        line["response"] = response
    append_lines(decisions_path(root), [line])
    return line


def read_decisions(root: Path) -> pl.DataFrame:
    """Return the resolved decision per example id, from `distill review` and the database.

    Lines of `review/decisions.jsonl` (malformed ones skipped) and the reviews and edits made in
    `distillation.db` since distill wrote it (`working_store.database_decisions`; those already
    carried into the file count once) resolve field by field, the latest timestamp winning (the
    later line on a tie): `decision` = the latest approve/reject (null when there are only
    edits), `notes` and `response` = the latest given, `reviewer`/`via` = the latest line's.
    """
    path = decisions_path(root)
    parts = [database_decisions(root).select(DECISION_SCHEMA.names())]
    if path.exists() and path.stat().st_size > 0:
        lines = pl.read_ndjson(path, schema=DECISION_SCHEMA, ignore_errors=True)
        parts.insert(0, lines)
    lines = (
        pl.concat(parts)
        .filter(pl.col("id").is_not_null() & pl.col("decision").is_in(list(DECISIONS)))
        .with_columns(pl.col("ts").fill_null(0.0))
        .unique(
            ["id", "decision", "ts", "notes", "response", "via"], keep="first", maintain_order=True
        )
        .with_row_index("_line")
        .sort("ts", "_line")
    )
    return (
        lines.group_by("id")
        .agg(
            pl.col("decision").filter(pl.col("decision") != "edit").last(),
            pl.col("notes").drop_nulls().last(),
            pl.col("reviewer").last(),
            pl.col("ts").max(),
            pl.col("response").drop_nulls().last(),
            pl.col("via").last(),
        )
        .select(DECISION_SCHEMA.names())
        .sort("id")
    )


def apply_decisions(examples: pl.DataFrame, decisions: pl.DataFrame) -> pl.DataFrame:
    """Return `examples` with review decisions applied (state, notes, training readiness).

    A corrected answer (`response`) replaces `claude_response` when the frame has that column
    (the examples' own extraction sees it earlier: `with_corrected_responses`).
    """
    joined = examples.join(
        decisions.select(
            "id",
            pl.col("decision").replace_strict(DECISION_STATE, return_dtype=pl.Int64).alias("_s"),
            pl.col("notes").alias("_notes"),
            pl.col("response").alias("_response"),
        ),
        on="id",
        how="left",
        maintain_order="left",
    )
    corrected = (
        [pl.coalesce("_response", "claude_response").alias("claude_response")]
        if "claude_response" in examples.columns
        else []
    )
    return (
        joined.with_columns(
            pl.coalesce("_s", "human_reviewed").alias("human_reviewed"),
            pl.coalesce("_notes", "reviewer_notes").alias("reviewer_notes"),
            *corrected,
        )
        .with_columns(training_ready().alias("training_ready"))
        .drop("_s", "_notes", "_response")
    )


def with_corrected_responses(records: pl.LazyFrame, decisions: pl.DataFrame) -> pl.LazyFrame:
    """Return bronze records with each corrected answer (a decision's `response`) in place.

    Applied before extraction, so the steps, flags and score are those of the corrected text.
    The records' order is kept.
    """
    corrections = decisions.filter(pl.col("response").is_not_null()).select(
        "id", pl.col("response").alias("_response")
    )
    if corrections.is_empty():
        return records
    return (
        records.join(corrections.lazy(), on="id", how="left", maintain_order="left")
        .with_columns(pl.coalesce("_response", "claude_response").alias("claude_response"))
        .drop("_response")
    )


def scan_examples(lake_root: str, columns: Sequence[str] | None = None) -> pl.LazyFrame:
    """Lazily read every partition of `distillation_examples` (with its `partition`).

    With `columns`, only those (and `partition`) are read: the answers' texts and the extracted
    structures are most of the table, and most readers need a few columns of every example.
    Before the first partition the frame is empty (and has no columns without `columns`).
    """
    names = list(dict.fromkeys([*(columns or ()), "partition"]))
    if columns is not None and not partition_files(lake_root, SOURCE, EXAMPLES):
        return pl.LazyFrame(schema=dict.fromkeys(names, pl.Null()))
    examples = scan_partitions(lake_root, SOURCE, EXAMPLES)
    return examples if columns is None else examples.select(names)


def example_partitions(
    lake_root: str, columns: Sequence[str], batch_rows: int | None = None
) -> Iterator[pl.DataFrame]:
    """Yield each partition of `distillation_examples`, oldest first: `columns` and `partition`.

    With `batch_rows`, a partition comes in batches of that many rows. Memory holds one
    partition's (or batch's) columns, however long the history.
    """
    for scan in partition_scans(lake_root, SOURCE, EXAMPLES):
        partition = scan.select(*columns, "partition")
        if batch_rows is None:
            yield partition.collect()
        else:
            yield from frame_batches(partition, batch_rows)


def review_exclusions(decisions: pl.DataFrame) -> pl.DataFrame:
    """Return the exclusion rows (EXCLUSION_SCHEMA) of the rejected examples."""
    return decisions.filter(pl.col("decision") == "reject").select(
        pl.lit(SOURCE).alias("source"),
        pl.col("id").alias("subject"),
        pl.lit(REJECTED_REASON).alias("reason"),
    )
