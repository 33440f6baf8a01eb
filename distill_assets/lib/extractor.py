"""distill's one extractor interface: structured fields from text, offline first, LLM optional.

An extraction turns a frame of inputs (one row per item, a unique `key` column) into a frame of
output fields (the key plus the extractor's `schema`). Two kinds implement it:

- an offline extractor (`FrameExtractor`): deterministic, vectorized Polars/DuckDB rules over the
  whole frame; always available, always the fallback;
- `LlmExtractor`: one chat completion per row through `lib.llm.ChatClient` (batched with bounded
  concurrency), a room-specific `prompt` builder and `parse` function. A row whose call fails,
  whose answer does not parse, or whose fields do not fit the schema is not lost: it falls back.

`extract_with_fallback` runs the LLM extractor when one is configured, sends the rows it could not
do to the offline extractor, and reports how many rows each extractor produced and why rows fell
back (the counts go into materialization metadata). It never fails the run because of the LLM.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import polars as pl

from distill_assets.lib.llm import ChatClient, LlmError, Message

OFFLINE = "offline"
UNPARSEABLE = "unparseable_response"
SCHEMA_MISMATCH = "schema_mismatch"


class FrameExtractor(Protocol):
    """Extracts `schema` fields for every row of a frame (one output row per input row)."""

    name: str
    schema: pl.Schema

    def extract(self, inputs: pl.DataFrame, key: str) -> pl.DataFrame:
        """Return `key` plus the `schema` columns, one row per input row, in input order."""
        ...


@dataclass(frozen=True)
class Extraction:
    """Extracted fields for every input row and how they were obtained."""

    frame: pl.DataFrame
    rows_by_extractor: dict[str, int] = field(default_factory=dict)
    fallbacks: dict[str, int] = field(default_factory=dict)

    @property
    def fallback_rows(self) -> int:
        """Rows the LLM extractor could not do (done offline instead)."""
        return sum(self.fallbacks.values())


class LlmExtractor:
    """Extract fields one row at a time with a chat model (see the module docstring).

    `prompt(row)` returns the conversation for one input row (a dict of its columns); `parse(text,
    row)` returns the output fields as a dict or raises `ValueError` when the answer is unusable.
    """

    def __init__(
        self,
        client: ChatClient,
        schema: pl.Schema,
        prompt: Callable[[Mapping[str, Any]], list[Message]],
        parse: Callable[[str, Mapping[str, Any]], dict[str, Any]],
        *,
        temperature: float,
        max_tokens: int,
    ) -> None:
        """Configure the client, the output schema, prompt builder, parser and sampling."""
        self.client = client
        self.schema = schema
        self.prompt = prompt
        self.parse = parse
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.name = client.name

    def extract_rows(self, inputs: pl.DataFrame, key: str) -> tuple[pl.DataFrame, dict[Any, str]]:
        """Return the rows extracted (key + schema) and, per failed key, why it failed."""
        rows = inputs.to_dicts()
        answers = self.client.complete_many(
            [self.prompt(row) for row in rows],
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        done: list[dict[str, Any]] = []
        failed: dict[Any, str] = {}
        for row, answer in zip(rows, answers, strict=True):
            if isinstance(answer, LlmError):
                failed[row[key]] = answer.reason
                continue
            try:
                fields = self.parse(answer, row)
            except (ValueError, KeyError, TypeError):
                failed[row[key]] = UNPARSEABLE
                continue
            try:
                done.append({key: row[key], **_fit(fields, self.schema)})
            except (ValueError, TypeError):
                failed[row[key]] = SCHEMA_MISMATCH
        frame = pl.DataFrame(
            done, schema={key: inputs.schema[key], **self.schema}, orient="row", strict=False
        )
        return frame, failed


def extract_with_fallback(
    inputs: pl.DataFrame,
    key: str,
    offline: FrameExtractor,
    llm: LlmExtractor | None = None,
) -> Extraction:
    """Extract every row: by `llm` when given, the rest (and everything else) by `offline`."""
    if llm is None or inputs.is_empty():
        frame = offline.extract(inputs, key)
        return Extraction(frame=frame, rows_by_extractor={offline.name: frame.height})
    by_llm, failed = llm.extract_rows(inputs, key)
    rest = inputs.filter(pl.col(key).is_in(list(failed)))
    by_offline = offline.extract(rest, key)
    order = inputs.select(key).with_row_index("_order")
    frame = (
        pl.concat([by_llm, by_offline.select(by_llm.columns).cast(by_llm.schema)])
        .join(order, on=key, how="left")
        .sort("_order")
        .drop("_order")
    )
    fallbacks: dict[str, int] = {}
    for reason in failed.values():
        fallbacks[reason] = fallbacks.get(reason, 0) + 1
    return Extraction(
        frame=frame,
        rows_by_extractor={llm.name: by_llm.height, offline.name: by_offline.height},
        fallbacks=dict(sorted(fallbacks.items())),
    )


def parse_json_object(text: str) -> dict[str, Any]:
    """Return the first JSON object in a model answer (fenced in ``` or bare), or raise."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("no JSON object in the answer")
    value = json.loads(text[start : end + 1])
    if not isinstance(value, dict):
        raise ValueError("the answer's JSON is not an object")
    return value


def _fit(fields: Mapping[str, Any], schema: pl.Schema) -> dict[str, Any]:
    """Check that `fields` has every schema column and that the values cast to their types."""
    missing = [name for name in schema if name not in fields]
    if missing:
        raise ValueError(f"missing fields {missing}")
    wrong = [name for name, dtype in schema.items() if not conforms(fields[name], dtype)]
    if wrong:
        raise TypeError(f"fields {wrong} do not have the schema's types")
    return {name: fields[name] for name in schema}


def conforms(value: Any, dtype: pl.DataType) -> bool:
    """Return whether a JSON-like value fits a Polars type exactly (None fits every type)."""
    if value is None:
        return True
    if dtype in (pl.String, pl.Boolean):
        return isinstance(value, str if dtype == pl.String else bool)
    if dtype.is_integer() or dtype.is_float():
        allowed = (int,) if dtype.is_integer() else (int, float)
        return isinstance(value, allowed) and not isinstance(value, bool)
    if isinstance(dtype, pl.List):
        return isinstance(value, list) and all(conforms(v, dtype.inner) for v in value)
    if isinstance(dtype, pl.Struct):
        return isinstance(value, dict) and all(
            conforms(value.get(f.name), f.dtype) for f in dtype.fields
        )
    raise NotImplementedError(f"extraction schemas hold JSON-like types, not {dtype}")
