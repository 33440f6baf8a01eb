"""Telemetry training-data assets: Dagster wiring only.

Decisions, episodes, reasoning, competence and novelty (docs/sources/telemetry.md).

Daily, from silver `accepted_events` and `triage`: `decisions` (with outcomes) → `decision_pairs`
(`dpo`); `competence` (stage 5) → `episodes` (`rlds`) + `episode_pairs` (hard negatives, `dpo`);
`reasoning` (`cot`). The episodes' steps are wired in `episode_assets.py` (with this module's
names and rules). A day's products read only its own silver and the player state up to and
including that day (`assets.BRONZE_UP_TO_THE_DAY`), never a table a release wrote. With the
release (global): `pair_exclusions`, the pair subjects an excluded player takes out of `dpo`.
Builders: `decisions.py`, `episodes.py`, `tokenize.py`,
`competence.py`, `reasoning.py`, `pairs.py`.
"""

import dagster as dg
import polars as pl

from distill_assets.contracts.published import SUBJECT_COLUMN
from distill_assets.defs.jobs import GLOBAL_TAG
from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, EmbedderResource, StagedParquet
from distill_assets.defs.telemetry import witness
from distill_assets.defs.telemetry.assets import (
    BRONZE_UP_TO_THE_DAY,
    earlier_days_of,
    exclusions_up_to,
    trust_history,
)
from distill_assets.defs.telemetry.competence import (
    write_competence,
)
from distill_assets.defs.telemetry.decisions import decision_pairs, decisions
from distill_assets.defs.telemetry.novelty import apply_novelty, published_index
from distill_assets.defs.telemetry.pairs import (
    PAIR_COLUMNS,
    dpo_excluded_players,
    pair_exclusions,
)
from distill_assets.defs.telemetry.reasoning import reasoning_rows
from distill_assets.defs.telemetry.taxonomy import class_counts, with_value_class
from distill_assets.defs.telemetry.triage import (
    TRIAGE_SCHEMA,
    without_skipped,
)
from distill_assets.defs.telemetry.trust import (
    event_flags,
    trust_weighted,
    trust_weighted_pairs,
)
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.lake import scan_partition, scan_partitions
from distill_assets.lib.metadata import column_counts, histogram, preview
from distill_assets.rules import rules_metadata, rules_version
from distill_assets.rules.telemetry_novelty import DUPLICATE_REASON

SOURCE = "telemetry"
ACCEPTED = dg.AssetKey([SOURCE, "accepted_events"])
TRIAGE = dg.AssetKey([SOURCE, "triage"])
DECISIONS = "decisions"
DECISION_PAIRS = "decision_pairs"
COMPETENCE = "competence"
EPISODES = "episodes"
EPISODE_PAIRS = "episode_pairs"
REASONING = "reasoning"
PAIR_EXCLUSIONS = "pair_exclusions"
PAIR_TABLES = (DECISION_PAIRS, EPISODE_PAIRS)
# rules modules each asset applies: its code_version, and the rules_version its metadata records
DECISION_RULES = ("telemetry_pairs",)
PAIR_RULES = (
    "telemetry_pairs",
    "telemetry_trust",
    "telemetry_taxonomy",
    "telemetry_novelty",
    "embedding",
)
COMPETENCE_RULES = ("telemetry_competence", "action_tokens", "embedding")
EPISODE_RULES = (
    "action_tokens",
    "telemetry_competence",
    "telemetry_triage",
    "telemetry_trust",
    "telemetry_taxonomy",
    "telemetry_novelty",
    "embedding",
)
REASONING_RULES = (
    "telemetry_reasoning",
    "telemetry_triage",
    "telemetry_trust",
    "telemetry_taxonomy",
    "telemetry_novelty",
    "embedding",
)


def dpo_excluded(lake_root: str, day: str) -> pl.DataFrame:
    """Players excluded from dpo at the end of `day` (deleted, or without dpo consent by then)."""
    return dpo_excluded_players(exclusions_up_to(lake_root, day).lazy())


def novel_rows(
    context: dg.AssetExecutionContext,
    settings: DistillSettings,
    embedder: EmbedderResource,
    rows: pl.DataFrame,
    *,
    config: str,
    table: str,
) -> tuple[pl.DataFrame, dict[str, object]]:
    """Class a partition's feed rows by value, score them for novelty, drop near-duplicates.

    The value class (`taxonomy.py`) goes into metadata before novelty; stage 6 then drops rows
    too close to published ones. The returned metadata counts the kept rows per value class. A
    row a Witness reviewed carries its validation record (`witness.py`).
    """
    rows = with_value_class(rows, table)
    rows = witness.with_validation_records(
        rows, witness.read_decisions(settings.resolved().data_dir)
    )
    index = published_index(
        settings.resolved().lake_root, table, context.partition_key, rows.get_column(SUBJECT_COLUMN)
    )
    result = apply_novelty(rows, config, index, embedder.embedder())
    scores = result.kept.select(
        pl.col("metadata").str.json_path_match("$.novelty_score").cast(pl.Float64)
    ).to_series()
    return result.kept, {
        "by_value_class": class_counts(result.kept),
        "index_rows": index.height,
        f"dropped_{DUPLICATE_REASON}": result.duplicates,
        "novelty_score": histogram(scores),
    }


def _trust(lake_root: str, day: str) -> pl.LazyFrame:
    """Players' trust at the end of `day`'s walk (`trust_history`; none without a signal)."""
    return (
        trust_history(lake_root, day)
        .lazy()
        .group_by("player_key")
        .agg(pl.col("trust_after").last().alias("trust_score"))
    )


def triage_of(settings: DistillSettings, partition: str) -> pl.LazyFrame:
    """Read the partition's `telemetry/triage` rows (a dep of the products it gates)."""
    lake_root = settings.resolved().lake_root
    return scan_partition(lake_root, SOURCE, "triage", partition).cast(dict(TRIAGE_SCHEMA))


@dg.asset(
    key=[SOURCE, DECISIONS],
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    kinds={"polars"},
    code_version=rules_version(*DECISION_RULES),
    ins={"events": dg.AssetIn(key=ACCEPTED), "triage": dg.AssetIn(key=TRIAGE)},
)
def telemetry_decisions(
    context: dg.AssetExecutionContext,
    settings: DistillSettings,
    events: pl.LazyFrame,
    triage: pl.LazyFrame,
) -> pl.DataFrame:
    """Decisions triage passed, joined with their outcome and counterfactuals.

    See docs/sources/telemetry.md#decisions-and-pairs.

    One row per decision: scenario_id, game_state_hash, prompt, chosen option and text, reasoning,
    ambiguity_score, outcome/label/reward/karma_delta, the player's trust at the end of the day's
    walk (for pairing ties) and `counterfactuals` (alternatives whose outcome the game reported).
    Rejected (bot) and deleted players are not in silver, so not here.
    """
    rows = decisions(
        events,
        triage.cast(dict(TRIAGE_SCHEMA)),
        _trust(settings.resolved().lake_root, context.partition_key),
    )
    context.add_output_metadata(
        {
            **rules_metadata(*DECISION_RULES),
            "decisions": rows.height,
            "with_outcome": rows.filter(pl.col("reward").is_not_null()).height,
            "with_counterfactuals": rows.filter(pl.col("counterfactuals").list.len() > 0).height,
            "scenarios": rows.get_column("scenario_id").n_unique(),
        }
    )
    return rows


@dg.asset(
    key=[SOURCE, DECISION_PAIRS],
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    kinds={"polars"},
    code_version=rules_version(*PAIR_RULES),
    ins={"made": dg.AssetIn(key=[SOURCE, DECISIONS])},
    deps=[BRONZE_UP_TO_THE_DAY, earlier_days_of(DECISION_PAIRS)],
)
def telemetry_decision_pairs(
    context: dg.AssetExecutionContext,
    settings: DistillSettings,
    embedder: EmbedderResource,
    made: pl.DataFrame,
) -> pl.DataFrame:
    """`dpo` feed rows from decisions: ghost-replay and counterfactual pairs.

    See docs/sources/telemetry.md#decisions-and-pairs.

    Ghost replays: same scenario, different players, choices and outcomes; the better reward is
    chosen, ties by trust. Counterfactuals: the chosen option vs an alternative with a known
    outcome. metadata holds the seed's keys (chosen/rejected_policy_outcome, reward_diff,
    user_id_chosen, user_id_rejected as player keys, game_state_hash, ambiguity_score,
    karma_impact) and the seed's chosen/rejected objects (content, reasoning, outcome).
    Subject: the pair of players. Players excluded from dpo by the day's end (deleted, or without
    dpo consent) take no part. Each row has a novelty_score; near-duplicates of published rows are
    dropped (stage 6).
    """
    lake_root = settings.resolved().lake_root
    rows, below_floor = trust_weighted_pairs(
        decision_pairs(made, dpo_excluded(lake_root, context.partition_key)),
        trust_history(lake_root, context.partition_key),
    )
    rows, novelty = novel_rows(
        context, settings, embedder, rows, config="dpo", table=DECISION_PAIRS
    )
    kinds = rows.select(pl.col("metadata").str.json_path_match("$.pair_kind").alias("pair_kind"))
    context.add_output_metadata(
        {
            **rules_metadata(*PAIR_RULES),
            **novelty,
            "pairs": rows.height,
            "dropped_below_trust_floor": below_floor,
            "by_kind": column_counts(kinds, "pair_kind"),
            "quality_score": histogram(rows.get_column("quality_score")),
            "preview": preview(rows.select("id", "source_ref", "prompt", "chosen", "rejected")),
        }
    )
    return rows


@dg.asset(
    key=[SOURCE, COMPETENCE],
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    kinds={"polars"},
    code_version=rules_version(*COMPETENCE_RULES),
    ins={"events": dg.AssetIn(key=ACCEPTED)},
)
def telemetry_competence(
    context: dg.AssetExecutionContext, embedder: EmbedderResource, events: pl.LazyFrame
) -> StagedParquet:
    """Every episode classified expert | hard_negative | ordinary | noise, with a reason (stage 5).

    Score: the game's competence_score, else the embedder similarity of the episode's actions and
    instructions to its task description (the seed's MineCLIP stand-in). Noise is discarded
    downstream; hard negatives are paired with successes. Rules: `rules/telemetry_competence.py`.
    The episodes are classified a bucket at a time and written as they come
    (`competence.write_competence`): memory holds one bucket, not the day.
    """
    target = working_dir(f"{SOURCE}-{COMPETENCE}") / f"{COMPETENCE}.parquet"
    rows = write_competence(events, embedder.embedder(), target)
    summary = pl.read_parquet(target, columns=["competence", "score_source", "score"])
    context.add_output_metadata(
        {
            **rules_metadata(*COMPETENCE_RULES),
            "episodes": rows,
            "by_class": column_counts(summary, "competence"),
            "by_score_source": column_counts(summary, "score_source"),
            "score": histogram(summary.get_column("score")),
        }
    )
    return StagedParquet(target)


@dg.asset(
    key=[SOURCE, REASONING],
    partitions_def=daily_partitions(),
    group_name=SOURCE,
    kinds={"polars"},
    code_version=rules_version(*REASONING_RULES),
    ins={"events": dg.AssetIn(key=ACCEPTED), "made": dg.AssetIn(key=[SOURCE, DECISIONS])},
    deps=[TRIAGE, earlier_days_of(REASONING)],
)
def telemetry_reasoning(
    context: dg.AssetExecutionContext,
    settings: DistillSettings,
    embedder: EmbedderResource,
    events: pl.LazyFrame,
    made: pl.DataFrame,
) -> pl.DataFrame:
    """`cot` feed rows from player reasoning traces (docs/sources/telemetry.md#reasoning).

    Only traces triage passed; linked by scenario_id to the decision and outcome they explain; a
    novelty_score each, near-duplicates of published rows dropped. Rules:
    `rules/telemetry_reasoning.py`, `rules/telemetry_triage.py`, `rules/telemetry_novelty.py`.
    """
    traces = without_skipped(events, triage_of(settings, context.partition_key), "reasoning")
    rows, below_floor = trust_weighted(
        reasoning_rows(traces, made),
        trust_history(settings.resolved().lake_root, context.partition_key),
        event_flags(events, "reasoning", "source_ref", ""),
    )
    rows, novelty = novel_rows(context, settings, embedder, rows, config="cot", table=REASONING)
    context.add_output_metadata(
        {
            **rules_metadata(*REASONING_RULES),
            **novelty,
            "traces": rows.height,
            "dropped_below_trust_floor": below_floor,
            "linked_to_decision": rows.filter(
                pl.col("metadata").str.json_path_match("$.decision_event_id").is_not_null()
            ).height,
            "quality_score": histogram(rows.get_column("quality_score")),
        }
    )
    return rows


@dg.asset(
    key=[SOURCE, PAIR_EXCLUSIONS],
    group_name=SOURCE,
    kinds={"polars"},
    tags=GLOBAL_TAG,
    ins={"exclusions": dg.AssetIn(key=[SOURCE, "exclusions"])},
    deps=[dg.AssetKey([SOURCE, table]) for table in PAIR_TABLES],
)
def telemetry_pair_exclusions(
    context: dg.AssetExecutionContext, settings: DistillSettings, exclusions: pl.DataFrame
) -> pl.DataFrame:
    """Pair subjects to drop from dpo because either player is excluded (global).

    Subjects `dpo:<chosen key>+<rejected key>` of `decision_pairs` and `episode_pairs` whose
    player has a deletion request or no dpo consent (`EXCLUSION_SCHEMA`).
    """
    lake_root = settings.resolved().lake_root
    schema = pl.Schema({name: pl.String() for name in PAIR_COLUMNS})
    pairs = pl.concat(
        [scan_partitions(lake_root, SOURCE, t, schema).select(PAIR_COLUMNS) for t in PAIR_TABLES]
    )
    rows = pair_exclusions(pairs, exclusions.lazy())
    context.add_output_metadata(
        {"excluded_pairs": rows.height, "by_reason": column_counts(rows, "reason")}
    )
    return rows
