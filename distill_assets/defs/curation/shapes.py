"""Feed rows in the shape their config publishes, for configs whose feed tables hold a simpler one.

`FEED_CORE_SCHEMAS` (contracts/published.py) lists them. `sft` feeds hold whole conversations
(`messages`); published rows are TRL's conversational prompt-completion form: `prompt` is every
message before the last, `completion` the last (the assistant target), so SFTTrainer's default
`completion_only_loss` trains on the target alone, never on earlier assistant turns repeated as
context. `dpo` feeds hold plain strings; published pairs are conversational: `prompt` one user
message, `chosen`/`rejected` one assistant message each, so trainers apply the chat template.
"""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.published import FEED_CORE_SCHEMAS, published_schema


def _one_message(role: str, content: str) -> pl.Expr:
    """Return a one-message list `[{role, content: <column content>}]`."""
    return pl.concat_list(pl.struct(pl.lit(role).alias("role"), pl.col(content).alias("content")))


def shape_columns(config: str) -> list[pl.Expr]:
    """Return the expressions computing a config's published core columns from its feed ones."""
    if config == "sft":
        messages = pl.col("messages")
        return [
            messages.list.slice(0, messages.list.len() - 1).alias("prompt"),
            messages.list.slice(-1, 1).alias("completion"),
        ]
    if config == "dpo":
        return [
            _one_message("user", "prompt").alias("prompt"),
            _one_message("assistant", "chosen").alias("chosen"),
            _one_message("assistant", "rejected").alias("rejected"),
        ]
    return []


def published_shape(feeds: pl.LazyFrame, config: str) -> pl.LazyFrame:
    """Return feed rows with the config's published core columns in place of the feed ones.

    Columns other than the core ones (common, internal, `subject`, `partition`) are kept, in
    order; a config whose feed tables already hold the published columns is returned unchanged.
    """
    if config not in FEED_CORE_SCHEMAS:
        return feeds
    feed_only = [c for c in FEED_CORE_SCHEMAS[config] if c not in published_schema(config)]
    return feeds.with_columns(shape_columns(config)).drop(feed_only)
