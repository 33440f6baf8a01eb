"""`distillation_examples` → the four export feeds (docs/sources/escalations.md#export-formats).

- `instruction` → `escalations/instruction_examples` → config `instruction` (Alpaca):
  instruction = query, input = query_context or "", output = claude_response;
- `cot` → `escalations/cot_examples` → config `cot`: the same plus `thought_process` (the answer's
  numbered steps, `content: reasoning`, each followed by the indented lines under it, e.g. its code
  block), `conclusion` (the answer's last paragraph) and `outcome` ("": an escalation records no
  observed outcome; the card says so);
- `preference` → `escalations/preference_pairs` → config `dpo`: prompt = query,
  chosen = claude_response, rejected = sam_attempt;
- `correction` → `escalations/correction_examples` → config `correction`: the seed's format 4
  wording (`CORRECTION_INSTRUCTION` with its placeholder filled with SAM's attempt, input =
  original question and SAM's answer, output = "Your answer has an error. ..." + claude_response).

An example leaves a feed for the first reason of the shared gate (`gate.py`: rejected, an excluded
flag, below the minimum score) or, after it, its format's own condition (`not_<format>`); reasons
are counted and the example stays queryable in `distillation_examples`. Every row carries
`metadata.example_id` (its `distillation_examples` id) and the internal `subject` column = that id,
so a reviewer's rejection removes it from every config (`EXCLUSION_TABLES`).

Row id: `stable_id(example id, <the format's content columns>)`; `split_group` is the session
(fallback: the example id) so one session never straddles train and test.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from distill_assets.contracts.published import SUBJECT_COLUMN, feed_schema
from distill_assets.defs.escalations.examples import BATCH_ROWS, EXAMPLE_COLUMNS
from distill_assets.defs.escalations.gate import gate_reason
from distill_assets.lib.hashing import with_stable_id
from distill_assets.lib.lake import frame_batches, write_frames
from distill_assets.rules import escalations as rules

SOURCE = "escalations"
# docs/sources/escalations.md#export-formats, format 4; `{}` stands where the original shows
# `[SAM's incorrect response]`
CORRECTION_INSTRUCTION = "Here's what I said: {}. What should I have said instead?"
CORRECTION_INPUT = "Original question: {}\n\nMy answer: {}"
CORRECTION_OUTPUT = "Your answer has an error. Here's what you should have said:\n\n{}"


@dataclass(frozen=True)
class ExportFormat:
    """One export: the seed's format name, its feed table and config, and its rows."""

    name: str
    table: str
    config: str
    condition: pl.Expr
    columns: dict[str, pl.Expr]


@dataclass(frozen=True)
class ExportWritten:
    """What `write_export` wrote: feed rows, examples read, and the drops by reason."""

    rows: int
    examples: int
    dropped: dict[str, int]


def _has_error() -> pl.Expr:
    return (pl.col("corrections").struct.field("sam_errors").list.len().fill_null(0) > 0) & (
        pl.col("sam_attempt").str.strip_chars().str.len_chars().fill_null(0) > 0
    )


# a numbered step of the answer and the indented lines under it (blank lines between allowed; a
# line starting with a digit ends it, as the next step of an indented list would)
STEP_BLOCK = r"(?m)" + rules.STEP_PREFIX + r"\S.*(?:\n(?:[ \t]*\n)*[ \t]+[^\s\d].*)*"
# the indentation a list item's continuation lines carry (the marker's width)
CONTINUATION_INDENT = r"\n(?: {1,4}|\t)"


def _thought_process() -> pl.Expr:
    """Return each numbered step as `content: reasoning`, then the lines indented under it.

    The step's line is split as `extraction.reasoning_steps` splits it; the indented lines (a
    code block) follow on new lines, dedented by the list marker's width.
    """
    item = pl.element()
    blocks = pl.col("claude_response").str.extract_all(STEP_BLOCK)
    parts = blocks.list.eval(
        pl.struct(
            line=item.str.extract(r"^(.*)", 1).str.replace(rules.STEP_PREFIX, "").str.strip_chars(),
            more=item.str.replace(r"^.*", "").str.replace_all(CONTINUATION_INDENT, "\n"),
        )
    )
    line, more = item.struct.field("line"), item.struct.field("more")
    split = parts.list.eval(
        pl.struct(header=line.str.extract_groups(rules.STEP_HEADER), line=line, more=more)
    )
    header = item.struct.field("header")
    content = pl.coalesce(
        header.struct.field("1").str.strip_chars(),
        item.struct.field("line").str.replace_all(r"\*\*", "").str.strip_chars(),
    )
    rest = header.struct.field("2").str.strip_chars().fill_null("")
    return split.list.eval(
        pl.concat_str(
            content,
            pl.when(rest != "").then(pl.lit(": ") + rest).otherwise(pl.lit("")),
            item.struct.field("more").str.strip_chars_end(),
        )
    )


def _context() -> pl.Expr:
    return pl.col("query_context").fill_null("")


FORMATS: dict[str, ExportFormat] = {
    f.name: f
    for f in (
        ExportFormat(
            "instruction",
            "instruction_examples",
            "instruction",
            pl.lit(True),
            {
                "instruction": pl.col("query"),
                "input": _context(),
                "output": pl.col("claude_response"),
            },
        ),
        ExportFormat(
            "cot",
            "cot_examples",
            "cot",
            pl.col("reasoning_steps").list.len() >= rules.COT_EXPORT_MIN_STEPS,
            {
                "instruction": pl.col("query"),
                "input": _context(),
                "output": pl.col("claude_response"),
                "thought_process": _thought_process(),
                "conclusion": pl.col("claude_response")
                .str.split("\n\n")
                .list.eval(pl.element().str.strip_chars().filter(pl.element() != ""))
                .list.last()
                .fill_null(""),
                "outcome": pl.lit(""),
            },
        ),
        ExportFormat(
            "preference",
            "preference_pairs",
            "dpo",
            _has_error(),
            {
                "prompt": pl.col("query"),
                "chosen": pl.col("claude_response"),
                "rejected": pl.col("sam_attempt"),
            },
        ),
        ExportFormat(
            "correction",
            "correction_examples",
            "correction",
            _has_error(),
            {
                "instruction": pl.format(
                    CORRECTION_INSTRUCTION,
                    pl.col("sam_attempt").str.strip_chars().str.strip_chars_end("."),
                ),
                "input": pl.format(CORRECTION_INPUT, "query", "sam_attempt"),
                "output": pl.format(CORRECTION_OUTPUT, "claude_response"),
            },
        ),
    )
}


def _metadata() -> pl.Expr:
    return pl.struct(
        example_id=pl.col("id"),
        session_id=pl.col("session_id"),
        reasoning_type=pl.col("reasoning_type"),
        training_format=pl.col("training_format"),
        domain=pl.col("domain"),
        subdomain=pl.col("subdomain"),
        task_type=pl.col("task_type"),
        complexity=pl.col("complexity"),
        quality_flags=pl.col("quality_flags"),
        human_reviewed=pl.col("human_reviewed"),
        reviewer_notes=pl.col("reviewer_notes"),
        sam_confidence=pl.col("sam_confidence"),
    ).struct.json_encode()


def drop_reason(export: ExportFormat) -> pl.Expr:
    """Return why an example is not in `export` (gate first, then `not_<format>`), or null."""
    return pl.coalesce(
        gate_reason(export.name),
        pl.when(~export.condition.fill_null(False)).then(pl.lit(f"not_{export.name}")),
    )


def _feed_columns(export: ExportFormat) -> list[pl.Expr]:
    return [
        pl.col("id").alias("example_id"),
        pl.lit(SOURCE).alias("source"),
        pl.col("source_ref"),
        pl.col("quality_score"),
        _metadata().alias("metadata"),
        *(expr.alias(column) for column, expr in export.columns.items()),
        pl.coalesce("session_id", "id").alias("split_group"),
        pl.col("created_at").alias("event_time"),
    ]


def input_columns(name: str) -> list[str]:
    """Return the `distillation_examples` columns export `name` reads, in the table's order."""
    export = FORMATS[name]
    used = {
        column
        for expr in (drop_reason(export), *_feed_columns(export))
        for column in expr.meta.root_names()
    }
    return [column for column in EXAMPLE_COLUMNS if column in used]


def export_rows(examples: pl.DataFrame, name: str) -> tuple[pl.DataFrame, dict[str, int]]:
    """Return the feed rows of export `name` (in its config's feed schema + `subject`) and drops.

    `examples` needs the `input_columns` of the export. Rows keep the order of `examples`; drops
    are counted by reason.
    """
    export = FORMATS[name]
    decided = examples.with_columns(drop_reason(export).alias("drop_reason"))
    dropped = decided.filter(pl.col("drop_reason").is_not_null())
    counts = {str(r): int(n) for r, n in sorted(dropped.group_by("drop_reason").len().iter_rows())}
    kept = decided.filter(pl.col("drop_reason").is_null()).select(_feed_columns(export))
    schema = feed_schema(export.config)
    feed = with_stable_id(kept, ["example_id", *export.columns]).select(
        *(pl.col(column).cast(dtype) for column, dtype in schema.items()),
        pl.col("example_id").alias(SUBJECT_COLUMN),
    )
    return feed, counts


def write_export(examples: pl.LazyFrame, name: str, target: Path) -> ExportWritten:
    """Write the feed of export `name` to the local Parquet file `target`, batch by batch.

    `examples` (a partition of `distillation_examples`) is read `BATCH_ROWS` rows at a time, and
    only its `input_columns`, so memory does not grow with the size of the day; the rows are
    those `export_rows` gives for the whole partition, in the same order.
    """
    dropped: Counter[str] = Counter()
    inputs = 0

    def feed(batch: pl.DataFrame) -> pl.DataFrame:
        nonlocal inputs
        inputs += batch.height
        rows, counts = export_rows(batch, name)
        dropped.update(counts)
        return rows

    batches = frame_batches(examples.select(input_columns(name)), BATCH_ROWS)
    rows = write_frames(map(feed, batches), target)
    return ExportWritten(rows, inputs, dict(sorted(dropped.items())))
