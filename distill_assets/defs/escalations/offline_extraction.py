"""Offline extraction of an escalation record's structured parts, as vectorized Polars expressions.

Reasoning step details (`action`, `content`, `reasoning`), tool usage details, SAM errors typed by
rule with `what_sam_said` / `what_was_wrong` / `correct_answer`, `improvements`, `principles`, the
seed flags `outdated` / `hallucination_risk` and distill's junk flags (`not_an_answer`,
`off_topic`). Every rule is data in `distill_assets.rules.escalations`; this module only turns the
rules into expressions over a whole partition (no per-row Python).
"""

from __future__ import annotations

import polars as pl

from distill_assets.rules import escalations as rules

RESPONSE = pl.col("claude_response")
NULL_STR = pl.lit(None, dtype=pl.String)
PRINCIPLE_DTYPE = pl.Struct(
    {"principle": pl.String(), "context": pl.String(), "importance": pl.Float64()}
)


def any_match(text: pl.Expr, patterns: tuple[str, ...]) -> pl.Expr:
    """Return whether any of `patterns` matches `text` (null text: False)."""
    return pl.any_horizontal([text.str.contains(p) for p in patterns]).fill_null(False)


def reasoning_steps(prose: pl.Expr | None = None) -> pl.Expr:
    """Ordered steps of the answer with `action`, `content` and `reasoning` (rules: steps).

    Numbered lines, else section headers, else ordinal sentences ("First, … Then … Finally …"),
    the last two from `prose` (the answer without code blocks; computed here when not given).

    Built in nested `list.eval` passes, each reading the fields the previous one materialized:
    within one pass an expression used twice is computed twice (the header match would run
    three times per step), so each value is computed once.
    """
    item = pl.element()
    numbered = RESPONSE.str.extract_all(rules.STEP_LINE).list.eval(
        item.str.replace(rules.STEP_PREFIX, "").str.strip_chars()
    )
    if prose is None:
        prose = RESPONSE.str.replace_all(rules.CODE_BLOCK, " ")
    headers = prose.str.extract_all(rules.HEADER_STEP_LINE).list.eval(
        item.str.replace(rules.HEADER_STEP_PREFIX, "")
        .str.replace_all(rules.HEADER_CLEANUP, "")
        .str.strip_chars()
    )
    ordinals = prose.str.extract_all(rules.ORDINAL_STEP).list.eval(
        item.str.replace(rules.ORDINAL_STEP_PREFIX, "").str.strip_chars()
    )
    steps = (
        pl.when(numbered.list.len() >= rules.MIN_ORDERED_STEPS)
        .then(numbered)
        .when(headers.list.len() >= rules.MIN_ORDERED_STEPS)
        .then(headers)
        .when(ordinals.list.len() >= rules.MIN_ORDERED_STEPS)
        .then(ordinals)
        .otherwise(numbered)
    )
    parts = steps.list.eval(pl.struct(step=item, header=item.str.extract_groups(rules.STEP_HEADER)))
    header = item.struct.field("header")
    texts = parts.list.eval(
        pl.struct(
            content=pl.coalesce(
                header.struct.field("1").str.strip_chars(),
                item.struct.field("step").str.replace_all(r"\*\*", "").str.strip_chars(),
            ),
            rest=header.struct.field("2").str.strip_chars(),
        )
    )
    content, rest = item.struct.field("content"), item.struct.field("rest")
    verbs = texts.list.eval(
        pl.struct(
            content=content,
            rest=rest,
            verb=content.str.extract(r"^([A-Za-z]+)", 1)
            .str.to_lowercase()
            .replace(rules.STEP_ACTION_ALIASES),
        )
    )
    verb = item.struct.field("verb")
    return verbs.list.eval(
        pl.struct(
            step_num=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),
            action=pl.when(verb.is_in(list(rules.STEP_ACTION_VERBS)))
            .then(verb)
            .otherwise(pl.lit(rules.STEP_DEFAULT_ACTION)),
            content=content,
            reasoning=pl.when(rest.str.len_chars() > 0).then(rest).otherwise(NULL_STR),
        )
    )


def tool_usage() -> pl.Expr:
    """Tools the answer uses, with the rules' purpose / input pattern / output handling."""
    names = RESPONSE.str.extract_all(rules.TOOL_NAME_PATTERN).list.eval(
        pl.element()
        .str.replace_all(rules.TOOL_NAME_STRIP, "")
        .replace(rules.TOOL_ALIASES)
        .unique()
        .sort()
    )
    return names.list.eval(
        pl.struct(
            tool=pl.element(),
            purpose=pl.element().replace_strict(rules.TOOL_PURPOSES, default=None),
            input_pattern=pl.element().replace_strict(rules.TOOL_INPUT_PATTERNS, default=None),
            output_handling=pl.lit(rules.TOOL_OUTPUT_HANDLING),
        )
    )


def _first_sentence_matching(pattern: str) -> pl.Expr:
    # one regex pass: the run of sentence characters around the rule's first match
    around = rf"{rules.SENTENCE_CHARS}*(?:{pattern}){rules.SENTENCE_CHARS}*[.!?]?"
    return RESPONSE.str.extract(f"({around})", 1).str.strip_chars()


def sam_error_type() -> pl.Expr:
    """Return the seed's `error_type` of SAM's attempt by the rules' ordered rule set, or null.

    Needs the columns `has_sam_attempt`, `token_count`, `reasoning_steps`, `has_code` and
    `reasoning_type`.
    """
    attempt_words = pl.col("sam_attempt").str.count_matches(rules.TOKEN_PATTERN)
    incomplete = (attempt_words < rules.INCOMPLETE_MAX_LENGTH_RATIO * pl.col("token_count")) & (
        (pl.col("reasoning_steps").list.len() >= rules.INCOMPLETE_MIN_ANSWER_STEPS)
        | pl.col("has_code")
    )
    chain = pl.when(~pl.col("has_sam_attempt")).then(NULL_STR)
    for error_type, pattern in rules.SAM_ERROR_RULES:
        chain = chain.when(RESPONSE.str.contains(pattern)).then(pl.lit(error_type))
    return (
        chain.when(incomplete.fill_null(False))
        .then(pl.lit(rules.INCOMPLETE_ERROR))
        .when(pl.col("reasoning_type") == "correction")
        .then(pl.lit(rules.SAM_ERROR_FALLBACK))
        .otherwise(NULL_STR)
    )


def _what_was_wrong() -> pl.Expr:
    kind = pl.col("sam_error_type")
    chain = pl.when(kind.is_null()).then(NULL_STR)
    for error_type, pattern in rules.SAM_ERROR_RULES:
        chain = chain.when(kind == error_type).then(_first_sentence_matching(pattern))
    described = chain.otherwise(kind.replace_strict(rules.SAM_ERROR_DESCRIPTIONS, default=None))
    return described.str.slice(0, rules.SAM_ERROR_TEXT_MAX_CHARS)


def _improvements() -> pl.Expr:
    items = []
    for text, answer_pattern, attempt_pattern in rules.IMPROVEMENT_RULES:
        condition = RESPONSE.str.contains(answer_pattern)
        if attempt_pattern is not None:
            condition = condition & ~pl.col("sam_attempt").str.contains(attempt_pattern).fill_null(
                False
            )
        items.append(pl.when(condition).then(pl.lit(text)).otherwise(NULL_STR))
    return pl.concat_list(items).list.drop_nulls()


def corrections() -> pl.Expr:
    """Return the seed's `corrections` object when SAM erred (`sam_error_type`), else null."""
    error = pl.struct(
        error_type=pl.col("sam_error_type"),
        what_sam_said=pl.col("sam_attempt")
        .str.extract_all(rules.SENTENCE)
        .list.last()
        .str.strip_chars()
        .str.slice(0, rules.SAM_ERROR_TEXT_MAX_CHARS),
        what_was_wrong=_what_was_wrong(),
        # the first paragraph: cut at the first blank line after the leading whitespace (a plain
        # search; extracting it with a lazy capture group costs three times as much)
        correct_answer=RESPONSE.str.strip_chars_start()
        .str.replace(r"(?s)\n\s*\n.*", "")
        .str.strip_chars()
        .str.slice(0, rules.SAM_ERROR_TEXT_MAX_CHARS),
    )
    return pl.when(pl.col("sam_error_type").is_not_null()).then(
        pl.struct(sam_errors=pl.concat_list([error]), improvements=_improvements())
    )


def with_principles(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add `principles` (list of {principle, context, importance}) by the rules' principle rules.

    Needs the column `prose` (the answer without code blocks). Sentences are exploded into a long
    frame, judged and regrouped, so the work stays vectorized.
    """
    context = (
        pl.col("query")
        .str.extract(r"^\s*([^\n]*)", 1)
        .str.strip_chars()
        .str.slice(0, rules.PRINCIPLE_CONTEXT_MAX_CHARS)
    )
    base = frame.with_row_index("_row")
    sentence = pl.col("principle")
    importance = pl.when(sentence.str.contains(rules.PRINCIPLE_RULES[0][1])).then(
        pl.lit(rules.PRINCIPLE_RULES[0][2])
    )
    for _, pattern, weight in rules.PRINCIPLE_RULES[1:]:
        importance = importance.when(sentence.str.contains(pattern)).then(pl.lit(weight))
    stated = (
        base.select(
            "_row",
            context.alias("context"),
            pl.concat_list(
                pl.col("prose").str.extract_all(rules.PRINCIPLE_START_CANDIDATE),
                pl.col("prose").str.extract_all(rules.PRINCIPLE_MID_CANDIDATE),
            ).alias("principle"),
        )
        .explode("principle")
        .with_columns(
            pl.col("principle")
            .str.replace_all(rules.PRINCIPLE_CLEANUP, "")
            .str.replace_all(r"\s+", " ")
            .str.strip_chars(),
            (pl.int_range(pl.len()).over("_row") + 1).alias("_order"),
        )
        .with_columns(importance.otherwise(pl.lit(None, dtype=pl.Float64)).alias("importance"))
        .filter(
            pl.col("importance").is_not_null()
            & (pl.col("principle").str.len_chars() >= rules.PRINCIPLE_MIN_CHARS)
        )
    )
    root_cause = base.filter(RESPONSE.str.contains(rules.ROOT_CAUSE_PATTERN)).select(
        "_row",
        context.alias("context"),
        pl.lit(rules.ROOT_CAUSE_PRINCIPLE).alias("principle"),
        pl.lit(0, dtype=pl.Int64).alias("_order"),
        pl.lit(rules.ROOT_CAUSE_IMPORTANCE).alias("importance"),
    )
    grouped = (
        pl.concat(
            [root_cause, stated.select(root_cause.collect_schema().names())],
            how="vertical_relaxed",
        )
        .unique(["_row", "principle"], keep="first", maintain_order=True)
        .sort("_row", "_order")
        .group_by("_row", maintain_order=True)
        .agg(
            pl.struct(
                principle=pl.col("principle"),
                context=pl.col("context"),
                importance=pl.col("importance").cast(pl.Float64),
            )
            .head(rules.MAX_PRINCIPLES)
            .alias("principles")
        )
    )
    return (
        base.join(grouped, on="_row", how="left", maintain_order="left")
        .with_columns(pl.col("principles").fill_null(pl.lit([], dtype=pl.List(PRINCIPLE_DTYPE))))
        .drop("_row")
    )


def _terms(text: pl.Expr) -> pl.Expr:
    return (
        text.str.to_lowercase()
        .str.extract_all(rules.RELEVANCE_TERM)
        .list.eval(
            pl.element()
            .filter(~pl.element().is_in(list(rules.RELEVANCE_STOPWORDS)))
            .str.slice(0, rules.RELEVANCE_STEM_CHARS)
            .unique()
        )
    )


def with_relevance(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add `query_terms` (how many content terms the query has) and `query_overlap`.

    `query_overlap` is the share of the query's terms the answer contains (null when the query
    has none). A term is shared when the lower-cased answer contains it (its stem) as a
    substring; the terms are exploded into a long frame and matched with one vectorized
    `contains` per (row, term).
    """
    base = frame.with_row_index("_row")
    pairs = (
        base.select("_row", _terms(pl.col("query")).alias("_term"), RESPONSE.str.to_lowercase())
        .explode("_term")
        .drop_nulls("_term")
        .group_by("_row")
        .agg(
            pl.len().cast(pl.Int64).alias("query_terms"),
            pl.col("claude_response")
            .str.contains(pl.col("_term"), literal=True)
            .sum()
            .cast(pl.Int64)
            .alias("_shared"),
        )
    )
    return (
        base.join(pairs, on="_row", how="left", maintain_order="left")
        .with_columns(
            pl.col("query_terms").fill_null(0),
            (pl.col("_shared") / pl.col("query_terms")).alias("query_overlap"),
        )
        .drop("_row", "_shared")
    )


def answer_evidence() -> pl.Expr:
    """Points of answer structure in the reply (rules: answer-ness, "answer evidence").

    Needs the columns `prose`, `reasoning_steps`, `has_code` and `query_overlap`.
    """
    prose = pl.col("prose")

    def points(condition: pl.Expr, weight: int) -> pl.Expr:
        return pl.when(condition.fill_null(False)).then(pl.lit(weight)).otherwise(pl.lit(0))

    return pl.sum_horizontal(
        prose.str.count_matches(rules.EXPLANATION_MARKERS).clip(0, rules.EVIDENCE_MAX_EXPLAIN),
        prose.str.count_matches(rules.GUIDANCE_MARKERS).clip(0, rules.EVIDENCE_MAX_GUIDE),
        points(pl.col("reasoning_steps").list.len() >= 2, rules.EVIDENCE_STEPS),
        points(pl.col("has_code"), rules.EVIDENCE_CODE),
        points(prose.str.count_matches(rules.TOKEN_PATTERN) >= rules.EVIDENCE_LONG_PROSE_WORDS, 1),
        points(pl.col("query_overlap") >= rules.EVIDENCE_OVERLAP, 1),
    ).cast(pl.Int64)


def step_structure() -> dict[str, pl.Expr]:
    """Return `ordered_steps` (the most of numbered, header and ordinal steps) and `nested_steps`.

    Needs the column `prose` (rules: steps, nested steps).
    """
    prose = pl.col("prose")
    numbered = RESPONSE.str.count_matches(rules.STEP_LINE)
    headers = prose.str.count_matches(rules.HEADER_STEP_LINE)
    ordinals = prose.str.count_matches(rules.ORDINAL_STEP)
    items = prose.str.count_matches(rules.LIST_ITEM)
    enough = rules.MIN_ORDERED_STEPS
    outer = (headers >= enough) | (ordinals >= enough)
    nested = (outer & (items >= enough)) | (
        (numbered >= enough) & prose.str.contains(rules.INDENTED_LIST_ITEM)
    )
    return {
        "ordered_steps": pl.max_horizontal(numbered, headers, ordinals).cast(pl.Int64),
        "nested_steps": nested.fill_null(False),
    }


def _share(part: pl.Expr, whole: pl.Expr, minimum: float) -> pl.Expr:
    return (whole > 0) & (part >= minimum * whole)


def answer_conditions() -> dict[str, pl.Expr]:
    """Return the role-cue condition of each rejection kind (rules: answer-ness), before evidence.

    Needs the columns `prose`, `has_code` and `query_overlap`.
    """
    head = RESPONSE.str.slice(0, rules.ANSWER_HEAD_CHARS)
    unrelated = pl.col("query_overlap").fill_null(0.0) < rules.ERROR_PAGE_MAX_OVERLAP
    error_page = RESPONSE.str.contains(rules.ERROR_PAGE_START) | (
        pl.any_horizontal(
            [
                RESPONSE.str.contains(p) & ~pl.col("query").str.contains(p)
                for p in rules.ERROR_PAGE_INDICATORS
            ]
        )
        & unrelated
    )
    prose = pl.col("prose")
    sentences = prose.str.count_matches(rules.SENTENCE_END) + prose.str.contains(
        rules.UNTERMINATED_END
    ).cast(pl.UInt32)
    questions = prose.str.count_matches(rules.QUESTION_END)
    last_is_question = prose.str.strip_chars_end().str.ends_with("?")
    lines = RESPONSE.str.count_matches(rules.NONBLANK_LINE) - RESPONSE.str.count_matches(
        rules.FENCE_LINE
    )
    cues = {kind: head.str.contains(pattern) for kind, pattern in rules.ANSWER_ROLE_CUES}
    return {
        "acknowledgement": RESPONSE.str.contains(rules.ACKNOWLEDGEMENT),
        "error_page": error_page,
        "dont_know": RESPONSE.str.contains(rules.DONT_KNOW)
        & ~RESPONSE.str.contains(rules.HEDGE_CONTINUATION),
        "question_back": ~pl.col("has_code")
        & _share(questions, sentences, rules.QUESTION_BACK_MIN_SHARE)
        & last_is_question,
        "pasted_log": (lines >= rules.PASTED_MIN_LINES)
        & _share(RESPONSE.str.count_matches(rules.LOG_LINE), lines, rules.PASTED_MIN_SHARE),
        "shell_command": ~pl.col("has_code")
        & _share(RESPONSE.str.count_matches(rules.COMMAND_LINE), lines, rules.PASTED_MIN_SHARE),
        **cues,
    }


def answer_rejection() -> pl.Expr:
    """Return the first answer-ness rejection kind whose condition holds, or null (an answer).

    Needs the columns of `answer_conditions` and `answer_evidence`, and `answer_evidence` itself
    as a column of that name.
    """
    conditions = answer_conditions()
    evidence = pl.col("answer_evidence")
    without_code = evidence - pl.col("has_code").cast(pl.Int64) * rules.EVIDENCE_CODE
    chain = None
    for kind in rules.ANSWER_REJECTIONS:
        condition = conditions[kind]
        if kind in rules.MAX_EVIDENCE:
            points = without_code if kind in rules.CODE_IS_PASTED_FOR else evidence
            condition = condition & (points <= rules.MAX_EVIDENCE[kind])
        condition = condition.fill_null(False)
        chain = (pl.when if chain is None else chain.when)(condition).then(pl.lit(kind))
    return chain.otherwise(NULL_STR)


def junk_conditions() -> dict[str, pl.Expr]:
    """Conditions of distill's junk flags (see rules: junk captures).

    Needs the columns `answer_rejection`, `answer_evidence`, `domain`, `query_terms` and
    `query_overlap`.
    """
    return {
        "not_an_answer": pl.col("answer_rejection").is_not_null(),
        "off_topic": (pl.col("query_terms") >= rules.OFF_TOPIC_MIN_QUERY_TERMS)
        & (pl.col("query_overlap") < rules.OFF_TOPIC_MAX_OVERLAP)
        & ~pl.col("domain").is_in(list(rules.OFF_TOPIC_EXEMPT_DOMAINS))
        & (pl.col("answer_evidence") <= rules.OFF_TOPIC_MAX_EVIDENCE),
    }
