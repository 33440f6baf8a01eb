"""What the release check `groups_within_one_split` looks for: every way a split can leak.

Judged on the published rows of every config (with the curated `split_group` of each):

- `groups_in_several_splits`: a split group (task, session, scenario, player) in both splits;
- `prompts_in_several_splits`: one normalized prompt (`splits.prompt_text`) in both splits;
- `records_in_several_splits`: one source record (`source`, `source_ref`) in one split in one
  config and in the other in another (a trace step in `sft` test and `sft_tools` train). No
  record is exempt: curation merges groups through prompts and records over every config at once
  (`curation/splits.py`), so a record merged through a prompt in one config follows the same
  merged group in every other;
- `metadata_split_disagrees`: a row whose `metadata` names a `split` other than its own.
"""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.published import published_schema
from distill_assets.defs.curation.splits import prompt_text

EXAMPLES = 5


def _spanning(rows: pl.DataFrame, key: str) -> list[str]:
    """Return the values of `key` (non-null) whose rows are in more than one split, sorted."""
    spanning = (
        rows.drop_nulls(key)
        .group_by(key)
        .agg(pl.col("split").n_unique().alias("splits"))
        .filter(pl.col("splits") > 1)
    )
    return sorted(spanning.get_column(key).to_list())


def config_leaks(config: str, rows: pl.DataFrame) -> dict[str, object]:
    """Return the leaks inside one config's published rows (with `split`, `split_group`)."""
    leaks: dict[str, object] = {}
    groups = _spanning(rows, "split_group")
    if groups:
        leaks["groups_in_several_splits"] = {"count": len(groups), "groups": groups[:EXAMPLES]}
    prompts = rows.select("split", prompt_text(config, published_schema(config)).alias("prompt"))
    spanning = _spanning(prompts.filter(pl.col("prompt") != ""), "prompt")
    if spanning:
        leaks["prompts_in_several_splits"] = {
            "count": len(spanning),
            "prompts": [p[:80] for p in spanning[:EXAMPLES]],
        }
    named = rows.select(
        "id", "split", pl.col("metadata").str.json_path_match("$.split").alias("named")
    ).filter(pl.col("named").is_not_null() & (pl.col("named") != pl.col("split")))
    if named.height:
        leaks["metadata_split_disagrees"] = {
            "count": named.height,
            "ids": named.get_column("id").head(EXAMPLES).to_list(),
        }
    return leaks


def record_leaks(records: pl.DataFrame) -> dict[str, object]:
    """Return the source records split two ways across configs.

    `records` holds `config, source, source_ref, split` of every published row.
    """
    spanning = (
        records.group_by("source", "source_ref")
        .agg(pl.col("split").n_unique().alias("splits"), pl.col("config").unique().sort())
        .filter(pl.col("splits") > 1)
        .sort("source", "source_ref")
    )
    if spanning.is_empty():
        return {}
    return {
        "records_in_several_splits": {
            "count": spanning.height,
            "records": [
                f"{source}:{ref} ({', '.join(configs)})"
                for source, ref, _, configs in spanning.head(EXAMPLES).iter_rows()
            ],
        }
    }
