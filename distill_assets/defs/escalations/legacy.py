"""Legacy `knowledge_distillation.db` (the production SQLite database) → escalation records.

A partition's raw folder may hold legacy databases (`raw/escalations/<date>/*.db`). Each is opened
read-only with the standard library and its nine tables are mapped (`LEGACY_TABLES` lists the
columns the production system created; JSON-array columns are TEXT):

- `examples`, `chain_of_thought` (claude_response = final_answer, steps from reasoning_steps),
  `preference_pairs` (claude_response = good_response, sam_attempt = bad_response) and
  `raw_interactions`: one record each (`RECORD_SCHEMA` + `LEGACY_COLUMNS`), whose `source_ref` is
  `<db file name>#<table>/<id>` and whose id is `stable_id(source_ref)`;
- `reasoning_patterns` (steps) and `corrections` (SAM errors, improvements; `lesson_learned` as a
  principle) attach to their example (`example_id`, or the example's `reasoning_pattern_id`);
- `principles` are stored in a table of their own and attach to every migrated example of their
  domain; `skill_templates` and `review_queue` are stored in tables of their own;
- `human_reviewed` / `approved` / `reviewer_notes` of `examples` become the review state
  (approved → 1, reviewed but not approved → -1, else 0).

Nothing is lost: per database and table, `rows_read = migrated + attached + stored + quarantined`
(`reconciliation`). A corrupt file is a problem of the whole file (and one `legacy_quarantine`
row, table `*`). A missing table or column is a table-level problem; when the column is one the
mapping needs, the table's rows are quarantined with that reason. An unknown column is recorded
as a problem and its values kept in the record's `extra` JSON. Row-level reasons:
`missing_query`, `missing_claude_response`, `invalid_timestamp`, `invalid_json`,
`orphan_example`.
Reading the file and its JSON-array columns is `legacy_db.py`; the mapping here is Polars.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from upath import UPath

from distill_assets.contracts.escalations import RECORD_SCHEMA
from distill_assets.contracts.escalations_legacy import (
    ATTACHED_TABLES,
    EXAMPLE_TABLES,
    LEGACY_TABLES,
    OUTCOMES,
    PROBLEM_CORRUPT,
    QUARANTINE_SCHEMA,
    RECONCILIATION_SCHEMA,
    STORED_SCHEMA,
    STORED_TABLES,
)
from distill_assets.defs.escalations.examples import (
    LEGACY_COLUMNS,
    PRINCIPLE_DTYPE,
    SAM_ERROR_DTYPE,
    STEP_DTYPE,
)
from distill_assets.defs.escalations.legacy_db import (
    LegacyDatabase,
    json_list,
    legacy_steps,
    open_database,
    unix_seconds,
)
from distill_assets.lib.hashing import with_stable_id
from distill_assets.rules import escalations as rules

# the reconciliation/quarantine `legacy_table` of a file that could not be read at all
WHOLE_FILE = "*"
LEGACY_RECORD_SCHEMA = pl.Schema({**RECORD_SCHEMA, **LEGACY_COLUMNS})


@dataclass
class LegacyMigration:
    """What the legacy databases of one partition produced."""

    records: pl.DataFrame
    reconciliation: pl.DataFrame
    quarantine: pl.DataFrame
    stored: dict[str, pl.DataFrame] = field(default_factory=dict)


def _reference(name: str, table: str) -> pl.Expr:
    return pl.format("{}#{}/{}", pl.lit(name), pl.lit(table), pl.col("id"))


def _review_state() -> pl.Expr:
    reviewed = pl.col("human_reviewed").cast(pl.Int64, strict=False).fill_null(0)
    approved = pl.col("approved").cast(pl.Int64, strict=False)
    return (
        pl.when(reviewed == -1)
        .then(pl.lit(-1))
        .when((reviewed == 1) & (approved == 1))
        .then(pl.lit(1))
        .when((reviewed == 1) | (approved == 0))
        .then(pl.lit(-1))
        .when(approved == 1)
        .then(pl.lit(1))
        .otherwise(pl.lit(0))
        .cast(pl.Int64)
    )


def _examples(db: LegacyDatabase) -> pl.DataFrame:
    """Map the four example tables to legacy records (unparsed attachments added later)."""
    frames = []
    for table, (query, answer, attempt) in EXAMPLE_TABLES.items():
        needed = ("id", query, answer, "created_at")
        frame = db.usable(table, needed)
        if frame is None:
            continue
        steps, steps_ok = (
            legacy_steps(frame, "reasoning_steps")
            if table == "chain_of_thought" and "reasoning_steps" in frame.columns
            else ([None] * frame.height, [True] * frame.height)
        )
        mapped = frame.with_columns(
            pl.Series("_steps", steps, dtype=pl.List(STEP_DTYPE)),
            pl.Series("_steps_ok", steps_ok, dtype=pl.Boolean),
            unix_seconds("created_at").alias("_created"),
            _reference(db.name, table).alias("legacy_source_ref"),
        ).with_columns(
            pl.when(pl.col(query).str.strip_chars().fill_null("") == "")
            .then(pl.lit("missing_query"))
            .when(pl.col(answer).str.strip_chars().fill_null("") == "")
            .then(pl.lit("missing_claude_response"))
            .when(pl.col("_created").is_null())
            .then(pl.lit("invalid_timestamp"))
            .when(~pl.col("_steps_ok"))
            .then(pl.lit("invalid_json"))
            .alias("_reason")
        )
        bad = mapped.filter(pl.col("_reason").is_not_null())
        db.quarantine(table, bad, bad.get_column("_reason"))
        good = mapped.filter(pl.col("_reason").is_null())
        db.count(table, "migrated", good.height)

        def optional(name: str, dtype: pl.DataType, frame: pl.DataFrame = good) -> pl.Expr:
            if name in frame.columns:
                return pl.col(name).cast(dtype, strict=False)
            return pl.lit(None, dtype=dtype)

        unknown = [c for c in frame.columns if c not in LEGACY_TABLES[table]]
        extra = (
            pl.struct(unknown).struct.json_encode()
            if unknown and not good.is_empty()
            else pl.lit(None, dtype=pl.String)
        )
        domain = optional("domain", pl.String())
        reasoning_type = optional("reasoning_type", pl.String())
        complexity = optional("complexity", pl.Float64()).cast(pl.Int64, strict=False)
        frames.append(
            good.select(
                pl.lit(db.display).alias("source_file"),
                pl.col("id").alias("legacy_id"),
                pl.lit(table).alias("legacy_table"),
                pl.col("legacy_source_ref"),
                pl.col(query).alias("query"),
                pl.col(answer).alias("claude_response"),
                (pl.col(attempt) if attempt else pl.lit(None, dtype=pl.String)).alias(
                    "sam_attempt"
                ),
                pl.col("_created").alias("created_at"),
                pl.when(domain.is_in(list(rules.DOMAINS))).then(domain).alias("domain"),
                pl.when(reasoning_type.is_in(list(rules.REASONING_TYPES)))
                .then(reasoning_type)
                .alias("reasoning_type"),
                pl.when(complexity.is_between(1, 10)).then(complexity).alias("complexity"),
                (_review_state() if table == "examples" else pl.lit(0, dtype=pl.Int64)).alias(
                    "legacy_human_reviewed"
                ),
                optional("reviewer_notes", pl.String()).alias("legacy_reviewer_notes"),
                optional("reasoning_pattern_id", pl.String()).alias("_pattern_id"),
                extra.alias("extra"),
                pl.col("_steps").alias("legacy_steps"),
                (
                    pl.struct(
                        sam_errors=pl.concat_list(
                            pl.struct(
                                error_type=pl.lit(rules.SAM_ERROR_FALLBACK),
                                what_sam_said=pl.col("bad_response"),
                                what_was_wrong=optional("reason", pl.String()),
                                correct_answer=pl.col("good_response"),
                            )
                        ),
                        improvements=pl.lit([], dtype=pl.List(pl.String)),
                    )
                    if table == "preference_pairs"
                    else pl.lit(None, dtype=LEGACY_COLUMNS["legacy_corrections"])
                ).alias("_pair_corrections"),
            )
        )
    if not frames:
        return pl.DataFrame()
    return pl.concat(frames, how="vertical_relaxed")


def _attach_patterns(db: LegacyDatabase, examples: pl.DataFrame) -> pl.DataFrame:
    frame = db.usable("reasoning_patterns", ("id", "example_id", "reasoning_steps"))
    if frame is None:
        return examples.with_columns(pl.lit(None, dtype=pl.List(STEP_DTYPE)).alias("_pattern"))
    steps, ok = legacy_steps(frame, "reasoning_steps")
    parsed = frame.with_columns(
        pl.Series("_pattern", steps, dtype=pl.List(STEP_DTYPE)), pl.Series("_ok", ok)
    )
    local = examples.filter(pl.col("legacy_table") == "examples")
    by_example = parsed.join(
        local.select(pl.col("legacy_id").alias("example_id"), pl.lit(True).alias("_known")),
        on="example_id",
        how="left",
    )
    by_pattern = local.select("legacy_id", "_pattern_id").drop_nulls()
    known = by_example.with_columns(
        (pl.col("_known").fill_null(False) | pl.col("id").is_in(by_pattern["_pattern_id"])).alias(
            "_known"
        )
    )
    reason = (
        pl.when(~pl.col("_ok"))
        .then(pl.lit("invalid_json"))
        .when(~pl.col("_known"))
        .then(pl.lit("orphan_example"))
    )
    judged = known.with_columns(reason.alias("_reason"))
    bad = judged.filter(pl.col("_reason").is_not_null())
    db.quarantine("reasoning_patterns", bad, bad.get_column("_reason"))
    good = judged.filter(pl.col("_reason").is_null())
    db.count("reasoning_patterns", "attached", good.height)
    via_example = good.filter(pl.col("example_id").is_in(local["legacy_id"])).select(
        pl.col("example_id").alias("legacy_id"), "_pattern", "id"
    )
    via_pointer = by_pattern.join(
        good.select(pl.col("id").alias("_pattern_id"), "_pattern", "id"), on="_pattern_id"
    ).select("legacy_id", "_pattern", "id")
    first = (
        pl.concat([via_pointer, via_example])
        .unique("legacy_id", keep="first", maintain_order=True)
        .select("legacy_id", "_pattern", pl.lit("examples").alias("legacy_table"))
    )
    return examples.join(first, on=["legacy_id", "legacy_table"], how="left")


def _attach_corrections(db: LegacyDatabase, examples: pl.DataFrame) -> pl.DataFrame:
    frame = db.usable("corrections", ("id", "example_id"))
    empty = pl.lit(None, dtype=LEGACY_COLUMNS["legacy_corrections"])
    if frame is None:
        return examples.with_columns(
            empty.alias("_corrections"), pl.lit(None, dtype=pl.List(PRINCIPLE_DTYPE)).alias("_l")
        )
    improvements, ok = [], []
    for text in (
        frame.get_column("improvements").to_list()
        if "improvements" in frame.columns
        else [None] * frame.height
    ):
        try:
            improvements.append([str(i) for i in (json_list(text) or [])])
            ok.append(True)
        except (ValueError, TypeError):
            improvements.append([])
            ok.append(False)
    local = examples.filter(pl.col("legacy_table") == "examples").get_column("legacy_id")
    judged = frame.with_columns(
        pl.Series("_improvements", improvements, dtype=pl.List(pl.String)),
        pl.Series("_ok", ok),
    ).with_columns(
        pl.when(~pl.col("_ok"))
        .then(pl.lit("invalid_json"))
        .when(~pl.col("example_id").is_in(local))
        .then(pl.lit("orphan_example"))
        .alias("_reason")
    )
    bad = judged.filter(pl.col("_reason").is_not_null())
    db.quarantine("corrections", bad, bad.get_column("_reason"))
    good = judged.filter(pl.col("_reason").is_null())
    db.count("corrections", "attached", good.height)

    def text(name: str) -> pl.Expr:
        return pl.col(name) if name in good.columns else pl.lit(None, dtype=pl.String)

    grouped = good.group_by("example_id", maintain_order=True).agg(
        pl.struct(
            error_type=text("error_type").fill_null(rules.SAM_ERROR_FALLBACK),
            what_sam_said=text("what_sam_said"),
            what_was_wrong=text("what_was_wrong"),
            correct_answer=text("correct_answer"),
        )
        .cast(SAM_ERROR_DTYPE)
        .alias("sam_errors"),
        pl.col("_improvements")
        .list.explode(keep_nulls=False, empty_as_null=False)
        .alias("improvements"),
        pl.struct(
            principle=text("lesson_learned"),
            context=pl.lit("legacy correction"),
            importance=pl.lit(None, dtype=pl.Float64),
        )
        .filter(text("lesson_learned").str.strip_chars().str.len_chars() > 0)
        .alias("_l"),
    )
    return examples.join(
        grouped.select(
            pl.col("example_id").alias("legacy_id"),
            pl.lit("examples").alias("legacy_table"),
            pl.struct("sam_errors", "improvements").alias("_corrections"),
            "_l",
        ),
        on=["legacy_id", "legacy_table"],
        how="left",
    )


def _stored(
    db: LegacyDatabase, examples: pl.DataFrame
) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """Store principles, review queue and skill templates; return them and domain principles."""
    stored: dict[str, pl.DataFrame] = {}
    domain_principles = pl.DataFrame(
        schema={"domain": pl.String(), "_domain_principles": pl.List(PRINCIPLE_DTYPE)}
    )
    ids = (
        examples.filter(pl.col("legacy_table") == "examples").select(
            pl.col("legacy_id").alias("example_id"), pl.col("id").alias("_example")
        )
        if not examples.is_empty()
        else pl.DataFrame(schema={"example_id": pl.String(), "_example": pl.String()})
    )
    for table in STORED_TABLES:
        frame = db.usable(table, ("id",))
        if frame is None:
            continue
        db.count(table, "stored", frame.height)
        example = (
            frame.join(ids, on="example_id", how="left").get_column("_example")
            if "example_id" in frame.columns
            else pl.Series([None] * frame.height, dtype=pl.String)
        )
        stored[table] = frame.select(
            pl.lit(db.display).alias("source_file"),
            _reference(db.name, table).alias("source_ref"),
            pl.Series("example_id", example, dtype=pl.String),
            pl.struct(pl.all()).struct.json_encode().alias("row"),
        )
        if table == "principles" and {"domain", "principle"} <= set(frame.columns):
            importance = (
                pl.col("importance").cast(pl.Float64, strict=False)
                if "importance" in frame.columns
                else pl.lit(None, dtype=pl.Float64)
            )
            domain_principles = (
                frame.filter(pl.col("principle").str.strip_chars().str.len_chars() > 0)
                .group_by("domain", maintain_order=True)
                .agg(
                    pl.struct(
                        principle=pl.col("principle"),
                        context=pl.format("legacy principle ({})", pl.col("domain")),
                        importance=importance,
                    ).alias("_domain_principles")
                )
            )
    return stored, domain_principles


def _to_records(examples: pl.DataFrame, domain_principles: pl.DataFrame) -> pl.DataFrame:
    with_principles = examples.join(domain_principles, on="domain", how="left")
    return with_principles.select(
        pl.col("source_file"),
        pl.lit(0, dtype=pl.Int64).alias("line_no"),
        pl.lit(False).alias("utf8_replaced"),
        pl.col("id"),
        pl.lit(True).alias("id_derived"),
        pl.lit(None, dtype=pl.String).alias("session_id"),
        pl.col("created_at"),
        pl.lit(None, dtype=pl.String).alias("timestamp"),
        pl.col("query"),
        pl.lit(None, dtype=pl.String).alias("query_context"),
        pl.col("sam_attempt"),
        pl.lit(None, dtype=pl.Float64).alias("sam_confidence"),
        pl.lit(None, dtype=pl.String).alias("sam_reasoning"),
        pl.col("claude_response"),
        pl.col("domain"),
        pl.lit(None, dtype=pl.String).alias("subdomain"),
        pl.lit(None, dtype=pl.String).alias("task_type"),
        pl.col("complexity"),
        pl.col("reasoning_type"),
        pl.col("extra"),
        pl.col("legacy_table"),
        pl.col("legacy_source_ref"),
        pl.col("legacy_human_reviewed"),
        pl.col("legacy_reviewer_notes"),
        pl.coalesce("_pattern", "legacy_steps").alias("legacy_steps"),
        pl.coalesce("_corrections", "_pair_corrections").alias("legacy_corrections"),
        pl.concat_list(
            pl.col("_l").fill_null(pl.lit([], dtype=pl.List(PRINCIPLE_DTYPE))),
            pl.col("_domain_principles").fill_null(pl.lit([], dtype=pl.List(PRINCIPLE_DTYPE))),
        ).alias("legacy_principles"),
    )


def migrate_databases(paths: list[str], raw_root: str | None = None) -> LegacyMigration:
    """Migrate every legacy database of a partition (see the module docstring)."""
    records, reconciliation, quarantined = [], [], []
    stored: dict[str, list[pl.DataFrame]] = {t: [] for t in STORED_TABLES}
    for path in paths:
        display = path.removeprefix(f"{raw_root.rstrip('/')}/") if raw_root else path
        with tempfile.TemporaryDirectory() as tmp:
            local = Path(tmp) / "legacy.db"
            with UPath(path).open("rb") as source, local.open("wb") as target:
                shutil.copyfileobj(source, target)
            db, problems = open_database(display, local)
        if db is None:
            reconciliation.append(
                {
                    "source_file": display,
                    "legacy_table": WHOLE_FILE,
                    **dict.fromkeys(("rows_read", *OUTCOMES), 0),
                    "quarantine_reasons": "{}",
                    "problems": problems,
                }
            )
            quarantined.append(
                pl.DataFrame(
                    {
                        "source_file": [display],
                        "legacy_table": [WHOLE_FILE],
                        "legacy_id": [None],
                        "source_ref": [display.rsplit("/", 1)[-1]],
                        "reason": [PROBLEM_CORRUPT],
                    },
                    schema=QUARANTINE_SCHEMA,
                )
            )
            continue
        examples = _examples(db)
        if not examples.is_empty():
            examples = with_stable_id(examples, ["legacy_source_ref"])
            examples = _attach_corrections(db, _attach_patterns(db, examples))
        else:
            for table in ATTACHED_TABLES:
                frame = db.tables[table]
                if frame is not None:
                    db.quarantine(table, frame, "orphan_example")
        tables, domain_principles = _stored(db, examples)
        for table, frame in tables.items():
            stored[table].append(frame)
        if not examples.is_empty():
            records.append(_to_records(examples, domain_principles))
        quarantined += db.quarantined
        for table in LEGACY_TABLES:
            frame = db.tables[table]
            reasons = (
                pl.concat(db.quarantined).filter(pl.col("legacy_table") == table)
                if db.quarantined
                else pl.DataFrame(schema=QUARANTINE_SCHEMA)
            )
            by_reason = dict(sorted(reasons.group_by("reason").len().iter_rows()))
            reconciliation.append(
                {
                    "source_file": display,
                    "legacy_table": table,
                    "rows_read": 0 if frame is None else frame.height,
                    **{o: db.outcomes[table].get(o, 0) for o in OUTCOMES},
                    "quarantine_reasons": json.dumps(by_reason, sort_keys=True),
                    "problems": db.problems[table],
                }
            )
    record_frame = (
        pl.concat(records, how="vertical_relaxed")
        .with_columns(pl.int_range(1, pl.len() + 1).over("source_file").alias("line_no"))
        .select(pl.col(n).cast(t) for n, t in LEGACY_RECORD_SCHEMA.items())
        if records
        else pl.DataFrame(schema=LEGACY_RECORD_SCHEMA)
    )
    return LegacyMigration(
        records=record_frame,
        reconciliation=pl.DataFrame(reconciliation, schema=RECONCILIATION_SCHEMA),
        quarantine=(
            pl.concat(quarantined) if quarantined else pl.DataFrame(schema=QUARANTINE_SCHEMA)
        ),
        stored={
            t: pl.concat(f).cast(dict(STORED_SCHEMA)) if f else pl.DataFrame(schema=STORED_SCHEMA)
            for t, f in stored.items()
        },
    )
