"""Witness review of telemetry rows: the queue, the decisions and what they change.

See docs/sources/telemetry.md#witness-review; triggers and thresholds are
`rules/telemetry_witness.py`. Pure Polars.

The queue is every row of the telemetry feed tables (`FEED_TABLES`, all partitions) that a
trigger selects. Decisions are appended by `distill review --source telemetry approve|reject` to
`<data dir>/distilled/review/telemetry/decisions.jsonl` (`{id, decision, notes, reviewer, ts}`,
the escalation review's line format), never edited; the latest line per row wins. A rejected row
is an exclusion (`EXCLUSION_SCHEMA`, subject = the row id) that curation applies to every config;
a reviewed row's metadata carries its validation record (`with_validation_records`).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from distill_assets.lib.jsonlines import append_lines
from distill_assets.lib.lake import global_path, scan_partitions
from distill_assets.rules import telemetry_witness as rules

SOURCE = "telemetry"
# feed table -> the config it feeds
FEED_TABLES: dict[str, str] = {
    "dialogues": "sft",
    "decision_pairs": "dpo",
    "episode_pairs": "dpo",
    "episodes": "rlds",
    "reasoning": "cot",
}
QUEUE_COLUMNS = ("id", "source_ref", "quality_score", "metadata")
QUEUE_SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "table": pl.String(),
        "config": pl.String(),
        "partition": pl.String(),
        "source_ref": pl.String(),
        "quality_score": pl.Float64(),
        "triggers": pl.List(pl.String()),
        "decision": pl.String(),
        "reviewer": pl.String(),
        "notes": pl.String(),
        "ts": pl.Float64(),
        "metadata": pl.String(),
    }
)
DECISION_SCHEMA = pl.Schema(
    {
        "id": pl.String(),
        "decision": pl.String(),
        "notes": pl.String(),
        "reviewer": pl.String(),
        "ts": pl.Float64(),
    }
)
_FLAGGED_PLAYERS = pl.Schema({"player_key": pl.String()})


def decisions_path(data_dir: str) -> Path:
    """Return the telemetry queue's append-only decisions file."""
    return Path(data_dir) / "distilled" / "review" / SOURCE / "decisions.jsonl"


def append_decision(
    data_dir: str, row_id: str, decision: str, *, notes: str | None, reviewer: str, ts: float
) -> dict[str, object]:
    """Append one Witness decision line and return it."""
    if decision not in rules.DECISIONS:
        raise ValueError(f"decision must be one of {rules.DECISIONS}, not {decision!r}")
    line: dict[str, object] = {
        "id": row_id,
        "decision": decision,
        "notes": notes,
        "reviewer": reviewer,
        "ts": ts,
    }
    append_lines(decisions_path(data_dir), [line])
    return line


def read_decisions(data_dir: str) -> pl.DataFrame:
    """Return the latest decision per row id (`DECISION_SCHEMA`; malformed lines skipped).

    The latest `ts` wins, the later line on a tie.
    """
    path = decisions_path(data_dir)
    records = []
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                records.append({name: record.get(name) for name in DECISION_SCHEMA})
    lines = pl.DataFrame(records, schema=DECISION_SCHEMA, strict=False)
    return (
        lines.filter(pl.col("id").is_not_null() & pl.col("decision").is_in(list(rules.DECISIONS)))
        .with_columns(pl.col("ts").fill_null(0.0))
        .with_row_index("_line")
        .sort("ts", "_line")
        .group_by("id")
        .agg(pl.all().exclude("_line").last())
        .select(DECISION_SCHEMA.names())
        .sort("id")
    )


def _meta(path: str) -> pl.Expr:
    return pl.col("metadata").str.json_path_match(f"$.{path}")


def flagged_players(lake_root: str) -> pl.DataFrame:
    """Return the player keys `telemetry/player_quality` flags (none before it exists)."""
    path = global_path(lake_root, SOURCE, "player_quality")
    if not path.exists():
        return pl.DataFrame(schema=_FLAGGED_PLAYERS)
    return (
        pl.read_parquet(str(path), columns=["player_key", "flagged"])
        .filter(pl.col("flagged"))
        .select("player_key")
    )


def triggers(rows: pl.DataFrame, flagged: pl.DataFrame) -> pl.Series:
    """Return the Witness triggers of each row (`rules.TRIGGERS` that hold, in order).

    `rows` hold `metadata` (JSON); `flagged`: the flagged players' `player_key`.
    """
    keys = flagged.get_column("player_key").to_list()
    ambiguity = _meta("ambiguity_score").cast(pl.Float64, strict=False)
    novelty = _meta("novelty_score").cast(pl.Float64, strict=False)
    flags = _meta("validation_flags").str.json_decode(pl.List(pl.String())).list.len()
    players = [_meta(name) for name in ("player_key", "user_id_chosen", "user_id_rejected")]
    hold = {
        "high_ambiguity": (ambiguity > rules.AMBIGUITY_ABOVE).fill_null(False)
        | _meta("ambiguity_level").is_in(rules.AMBIGUOUS_LEVELS).fill_null(False),
        "extreme_novelty": (
            (novelty >= rules.NOVELTY_AT_LEAST) & (novelty < rules.NOVELTY_UNCOMPARED)
        ).fill_null(False),
        "fraud_flagged": (flags > 0).fill_null(False)
        | pl.any_horizontal(p.is_in(keys).fill_null(False) for p in players),
    }
    listed = pl.concat_list(
        pl.when(hold[name]).then(pl.lit([name])).otherwise(pl.lit([], dtype=pl.List(pl.String())))
        for name in rules.TRIGGERS
    )
    return rows.select(listed.alias("triggers")).to_series()


def queue(lake_root: str, decisions: pl.DataFrame) -> pl.DataFrame:
    """Return every queued telemetry row with its decision so far (`QUEUE_SCHEMA`).

    A row is queued when a trigger holds; `decision` is null until a Witness decides.
    """
    schema = pl.Schema({"id": pl.String(), "source_ref": pl.String()})
    frames = [
        scan_partitions(lake_root, SOURCE, table, schema)
        .select(*QUEUE_COLUMNS, "partition")
        .with_columns(pl.lit(table).alias("table"), pl.lit(config).alias("config"))
        .collect()
        for table, config in FEED_TABLES.items()
        if _has_rows(lake_root, table)
    ]
    if not frames:
        return pl.DataFrame(schema=QUEUE_SCHEMA)
    rows = pl.concat(frames, how="vertical_relaxed")
    rows = rows.with_columns(triggers(rows, flagged_players(lake_root)))
    return (
        rows.filter(pl.col("triggers").list.len() > 0)
        .join(decisions, on="id", how="left")
        .select(pl.col(name).cast(dtype) for name, dtype in QUEUE_SCHEMA.items())
        .sort("partition", "table", "id")
    )


def _has_rows(lake_root: str, table: str) -> bool:
    frame = scan_partitions(lake_root, SOURCE, table)
    return "metadata" in frame.collect_schema().names()


def exclusions(decisions: pl.DataFrame) -> pl.DataFrame:
    """Return the exclusion rows (`EXCLUSION_SCHEMA`) of the rows a Witness rejected."""
    return decisions.filter(pl.col("decision") == "reject").select(
        pl.lit(SOURCE).alias("source"),
        pl.col("id").alias("subject"),
        pl.lit(rules.REJECTED_REASON).alias("reason"),
    )


def with_validation_records(rows: pl.DataFrame, decisions: pl.DataFrame) -> pl.DataFrame:
    """Add `validation` (type witness, result, validator, time) to the metadata of reviewed rows.

    Rows nobody reviewed keep their metadata unchanged; `decisions` is `read_decisions`.
    """
    if decisions.is_empty() or rows.is_empty():
        return rows
    records = decisions.select(
        "id",
        pl.struct(
            pl.lit(rules.VALIDATION_TYPE).alias("type"),
            pl.col("decision").alias("result"),
            pl.col("reviewer").alias("validator"),
            pl.from_epoch(pl.col("ts"), time_unit="s")
            .dt.replace_time_zone("UTC")
            .dt.strftime("%Y-%m-%dT%H:%M:%SZ")
            .alias("timestamp"),
        )
        .struct.json_encode()
        .alias("_record"),
    )
    joined = rows.join(records, on="id", how="left", maintain_order="left")
    return joined.with_columns(
        pl.when(pl.col("_record").is_not_null())
        .then(
            pl.col("metadata").str.strip_suffix("}")
            + pl.lit(',"validation":')
            + pl.col("_record")
            + pl.lit("}")
        )
        .otherwise(pl.col("metadata"))
        .alias("metadata")
    ).drop("_record")
