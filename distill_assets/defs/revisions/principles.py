"""Improvement principles from revision pairs: inputs, extractors, extraction.

See docs/sources/revisions.md#principles.

Every pair of `revisions/revision_pairs` is one extraction input (`extraction_inputs`): the seed's
inputs truncated as `rules.principles` says, keyed by the pair's `principle_id` (derived from its
`source_ref` by `pairing.with_principle_id`, the id its `dpo` row names in its metadata). Two
extractors implement the project's one extractor interface (`lib.extractor`):

- `OfflinePrincipleExtractor` (the default): the deterministic rule set of `rules.principles`,
  Polars expressions over whole columns;
- `llm_principle_extractor(client)`: the seed's prompt to any OpenAI-compatible chat endpoint,
  its JSON answer checked field by field. Rows it cannot do fall back to the offline extractor.

`extract_turn_principles` runs them and returns one principle per pair (`TURN_PRINCIPLE_SCHEMA`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import polars as pl

from distill_assets.defs.revisions.pairing import PRINCIPLE_ID, with_principle_id
from distill_assets.lib.extractor import (
    Extraction,
    LlmExtractor,
    extract_with_fallback,
    parse_json_object,
)
from distill_assets.lib.llm import ChatClient, Message
from distill_assets.rules import principles as rules

KEY = "principle_id"
OFFLINE_EXTRACTOR = "offline"
CUT_MARKER = "\n[…]\n"

PRINCIPLE_SCHEMA = pl.Schema(
    {
        "category": pl.String(),
        "trigger_pattern": pl.String(),
        "title": pl.String(),
        "principle": pl.String(),
        "why": pl.String(),
        "original_issue": pl.String(),
        "successful_fix": pl.String(),
        "extractor": pl.String(),
    }
)
INPUT_SCHEMA = pl.Schema(
    {
        KEY: pl.String(),
        "pair_id": pl.String(),
        "turn_id": pl.String(),
        "event_time": pl.Float64(),
        "query": pl.String(),
        "original": pl.String(),
        "revised": pl.String(),
        "hints": pl.String(),
        "focus": pl.String(),
        "original_chars": pl.UInt32(),
        "revised_chars": pl.UInt32(),
    }
)
TURN_PRINCIPLE_SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "source": pl.String(),
        "source_ref": pl.String(),
        "pair_id": pl.String(),
        "turn_id": pl.String(),
        "event_time": pl.Float64(),
        **PRINCIPLE_SCHEMA,
    }
)
_PAIR_METADATA = pl.Struct(
    {
        "turn_id": pl.String(),
        "revision_hints": pl.List(pl.String()),
        "revision_focus": pl.List(pl.String()),
    }
)


def head_tail(text: pl.Expr, limit: int) -> pl.Expr:
    """Cut a text longer than `limit` chars to its first `HEAD_SHARE` and last part of `limit`."""
    head = round(limit * rules.HEAD_SHARE)
    tail = limit - head
    return (
        pl.when(text.str.len_chars() > limit)
        .then(text.str.head(head) + pl.lit(CUT_MARKER) + text.str.tail(tail))
        .otherwise(text)
    )


def extraction_inputs(pairs: pl.DataFrame) -> pl.DataFrame:
    """Return the extraction inputs (`INPUT_SCHEMA`) of a frame of `dpo` revision pairs."""
    meta = pl.col("metadata").str.json_decode(_PAIR_METADATA)
    # derived from the pair's source_ref exactly as `build_pairs` names it in the metadata
    return (
        with_principle_id(pairs)
        .select(
            pl.col(PRINCIPLE_ID).alias(KEY),
            pl.col("id").alias("pair_id"),
            meta.struct.field("turn_id").alias("turn_id"),
            pl.col("event_time"),
            pl.col("prompt").str.head(rules.QUERY_CHARS).alias("query"),
            head_tail(pl.col("rejected"), rules.RESPONSE_CHARS).alias("original"),
            head_tail(pl.col("chosen"), rules.RESPONSE_CHARS).alias("revised"),
            meta.struct.field("revision_hints").list.join(rules.HINT_SEPARATOR).alias("hints"),
            meta.struct.field("revision_focus").list.join(rules.HINT_SEPARATOR).alias("focus"),
            pl.col("rejected").str.len_chars().alias("original_chars"),
            pl.col("chosen").str.len_chars().alias("revised_chars"),
        )
        .cast(dict(INPUT_SCHEMA))
    )


def _first_match(rules_in_order: list[tuple[pl.Expr, str]], default: pl.Expr) -> pl.Expr:
    """`when(cond1).then(value1)...otherwise(default)` over (condition, value) pairs."""
    if not rules_in_order:
        return default
    (condition, value), *rest = rules_in_order
    chain = pl.when(condition).then(pl.lit(value))
    for condition, value in rest:
        chain = chain.when(condition).then(pl.lit(value))
    return chain.otherwise(default)


def _signals(original: pl.Expr, revised: pl.Expr) -> dict[str, pl.Expr]:
    """Return each before/after signal of `rules.SIGNALS` as a boolean expression."""
    found = {
        name: revised.str.contains(pattern) & ~original.str.contains(pattern)
        for name, pattern in rules.SIGNALS.items()
    }
    ratio = pl.col("revised_chars").cast(pl.Float64) / pl.col("original_chars").clip(1)
    found["shrank"] = ratio < rules.SHRANK_RATIO
    found["grew"] = ratio > rules.GREW_RATIO
    return found


def _category(signals: dict[str, pl.Expr]) -> pl.Expr:
    """Return the category rule of `rules.principles` (focus, then hint keywords, then signals)."""
    first_focus = pl.col("focus").fill_null("").str.split(rules.HINT_SEPARATOR).list.first()
    focus = first_focus.str.to_lowercase().str.strip_chars()
    named = {c: c for c in rules.CATEGORIES if c != rules.FALLBACK_CATEGORY}
    by_focus = focus.replace_strict({**named, **rules.FOCUS_ALIASES}, default=None)
    hints = pl.col("hints").fill_null("").str.to_lowercase()
    by_hints = [(hints.str.contains(rx), cat) for cat, rx in rules.HINT_KEYWORDS.items()]
    by_signal = [(signals[s], rules.SIGNAL_CATEGORY[s]) for s in rules.SIGNAL_ORDER]
    fallback = _first_match(by_signal, pl.lit(rules.FALLBACK_CATEGORY))
    return by_focus.fill_null(_first_match(by_hints, fallback))


def _trigger() -> pl.Expr:
    """Return the task noun phrase of the query (`TASK_PATTERNS`, else its first content words)."""
    query = pl.col("query").fill_null("").str.to_lowercase()
    words = (
        query.str.extract_all(r"[a-z0-9][a-z0-9'-]*")
        .list.eval(pl.element().filter(~pl.element().is_in(rules.STOP_WORDS)))
        .list.head(rules.FALLBACK_TRIGGER_WORDS)
        .list.join(" ")
    )
    fallback = pl.when(words != "").then(words + " queries").otherwise(pl.lit("general queries"))
    patterns = [(query.str.contains(rx), trigger) for rx, trigger in rules.TASK_PATTERNS]
    return _first_match(patterns, fallback)


def _template_key(signals: dict[str, pl.Expr]) -> pl.Expr:
    """Return the strongest signal that fits the category, else the category's own template."""
    category = pl.col("category")
    fitting = [(signals[s] & (category == rules.SIGNAL_CATEGORY[s]), s) for s in rules.SIGNAL_ORDER]
    own = pl.when(category.is_in(list(rules.TEMPLATES))).then(category)
    return _first_match(fitting, own.otherwise(pl.lit(rules.FALLBACK_CATEGORY)))


def _fill(field: str) -> pl.Expr:
    """Return the `field` template of each row's key with its placeholders filled in."""
    text = pl.col("template_key").replace_strict(
        {key: t[field] for key, t in rules.TEMPLATES.items()}, return_dtype=pl.String
    )
    # the hints go in last, so braces in a validator's hint are never taken for a placeholder
    values = {
        "{columns}": pl.col("columns"),
        "{before}": pl.col("original_chars").cast(pl.String),
        "{after}": pl.col("revised_chars").cast(pl.String),
        "{category}": pl.col("category").str.to_titlecase(),
        "{hints}": pl.col("hints_phrase"),
    }
    for placeholder, value in values.items():
        text = text.str.replace_all(placeholder, value, literal=True)
    return text


def _table_columns(revised: pl.Expr) -> pl.Expr:
    """Return the first markdown table's header cells as 'A, B, and C' (a stand-in if none)."""
    cells = (
        revised.str.extract(r"(?m)^\s*\|(.*)\|\s*$", 1)
        .fill_null("")
        .str.split("|")
        .list.eval(pl.element().str.strip_chars().filter(pl.element() != ""))
    )
    count = cells.list.len()
    last = cells.list.last()
    head = cells.list.head(count - 1).list.join(", ")
    return (
        pl.when(count == 0)
        .then(pl.lit("the compared attributes"))
        .when(count == 1)
        .then(last)
        .when(count == 2)
        .then(head + " and " + last)
        .otherwise(head + ", and " + last)
    )


class OfflinePrincipleExtractor:
    """The deterministic, offline principle extractor (rule set: `rules.principles`)."""

    name = OFFLINE_EXTRACTOR
    schema = PRINCIPLE_SCHEMA

    def extract(self, inputs: pl.DataFrame, key: str) -> pl.DataFrame:
        """Return `key` and the `PRINCIPLE_SCHEMA` fields of every input row, in input order."""
        signals = _signals(pl.col("original").fill_null(""), pl.col("revised").fill_null(""))
        hint = pl.element().str.strip_chars().str.strip_chars_end(".")
        # "Use a table" → "use a table", but "UDP is unreliable" keeps its acronym
        lowered = pl.when(hint.str.contains(r"^[A-Z][a-z ]")).then(
            hint.str.head(1).str.to_lowercase() + hint.str.slice(1)
        )
        hints_phrase = (
            pl.col("hints")
            .fill_null("")
            .str.split(rules.HINT_SEPARATOR)
            .list.eval(lowered.otherwise(hint))
            .list.join(rules.HINT_SEPARATOR)
        )
        trigger_topic = pl.col("trigger_pattern").str.replace(
            r"\s+(queries|questions|requests|replies)$", ""
        )
        worked = inputs.with_columns(
            _category(signals).alias("category"),
            _trigger().alias("trigger_pattern"),
            hints_phrase.alias("hints_phrase"),
            _table_columns(pl.col("revised").fill_null("")).alias("columns"),
        ).with_columns(_template_key(signals).alias("template_key"))
        title_suffix = _fill("title")
        action = _fill("action")
        return worked.select(
            pl.col(key),
            pl.col("category"),
            pl.col("trigger_pattern"),
            (trigger_topic.str.to_titlecase() + " " + title_suffix).alias("title"),
            pl.format("When answering {}, {}.", "trigger_pattern", action).alias("principle"),
            _fill("why").alias("why"),
            _fill("issue").alias("original_issue"),
            _fill("fix").alias("successful_fix"),
            pl.lit(self.name).alias("extractor"),
        )


SYSTEM_PROMPT = (
    "You extract transferable improvement principles. A response was revised after a "
    "validator's hints and the revision was approved. Explain why the revision was better as "
    "one principle that applies to future similar queries. Answer with one JSON object only, "
    "keys: category (one of: {categories}), trigger_pattern (a short noun phrase naming the kind "
    "of query, e.g. 'price comparison queries'), title, principle (one or two sentences), why, "
    "original_issue, successful_fix. Be brief."
)


def principle_prompt(row: Mapping[str, Any]) -> list[Message]:
    """Return the seed's extraction conversation for one input row."""
    user = "\n\n".join(
        [
            f"Query: {row['query']}",
            f"Original response (got REVISE):\n{row['original']}",
            f"Revision hints: {row['hints']}",
            f"Revision focus: {row['focus'] or 'none'}",
            f"Revised response (got APPROVE):\n{row['revised']}",
        ]
    )
    categories = ", ".join(rules.CATEGORIES)
    return [
        {"role": "system", "content": SYSTEM_PROMPT.format(categories=categories)},
        {"role": "user", "content": user},
    ]


def parse_principle(text: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """Return the principle fields of a model answer, or raise `ValueError` when unusable.

    Every field must be a non-empty string (whitespace runs collapsed); the category must be one
    of `rules.CATEGORIES` or an alias of one; the trigger is lower-cased. `extractor` is left to
    the caller.
    """
    fields = parse_json_object(text)
    values: dict[str, Any] = {}
    for name in PRINCIPLE_SCHEMA:
        if name == "extractor":
            continue
        value = fields.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} is missing or not a non-empty string")
        values[name] = " ".join(value.split())
    category = values["category"].lower()
    values["category"] = rules.FOCUS_ALIASES.get(category, category)
    if values["category"] not in rules.CATEGORIES:
        raise ValueError(f"unknown category {json.dumps(category)}")
    values["trigger_pattern"] = values["trigger_pattern"].lower()
    return values


def llm_principle_extractor(client: ChatClient) -> LlmExtractor:
    """Return the LLM extractor of principles (seed's inputs, temperature 0.3, ~150 tokens)."""

    def parse(text: str, row: Mapping[str, Any]) -> dict[str, Any]:
        return {**parse_principle(text, row), "extractor": client.name}

    return LlmExtractor(
        client,
        PRINCIPLE_SCHEMA,
        principle_prompt,
        parse,
        temperature=rules.LLM_TEMPERATURE,
        max_tokens=rules.LLM_MAX_TOKENS,
    )


def extract_turn_principles(
    pairs: pl.DataFrame, client: ChatClient | None, source: str
) -> tuple[pl.DataFrame, Extraction]:
    """Return one principle per revision pair (`TURN_PRINCIPLE_SCHEMA`) and how it was done."""
    inputs = extraction_inputs(pairs)
    llm = llm_principle_extractor(client) if client is not None else None
    extraction = extract_with_fallback(inputs, KEY, OfflinePrincipleExtractor(), llm)
    rows = inputs.join(extraction.frame, on=KEY, how="left").select(
        pl.col(KEY).alias("id"),
        pl.lit(source).alias("source"),
        pl.format("turn:{}", "turn_id").alias("source_ref"),
        "pair_id",
        "turn_id",
        "event_time",
        *PRINCIPLE_SCHEMA,
    )
    return rows.cast(dict(TURN_PRINCIPLE_SCHEMA)).sort("source_ref", "id"), extraction
