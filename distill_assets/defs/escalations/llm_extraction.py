"""Optional LLM extraction of the seed record's reasoning parts (off by default).

Behind the project's one extractor interface (`lib.extractor`): when an OpenAI-compatible endpoint
is configured (`DISTILL_LLM_BASE_URL`, `DISTILL_LLM_MODEL`), each example's `reasoning_steps`,
`corrections` and `principles`, and whether the reply answers the query at all (the answer-ness
judge: `answer_rejection`), are asked of the model (batched, bounded concurrency). A row whose
call fails, whose answer is not a JSON object or whose fields do not fit the schema keeps the
offline extraction, and the fallbacks are counted by reason. The score, training format and
readiness are then recomputed from the fields that won.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import polars as pl

from distill_assets.defs.escalations.examples import (
    CORRECTIONS_DTYPE,
    EXAMPLE_COLUMNS,
    PRINCIPLE_DTYPE,
    STEP_DTYPE,
    quality_score,
)
from distill_assets.defs.escalations.gate import training_ready
from distill_assets.lib.extractor import (
    Extraction,
    LlmExtractor,
    extract_with_fallback,
    parse_json_object,
)
from distill_assets.lib.llm import ChatClient, Message
from distill_assets.rules import escalations as rules

KEY = "id"
LLM_SCHEMA = pl.Schema(
    {
        "reasoning_steps": pl.List(STEP_DTYPE),
        "corrections": CORRECTIONS_DTYPE,
        "principles": pl.List(PRINCIPLE_DTYPE),
        "answer_rejection": pl.String(),
    }
)


class OfflineExtraction:
    """The offline extractor: the fields `distillation_examples` already computed by rule."""

    name = "offline"
    schema = LLM_SCHEMA

    def extract(self, inputs: pl.DataFrame, key: str) -> pl.DataFrame:
        """Return `key` and the offline fields of each input row."""
        return inputs.select(key, *LLM_SCHEMA)


def prompt(row: Mapping[str, Any]) -> list[Message]:
    """Return the conversation asking the model for one example's fields."""
    example = {
        "query": row["query"],
        "sam_attempt": row["sam_attempt"],
        "claude_response": row["claude_response"],
    }
    return [
        {"role": "system", "content": rules.LLM_SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(example, ensure_ascii=False)},
    ]


def parse(text: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """Return the fields of a model answer (raises ValueError/KeyError when unusable)."""
    answer = parse_json_object(text)
    corrections = answer["corrections"]
    if corrections is not None and not corrections.get("sam_errors"):
        corrections = None
    # the answer-ness judge: null (an answer) or one of the rules' rejection kinds; a model that
    # does not judge keeps the offline verdict
    rejection = answer.get("not_an_answer", row["answer_rejection"])
    if rejection is not None and rejection not in rules.ANSWER_REJECTIONS:
        raise ValueError(f"unknown not_an_answer kind {rejection!r}")
    return {
        "reasoning_steps": answer["reasoning_steps"],
        "corrections": corrections,
        "principles": answer["principles"],
        "answer_rejection": rejection,
    }


def rescore(examples: pl.DataFrame) -> pl.DataFrame:
    """Recompute flags, score, training format and readiness after fields were replaced.

    The `not_an_answer` flag follows `answer_rejection` (the junk flags close the list).
    """
    has_error = pl.col("corrections").struct.field("sam_errors").list.len().fill_null(0) > 0
    steps = pl.col("reasoning_steps").list.len()
    flags = pl.col("quality_flags")
    junk = pl.concat_list(
        pl.when(pl.col("answer_rejection").is_not_null()).then(pl.lit("not_an_answer")),
        pl.when(flags.list.contains("off_topic")).then(pl.lit("off_topic")),
    ).list.drop_nulls()
    reflagged = pl.concat_list(
        flags.list.eval(pl.element().filter(~pl.element().is_in(list(rules.JUNK_FLAGS)))), junk
    ).alias("quality_flags")
    return (
        examples.with_columns(reflagged)
        .with_columns(quality_score().alias("quality_score"))
        .with_columns(
            pl.when(pl.col("training_format") == "preference")
            .then(pl.lit("preference"))
            .when(has_error)
            .then(pl.lit("correction"))
            .when(steps >= rules.COT_EXPORT_MIN_STEPS)
            .then(pl.lit("cot"))
            .otherwise(pl.lit("instruction"))
            .alias("training_format"),
            training_ready().alias("training_ready"),
        )
    )


def extract_with_llm(
    examples: pl.DataFrame, client: ChatClient | None
) -> tuple[pl.DataFrame, Extraction | None]:
    """Return `examples` with LLM-extracted fields where the model answered well (else as is)."""
    if client is None or examples.is_empty():
        return examples, None
    llm = LlmExtractor(
        client,
        LLM_SCHEMA,
        prompt,
        parse,
        temperature=rules.LLM_TEMPERATURE,
        max_tokens=rules.LLM_MAX_TOKENS,
    )
    inputs = examples.select(KEY, "query", "sam_attempt", "claude_response", *LLM_SCHEMA)
    extraction = extract_with_fallback(inputs, KEY, OfflineExtraction(), llm)
    merged = (
        examples.drop(*LLM_SCHEMA)
        .join(extraction.frame.cast(dict(LLM_SCHEMA)), on=KEY, how="left", maintain_order="left")
        .select(EXAMPLE_COLUMNS)
    )
    return rescore(merged), extraction
