"""Bronze escalation records → `distillation_examples`, as vectorized Polars expressions.

See docs/sources/escalations.md#distillation-examples.

Per record: numbered reasoning steps, indicator hits per seed pattern list, the reasoning type,
classification (pre-labels win), SAM errors, improvements, principles, quality flags (the seed's
ten plus distill's junk flags) and the seed's quality score. The rules are data in
`distill_assets.rules.escalations`; this module and `offline_extraction.py` only turn them into
expressions.

Records migrated from a legacy SQLite database (`legacy.py`) carry `LEGACY_COLUMNS`: their own
provenance, review state, and the reasoning steps, corrections and principles the legacy system
stored; those win over what is extracted from the text. JSONL records get the columns as nulls.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import polars as pl

from distill_assets.contracts.escalations import DistillationExample
from distill_assets.defs.escalations import offline_extraction as extraction
from distill_assets.defs.escalations.gate import training_ready
from distill_assets.defs.escalations.working_store import DB_REF
from distill_assets.lib.lake import frame_batches
from distill_assets.rules import escalations as rules

SOURCE = "escalations"
EXAMPLE_COLUMNS: tuple[str, ...] = tuple(DistillationExample.model_fields)
CLASSIFICATION_FIELDS: tuple[str, ...] = (
    "domain",
    "subdomain",
    "task_type",
    "complexity",
    "reasoning_type",
)
STEP_DTYPE = pl.Struct(
    {
        "step_num": pl.Int64(),
        "action": pl.String(),
        "content": pl.String(),
        "reasoning": pl.String(),
    }
)
TOOL_DTYPE = pl.Struct(
    {
        "tool": pl.String(),
        "purpose": pl.String(),
        "input_pattern": pl.String(),
        "output_handling": pl.String(),
    }
)
SAM_ERROR_DTYPE = pl.Struct(
    {
        "error_type": pl.String(),
        "what_sam_said": pl.String(),
        "what_was_wrong": pl.String(),
        "correct_answer": pl.String(),
    }
)
PRINCIPLE_DTYPE = pl.Struct(
    {"principle": pl.String(), "context": pl.String(), "importance": pl.Float64()}
)
CORRECTIONS_DTYPE = pl.Struct(
    {"sam_errors": pl.List(SAM_ERROR_DTYPE), "improvements": pl.List(pl.String())}
)
# Columns a legacy migration adds to bronze records (all null for JSONL records).
LEGACY_COLUMNS: dict[str, pl.DataType] = {
    "legacy_table": pl.String(),
    "legacy_source_ref": pl.String(),
    "legacy_human_reviewed": pl.Int64(),
    "legacy_reviewer_notes": pl.String(),
    "legacy_steps": pl.List(STEP_DTYPE),
    "legacy_corrections": CORRECTIONS_DTYPE,
    "legacy_principles": pl.List(PRINCIPLE_DTYPE),
}

# Records are processed in batches of this many rows (memory is bounded by a batch).
BATCH_ROWS = 65_536
# The order of records, bronze's (the shared ingest's) and the legacy migration's.
ORDER = ("source_file", "line_no")

_RESPONSE = pl.col("claude_response")
# the answer without code blocks: one expression for `prose` and the steps (computed once: CSE)
_PROSE = _RESPONSE.str.replace_all(rules.CODE_BLOCK, " ")
_NULL_STR = pl.lit(None, dtype=pl.String)


def indicator_hits(text: pl.Expr, patterns: tuple[str, ...]) -> pl.Expr:
    """Count how many of `patterns` match somewhere in `text` (seed: one hit per indicator)."""
    return pl.sum_horizontal([text.str.contains(p).cast(pl.Int64) for p in patterns])


def first_rule(text: pl.Expr, rules_: tuple[tuple[str, str], ...]) -> pl.Expr:
    """Return the label of the first (label, pattern) rule whose pattern matches, else null."""
    chain = pl.when(text.str.contains(rules_[0][1])).then(pl.lit(rules_[0][0]))
    for label, pattern in rules_[1:]:
        chain = chain.when(text.str.contains(pattern)).then(pl.lit(label))
    return chain.otherwise(_NULL_STR)


def trimmed_unit_pattern() -> str:
    """Return one regex matching each repetition unit, trimmed, of the minimum length or more.

    `rules.REPETITION_UNIT` is a run of characters outside a negated class (`[^…]+`); trimmed of
    whitespace, a unit is that run from its first to its last non-space character, so a unit of
    at least `REPETITION_MIN_UNIT_CHARS` is an edge character, at least that many minus two run
    characters and an edge character (greedy, so the whole run) — one regex pass instead of a
    strip and a filter over every list.
    """
    match = re.fullmatch(r"\[\^(.+)\]\+", rules.REPETITION_UNIT)
    if match is None:
        raise ValueError(f"REPETITION_UNIT must be a negated class run: {rules.REPETITION_UNIT}")
    run, edge = f"[^{match.group(1)}]", f"[^{match.group(1)}\\s]"
    return f"{edge}{run}{{{rules.REPETITION_MIN_UNIT_CHARS - 2},}}{edge}"


def has_tokens(text: pl.Expr, count: int) -> pl.Expr:
    r"""Return whether `text` holds at least `count` tokens (`rules.TOKEN_PATTERN` matches).

    A search that stops at the `count`-th token, where counting them all reads the whole text;
    tokens are runs of non-space characters (`\S+`), so `count` of them are runs separated by
    spaces.
    """
    if rules.TOKEN_PATTERN != r"\S+":
        raise ValueError(f"has_tokens reads tokens as \\S+ runs, not {rules.TOKEN_PATTERN}")
    return text.str.contains(rf"\S+(?:\s+\S+){{{count - 1}}}")


def _repetition_units() -> pl.Expr:
    """Return the prose's repetition units, lower-cased (a column of its own: it is read twice)."""
    return pl.col("prose").str.to_lowercase().str.extract_all(trimmed_unit_pattern())


def _repetition() -> pl.Expr:
    units = pl.col("repetition_units")
    total = units.list.len()
    repeated = total - units.list.n_unique()
    return (total >= rules.REPETITION_MIN_UNITS) & (repeated >= rules.REPETITION_MIN_SHARE * total)


def _measures() -> list[pl.Expr]:
    """Per-record measurements the type, flags and score are decided from."""
    return [
        pl.when(pl.col("legacy_steps").list.len() > 0)
        .then(pl.col("legacy_steps"))
        .otherwise(extraction.reasoning_steps(_PROSE))
        .alias("reasoning_steps"),
        extraction.tool_usage().alias("tool_usage"),
        indicator_hits(_RESPONSE, rules.COT_INDICATORS).alias("cot_hits"),
        indicator_hits(_RESPONSE, rules.TOOL_INDICATORS).alias("tool_hits"),
        indicator_hits(_RESPONSE, rules.CORRECTION_INDICATORS).alias("correction_hits"),
        indicator_hits(_RESPONSE, rules.UNCERTAINTY_INDICATORS).alias("uncertainty_hits"),
        indicator_hits(_RESPONSE, rules.REFLECTION_INDICATORS).alias("reflection_hits"),
        indicator_hits(_RESPONSE, rules.REFUSAL_INDICATORS).alias("refusal_hits"),
        _RESPONSE.str.count_matches(rules.TOKEN_PATTERN).cast(pl.Int64).alias("token_count"),
        _PROSE.alias("prose"),
        _RESPONSE.str.contains(rules.CODE_FENCE, literal=True).alias("has_code"),
        _RESPONSE.str.count_matches(rules.CODE_FENCE, literal=True).alias("fences"),
        pl.col("query").str.count_matches(rules.QUERY_SUBTASK).alias("query_subtasks"),
        pl.col("query").str.count_matches(rules.TOKEN_PATTERN).alias("query_words"),
        (pl.col("sam_attempt").str.strip_chars().str.len_chars() > 0)
        .fill_null(False)
        .alias("has_sam_attempt"),
        (pl.col("query_context").str.strip_chars().str.len_chars() > 0)
        .fill_null(False)
        .alias("has_context"),
    ]


def _detected_reasoning_type() -> pl.Expr:
    steps = pl.col("reasoning_steps").list.len()
    conditions = {
        "correction": pl.col("has_sam_attempt")
        & (
            pl.col("correction_hits")
            + _RESPONSE.str.contains(dict(rules.SAM_ERROR_RULES)["wrong_value"]).cast(pl.Int64)
            >= rules.MIN_CORRECTION_HITS
        ),
        "tool_use": pl.col("tool_hits") >= rules.MIN_TOOL_HITS,
        "multi_step": (pl.col("query_subtasks") >= rules.MULTI_STEP_MIN_SUBTASKS)
        & (steps >= rules.MULTI_STEP_MIN_STEPS),
        "chain_of_thought": (pl.col("cot_hits") >= rules.MIN_COT_HITS)
        | (steps >= rules.COT_MIN_STEPS),
        "meta_cognitive": pl.col("uncertainty_hits") + pl.col("reflection_hits")
        >= rules.MIN_META_HITS,
    }
    first, *rest = rules.REASONING_PRECEDENCE
    chain = pl.when(conditions[first]).then(pl.lit(first))
    for name in rest:
        chain = chain.when(conditions[name]).then(pl.lit(name))
    return chain.otherwise(pl.lit("direct"))


def _heuristic_domain() -> pl.Expr:
    by_query = first_rule(pl.col("query"), rules.DOMAIN_RULES)
    return by_query.fill_null(
        pl.when(pl.col("has_code")).then(pl.lit("code")).otherwise(pl.lit(rules.DEFAULT_DOMAIN))
    )


def _heuristic_complexity() -> pl.Expr:
    steps = pl.col("ordered_steps")
    length_points = (pl.col("token_count") // rules.COMPLEXITY_WORDS_PER_POINT).clip(
        0, rules.COMPLEXITY_MAX_LENGTH_POINTS
    )
    step_points = pl.sum_horizontal(
        [(steps >= t).cast(pl.Int64) for t in rules.COMPLEXITY_STEP_THRESHOLDS]
    )
    return (
        (
            1
            + length_points
            + step_points
            + pl.col("nested_steps").cast(pl.Int64)
            + pl.col("has_code").cast(pl.Int64)
            + pl.col("has_context").cast(pl.Int64)
            + (pl.col("query_words") > rules.COMPLEXITY_LONG_QUERY_WORDS).cast(pl.Int64)
        )
        .clip(1, 10)
        .cast(pl.Int64)
    )


def _classification() -> list[pl.Expr]:
    text = pl.col("query") + pl.lit("\n") + _RESPONSE
    return [
        pl.coalesce(pl.col("domain"), _heuristic_domain()).alias("domain"),
        pl.coalesce(pl.col("subdomain"), first_rule(text, rules.SUBDOMAIN_RULES)).alias(
            "subdomain"
        ),
        pl.coalesce(
            pl.col("task_type"),
            first_rule(pl.col("query"), rules.TASK_TYPE_RULES).fill_null(
                pl.lit(rules.DEFAULT_TASK_TYPE)
            ),
        ).alias("task_type"),
        pl.coalesce(pl.col("complexity"), _heuristic_complexity()).alias("complexity"),
        pl.coalesce(pl.col("reasoning_type"), pl.col("detected_reasoning_type")).alias(
            "reasoning_type"
        ),
    ]


def _quality_flags() -> pl.Expr:
    conditions = {
        "repetition": _repetition(),
        "incomplete": (pl.col("fences") % 2 == 1) | _RESPONSE.str.contains(rules.INCOMPLETE_ENDING),
        "no_reasoning": (pl.col("cot_hits") == 0)
        & (pl.col("reasoning_steps").list.len() < rules.NO_REASONING_MAX_STEPS),
        "too_short": pl.col("token_count") < rules.TOO_SHORT_TOKENS,
        "too_long": pl.col("token_count") > rules.TOO_LONG_TOKENS,
        "code_only": pl.col("has_code")
        & ~has_tokens(pl.col("prose"), rules.CODE_ONLY_MAX_PROSE_WORDS),
        "refusal": pl.col("refusal_hits") > 0,
        "uncertain": pl.col("uncertainty_hits") > 0,
        "outdated": extraction.any_match(_RESPONSE, rules.OUTDATED_INDICATORS),
        "hallucination_risk": extraction.any_match(_RESPONSE, rules.HALLUCINATION_INDICATORS),
        **extraction.junk_conditions(),
    }
    return pl.concat_list(
        [
            pl.when(conditions[flag]).then(pl.lit(flag)).otherwise(_NULL_STR)
            for flag in (*rules.QUALITY_FLAGS, *rules.JUNK_FLAGS)
        ]
    ).list.drop_nulls()


def quality_score() -> pl.Expr:
    """Return the example quality score (docs/sources/escalations.md#quality-score).

    Base 0.5 plus/minus each of the seed's factors, clamped to [0, 1] and rounded; the short
    response penalty spares a code answer (`rules.SCORE_SHORT_EXEMPT_CODE`).
    """
    flags = pl.col("quality_flags")

    def term(condition: pl.Expr, weight: float) -> pl.Expr:
        return pl.when(condition.fill_null(False)).then(pl.lit(weight)).otherwise(pl.lit(0.0))

    score = pl.sum_horizontal(
        pl.lit(rules.SCORE_BASE),
        term(
            pl.col("reasoning_steps").list.len() >= rules.SCORE_MIN_REASONING_STEPS,
            rules.SCORE_REASONING_STEPS,
        ),
        term(
            pl.col("corrections").struct.field("sam_errors").list.len() > 0,
            rules.SCORE_CORRECTION,
        ),
        term(pl.col("principles").list.len() >= 1, rules.SCORE_PRINCIPLES),
        term(pl.col("complexity") >= rules.SCORE_MIN_COMPLEXITY, rules.SCORE_COMPLEXITY),
        term(
            (_RESPONSE.str.len_chars() < rules.SCORE_SHORT_RESPONSE_CHARS)
            & ~_RESPONSE.str.contains(rules.SCORE_SHORT_EXEMPT_CODE),
            rules.SCORE_SHORT_RESPONSE,
        ),
        term(pl.col("reasoning_type") == "direct", rules.SCORE_DIRECT),
        term(flags.list.contains("repetition"), rules.SCORE_REPETITION),
        term(flags.list.contains("incomplete"), rules.SCORE_INCOMPLETE),
    )
    return score.clip(0.0, 1.0).round(rules.SCORE_DECIMALS)


def _training_format() -> pl.Expr:
    steps = pl.col("reasoning_steps").list.len()
    return (
        pl.when(pl.col("legacy_table") == "preference_pairs")
        .then(pl.lit("preference"))
        .when(pl.col("sam_error_type").is_not_null())
        .then(pl.lit("correction"))
        .when(steps >= rules.COT_EXPORT_MIN_STEPS)
        .then(pl.lit("cot"))
        .otherwise(pl.lit("instruction"))
    )


def distillation_examples(records: pl.LazyFrame) -> pl.LazyFrame:
    """Turn bronze `escalations/records` rows into `distillation_examples` rows, in their order.

    One example per record, row for row: the records' order is the caller's (`example_batches`
    gives bronze's (`source_file`, `line_no`) order; sorting here would move every text column
    of every batch once more).
    """
    prelabelled = pl.concat_list(
        [
            pl.when(pl.col(f).is_not_null()).then(pl.lit(f)).otherwise(_NULL_STR)
            for f in CLASSIFICATION_FIELDS
        ]
    ).list.drop_nulls()
    present = records.collect_schema()
    legacy = [
        pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in LEGACY_COLUMNS.items()
        if name not in present
    ]
    return (
        records.with_columns(legacy)
        .with_columns(prelabelled.alias("prelabelled"))
        .with_columns(_measures())
        .pipe(extraction.with_relevance)
        .with_columns(
            _detected_reasoning_type().alias("detected_reasoning_type"),
            _repetition_units().alias("repetition_units"),
            extraction.answer_evidence().alias("answer_evidence"),
            **extraction.step_structure(),
        )
        .with_columns(extraction.answer_rejection().alias("answer_rejection"))
        .with_columns(_classification())
        .with_columns(
            _quality_flags().alias("quality_flags"),
            pl.coalesce(
                pl.col("legacy_corrections")
                .struct.field("sam_errors")
                .list.first()
                .struct.field("error_type"),
                extraction.sam_error_type(),
            ).alias("sam_error_type"),
        )
        .with_columns(
            pl.coalesce("legacy_corrections", extraction.corrections()).alias("corrections")
        )
        .pipe(extraction.with_principles)
        .with_columns(
            pl.concat_list(
                pl.col("legacy_principles").fill_null(pl.lit([], dtype=pl.List(PRINCIPLE_DTYPE))),
                "principles",
            ).alias("principles")
        )
        .with_columns(
            quality_score().alias("quality_score"),
            _training_format().alias("training_format"),
            pl.struct(
                chain_of_thought=pl.col("cot_hits"),
                tool_use=pl.col("tool_hits"),
                correction=pl.col("correction_hits"),
                meta_cognitive=pl.col("uncertainty_hits") + pl.col("reflection_hits"),
            ).alias("indicator_hits"),
            pl.lit(SOURCE).alias("source"),
            pl.coalesce(
                "legacy_source_ref",
                pl.col("extra").str.json_path_match(f"$.{DB_REF}"),
                pl.format("{}:{}", "source_file", "line_no"),
            ).alias("source_ref"),
            pl.col("legacy_human_reviewed").fill_null(0).alias("human_reviewed"),
            pl.col("legacy_reviewer_notes").alias("reviewer_notes"),
            pl.lit(0, dtype=pl.Int64).alias("training_ready"),
            pl.col("query_overlap"),
            pl.lit(0, dtype=pl.Int64).alias("export_count"),
            pl.lit(None, dtype=pl.Float64).alias("last_exported_at"),
        )
        .with_columns(training_ready().alias("training_ready"))
        .select(EXAMPLE_COLUMNS)
    )


def _aligned(frame: pl.LazyFrame, schema: pl.Schema) -> pl.LazyFrame:
    present = frame.collect_schema()
    missing = [pl.lit(None, dtype=d).alias(n) for n, d in schema.items() if n not in present]
    return frame.with_columns(missing).select(pl.col(n).cast(d) for n, d in schema.items())


def _check_order(batch: pl.DataFrame, previous: pl.DataFrame) -> None:
    keys = pl.concat([previous, batch.select(ORDER)])
    file, line = pl.col(ORDER[0]), pl.col(ORDER[1])
    after = (file > file.shift()) | ((file == file.shift()) & (line > line.shift()))
    if not keys.select(after.slice(1).all()).item():
        raise ValueError(
            f"escalation records are not in strictly increasing {ORDER} order: "
            "the examples are built in batches of records in that order"
        )


def example_batches(
    records: pl.LazyFrame, legacy_records: pl.LazyFrame | None = None, rows: int = BATCH_ROWS
) -> Iterator[pl.DataFrame]:
    """Yield the `distillation_examples` of bronze and legacy records, `rows` records at a time.

    Both inputs are in (`source_file`, `line_no`) order (bronze by the shared ingest's contract,
    legacy records as the migration numbers them); they are merged in that order and streamed,
    so memory is bounded by a batch whatever the size of the day, and the rows come out in the
    order one `distillation_examples` over the whole day gives. Raises `ValueError` when the
    records are not in that order. An empty input gives one empty batch (the table's schema).
    No `legacy_records`: the partition has no legacy database.
    """
    if legacy_records is None:
        legacy_records = pl.LazyFrame(schema={**records.collect_schema(), **LEGACY_COLUMNS})
    schema = pl.Schema(
        {**records.collect_schema(), **legacy_records.collect_schema(), **LEGACY_COLUMNS}
    )
    merged = _aligned(records, schema).merge_sorted(
        _aligned(legacy_records, schema).sort(ORDER), list(ORDER)
    )
    previous = pl.DataFrame(schema={k: schema[k] for k in ORDER})
    for batch in frame_batches(merged, rows):
        _check_order(batch, previous)
        previous = batch.select(ORDER).tail(1)
        yield distillation_examples(batch.lazy()).collect()
