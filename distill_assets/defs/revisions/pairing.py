"""Turn the validations of one partition into DPO pairs and unpaired turns.

See docs/sources/revisions.md#pairs.

A turn's loop is its validations up to and including the first APPROVE or FAIL (the verdict that
ends it; anything the validator logged later is outside the loop and ignored). Every verdict before
that end is a REVISE. The pair of a qualifying turn (`rules.revisions.unpaired_reason` is null):

- `prompt` = the turn's query (the first non-blank one in iteration order: the loop may log it on
  iteration 1 only), `chosen` = the approved response, `rejected` = the original response (the
  first one that got REVISE);
- `source_ref` = `turn:<turn_id>`; `id` = stable hash of source, source_ref, prompt, chosen and
  rejected; `event_time` = ts of the APPROVE;
- `split_group` = `query:<stable hash of the normalized query>`: two turns asking the same
  question (a retry, a popular query) stay on the same side of the train/test split;
- `metadata` = JSON of turn_id, principle_id (the id of the principle extracted from the turn,
  `stable_id("principle", source, source_ref)`; see `defs/revisions/principles.py`),
  revision_count, revision_hints (every hint of every REVISE, in
  iteration order), revision_focus (distinct foci in order), iterations (validations in the
  loop), the raw refs of the original and approved validations, and the score components.

Turns are grouped within one ingest partition. A turn whose lines land on two ingest dates yields
no pair: its first part is `revise_without_approve` in the earlier partition and the rest
`incomplete_turn` in the later one (both counted and queryable in `revisions/unpaired_turns`).
Everything here is Polars expressions over whole columns; ids come from DuckDB's sha256.
"""

from __future__ import annotations

import polars as pl

from distill_assets.contracts.published import feed_schema
from distill_assets.lib.hashing import with_stable_id
from distill_assets.rules import revisions as rules

SOURCE = "revisions"
# a pair's metadata names the principle extracted from its turn: stable_id(kind, source, ref)
PRINCIPLE_ID = "principle_id"
PRINCIPLE_KIND = "principle"

UNPAIRED_SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "source": pl.String(),
        "source_ref": pl.String(),
        "turn_id": pl.String(),
        "reason": pl.String(),
        "detail": pl.String(),
        "validations": pl.UInt32(),
        "revision_count": pl.UInt32(),
        "query": pl.String(),
        "first_ts": pl.Float64(),
        "last_ts": pl.Float64(),
        "first_ref": pl.String(),
    }
)


def _ordered(column: str, keep: pl.Expr) -> pl.Expr:
    """`column` restricted to the rows where `keep` holds, in iteration order (aggregation)."""
    return pl.col(column).filter(keep).sort_by(pl.col("iteration").filter(keep))


def summarize_turns(validations: pl.LazyFrame) -> pl.LazyFrame:
    """Return one row per turn_id with the loop's verdicts, responses, hints and refs."""
    turn = "turn_id"
    with_end = validations.with_columns(
        pl.col("iteration").filter(pl.col("decision") != "REVISE").min().over(turn).alias("end")
    )
    in_loop = pl.col("end").is_null() | (pl.col("iteration") <= pl.col("end"))
    revise = in_loop & (pl.col("decision") == "REVISE")
    at_end = pl.col("iteration") == pl.col("end")
    has_query = in_loop & (pl.col("query").str.strip_chars() != "")
    first_revise = pl.col("iteration") == pl.col("iteration").filter(revise).min()
    summary = with_end.group_by(turn).agg(
        validations=pl.len(),
        steps=pl.format("{}:{}", "iteration", "decision").sort_by("iteration"),
        loop_size=in_loop.sum(),
        loop_last=pl.col("end").first().fill_null(pl.col("iteration").max()),
        first_iteration=pl.col("iteration").min(),
        end_decision=pl.col("decision").filter(at_end).first(),
        revision_count=revise.sum(),
        query=_ordered("query", has_query).first(),
        original=pl.col("response").filter(first_revise).first(),
        original_ref=pl.col("source_ref").filter(first_revise).first(),
        approved=pl.col("response").filter(at_end).first(),
        approved_ref=pl.col("source_ref").filter(at_end).first(),
        approved_ts=pl.col("ts").filter(at_end).first(),
        revision_hints=_ordered("revision_hints", revise).list.explode(
            keep_nulls=False, empty_as_null=False
        ),
        revision_focus=_ordered("revision_focus", revise).drop_nulls().unique(maintain_order=True),
        first_ts=pl.col("ts").min(),
        last_ts=pl.col("ts").max(),
        first_ref=pl.col("source_ref").sort_by("iteration").first(),
    )
    complete = (pl.col("first_iteration") == 1) & (pl.col("loop_size") == pl.col("loop_last"))
    return summary.with_columns(complete.alias("loop_complete")).with_columns(
        rules.unpaired_reason().alias("reason")
    )


def with_principle_id(frame: pl.DataFrame) -> pl.DataFrame:
    """Add `principle_id` = `stable_id("principle", source, source_ref)` to pairs or turns."""
    kinded = frame.with_columns(pl.lit(PRINCIPLE_KIND).alias("_principle_kind"))
    return with_stable_id(kinded, ["_principle_kind", "source", "source_ref"], PRINCIPLE_ID).drop(
        "_principle_kind"
    )


def build_pairs(turns: pl.DataFrame) -> pl.DataFrame:
    """Return the `dpo` feed rows of the qualifying turns, in `feed_schema("dpo")` order."""
    paired = with_principle_id(
        turns.filter(pl.col("reason").is_null()).with_columns(
            pl.lit(SOURCE).alias("source"), pl.format("turn:{}", "turn_id").alias("source_ref")
        )
    )
    components = rules.score_components(
        pl.col("revision_hints"), pl.col("revision_count"), pl.col("approved"), pl.col("original")
    )
    rows = paired.select(
        pl.lit(SOURCE).alias("source"),
        pl.format("turn:{}", "turn_id").alias("source_ref"),
        rules.quality_score(components).alias("quality_score"),
        pl.struct(
            pl.col("turn_id"),
            pl.col(PRINCIPLE_ID),
            pl.col("revision_count"),
            pl.col("revision_hints"),
            pl.col("revision_focus"),
            pl.col("loop_size").alias("iterations"),
            pl.col("original_ref"),
            pl.col("approved_ref"),
            pl.struct(**components).alias("score_components"),
        )
        .struct.json_encode()
        .alias("metadata"),
        pl.col("query").alias("prompt"),
        pl.col("approved").alias("chosen"),
        pl.col("original").alias("rejected"),
        rules.normalized_text(pl.col("query")).alias("normalized_query"),
        pl.col("approved_ts").alias("event_time"),
    )
    rows = with_stable_id(rows, ["source", "source_ref", "prompt", "chosen", "rejected"])
    rows = with_stable_id(rows, ["normalized_query"], name="query_hash")
    rows = rows.with_columns(
        (pl.lit(rules.SPLIT_GROUP_PREFIX) + pl.col("query_hash")).alias("split_group")
    )
    schema = feed_schema("dpo")
    return rows.select([pl.col(name).cast(dtype) for name, dtype in schema.items()]).sort(
        "source_ref", "id"
    )


def build_unpaired(turns: pl.DataFrame) -> pl.DataFrame:
    """Return the turns that yield no pair, with their reason, in `UNPAIRED_SCHEMA` order."""
    unpaired = turns.filter(pl.col("reason").is_not_null()).with_columns(
        pl.lit(SOURCE).alias("source"),
        pl.format("turn:{}", "turn_id").alias("source_ref"),
        pl.col("steps").list.join(" ").alias("detail"),
    )
    unpaired = with_stable_id(unpaired, ["source", "source_ref", "first_ref"])
    return unpaired.select(
        [pl.col(name).cast(dtype) for name, dtype in UNPAIRED_SCHEMA.items()]
    ).sort("turn_id")


def pair_turns(validations: pl.LazyFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return (revision pairs, unpaired turns) of one partition's validations."""
    turns = summarize_turns(validations).collect()
    return build_pairs(turns), build_unpaired(turns)
