"""Telemetry episodes assets: Dagster wiring only (docs/sources/telemetry.md#episodes).

Daily, from silver `accepted_events`, `triage` and `competence`: `episodes` (`rlds`) +
`episode_pairs` (hard negatives, `dpo`), built by `episode_day.py`. With
`DISTILL_INGEST_SHARDS=N` above 1, N shard steps `episodes_shard_<k>` build ranges of the day's
episode buckets and the episodes step merges them (`episode_shards.py`, docs/scaling-out.md).
"""

from pathlib import Path

import dagster as dg
import polars as pl
from upath import UPath

from distill_assets.defs.partitions import daily_partitions
from distill_assets.defs.resources import DistillSettings, EmbedderResource, StagedParquet
from distill_assets.defs.shards import merge_description, shard_count
from distill_assets.defs.telemetry import witness
from distill_assets.defs.telemetry.assets import (
    BRONZE_UP_TO_THE_DAY,
    earlier_days_of,
    trust_history,
)
from distill_assets.defs.telemetry.competence import pairs_of_candidates
from distill_assets.defs.telemetry.episode_day import (
    BUCKET_EPISODES,
    DayInputs,
    audit_rates,
    build_episode_day,
)
from distill_assets.defs.telemetry.episode_shards import (
    EpisodeStaging,
    episode_shard_dir,
    episodes_fingerprint,
    merge_or_compute,
    write_shard,
)
from distill_assets.defs.telemetry.training_assets import (
    ACCEPTED,
    COMPETENCE,
    EPISODE_PAIRS,
    EPISODE_RULES,
    EPISODES,
    SOURCE,
    TRIAGE,
    dpo_excluded,
    novel_rows,
    triage_of,
)
from distill_assets.defs.telemetry.trust import trust_weighted_pairs
from distill_assets.lib.cleanup import working_dir
from distill_assets.lib.embed import Embedder
from distill_assets.lib.lake import partition_files, partition_path, scan_partition
from distill_assets.lib.metadata import funnel, histogram, preview
from distill_assets.rules import rules_metadata, rules_version
from distill_assets.rules.telemetry_novelty import DUPLICATE_REASON


def episode_shard_key(shard: int) -> dg.AssetKey:
    """Return the key of episode shard step `shard` (from 0)."""
    return dg.AssetKey([SOURCE, f"{EPISODES}_shard_{shard}"])


def _episode_inputs(
    settings: DistillSettings, day: str, events: pl.LazyFrame, classes: pl.LazyFrame
) -> DayInputs:
    """Return the inputs of a day's episodes (`episode_day.DayInputs`)."""
    cfg = settings.resolved()
    return DayInputs(
        events=events,
        triage=triage_of(settings, day),
        classes=classes,
        walk=trust_history(cfg.lake_root, day),
        excluded=dpo_excluded(cfg.lake_root, day),
        decisions=witness.read_decisions(cfg.data_dir),
        lake_root=cfg.lake_root,
        partition=day,
        table=EPISODES,
    )


def _episode_staging(settings: DistillSettings, day: str, embedder: Embedder) -> EpisodeStaging:
    """Return a day's episode shards' staging and the fingerprint of what they are built from.

    Silver (the steps, ends and trust walk), triage, competence, the bronze up to the day (the
    pair exclusions), the Witness decisions, the rules, the embedder and the bucket size.
    """
    cfg = settings.resolved()
    inputs = [
        partition_path(cfg.lake_root, SOURCE, table, day)
        for table in (ACCEPTED.path[-1], TRIAGE.path[-1], COMPETENCE)
    ]
    bronze = [
        UPath(f) for f in partition_files(cfg.lake_root, SOURCE, "events") if Path(f).stem <= day
    ]
    fingerprint = episodes_fingerprint(
        [*inputs, *bronze],
        witness.decisions_path(cfg.data_dir),
        rules=rules_version(*EPISODE_RULES),
        embedder=embedder.name,
        bucket_episodes=BUCKET_EPISODES,
    )
    return EpisodeStaging(episode_shard_dir(cfg.lake_root, day), fingerprint, BUCKET_EPISODES)


def episode_shard_asset(shard: int, shards: int) -> dg.AssetsDefinition:
    """Return episode shard step `shard` of `shards` (`episode_shards.write_shard`)."""

    @dg.asset(
        key=episode_shard_key(shard),
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        kinds={"polars"},
        code_version=rules_version(*EPISODE_RULES),
        deps=[ACCEPTED, TRIAGE, dg.AssetKey([SOURCE, COMPETENCE]), BRONZE_UP_TO_THE_DAY],
        description=(
            f"Shard {shard + 1} of {shards} of the day's episodes: a contiguous range of about "
            "1/N of the day's episode buckets (bounds from competence, as the unsharded step's), "
            "gated, built, tokenized, weighed by trust and embedded; its rows, pair candidates "
            f"and counts staged (`episode_shards.write_shard`); `{SOURCE}/{EPISODES}` scores "
            "the shards' rows for novelty and writes them in order (the same bytes) and removes "
            "them."
        ),
    )
    def shard_step(
        context: dg.AssetExecutionContext, settings: DistillSettings, embedder: EmbedderResource
    ) -> dg.MaterializeResult:
        """Build and stage the shard's buckets (their count and rows in metadata)."""
        lake_root, day = settings.resolved().lake_root, context.partition_key
        inputs = _episode_inputs(
            settings,
            day,
            scan_partition(lake_root, SOURCE, ACCEPTED.path[-1], day),
            scan_partition(lake_root, SOURCE, COMPETENCE, day),
        )
        written = write_shard(
            _episode_staging(settings, day, embedder.embedder()),
            inputs,
            embedder.embedder(),
            shard=shard,
            shards=shards,
        )
        return dg.MaterializeResult(
            metadata={
                "shard": f"{shard + 1} of {shards}",
                "buckets": written.buckets,
                "rows": written.rows,
            }
        )

    return shard_step


def episodes_asset(shards: int) -> dg.AssetsDefinition:
    """Return `telemetry/episodes` + `episode_pairs`; with `shards` above 1, the shards' merge."""
    merge = merge_description(shards, "episode shard steps", "builds", "episode_shards")

    @dg.multi_asset(
        outs={
            EPISODES: dg.AssetOut(
                key=[SOURCE, EPISODES],
                kinds={"polars"},
                description=(
                    "`rlds` feed rows: one episode per row with its steps in RLDS layout "
                    "(is_first/is_last/is_terminal, observation, action with action_tokens, "
                    "reward, discount); noise episodes left out." + merge
                ),
            ),
            EPISODE_PAIRS: dg.AssetOut(
                key=[SOURCE, EPISODE_PAIRS],
                kinds={"polars"},
                description=(
                    "`dpo` feed rows: a successful episode (chosen) vs a hard-negative episode "
                    "of the same task (rejected); source_ref names both episodes."
                ),
            ),
        },
        partitions_def=daily_partitions(),
        group_name=SOURCE,
        code_version=rules_version(*EPISODE_RULES),
        ins={"events": dg.AssetIn(key=ACCEPTED), "classes": dg.AssetIn(key=[SOURCE, COMPETENCE])},
        # both outputs' novelty indexes read their earlier days, which this same step wrote: one
        # dependency on the earlier days of `episodes` orders the step (a dependency of each
        # output on the other's earlier days would be a cycle between the two assets)
        deps=[
            TRIAGE,
            BRONZE_UP_TO_THE_DAY,
            earlier_days_of(EPISODES),
            *(episode_shard_key(k) for k in range(shards) if shards > 1),
        ],
    )
    def telemetry_episodes(
        context: dg.AssetExecutionContext,
        settings: DistillSettings,
        embedder: EmbedderResource,
        events: pl.LazyFrame,
        classes: pl.LazyFrame,
    ):
        """Episodes in RLDS layout with action tokens and hard-negative pairs.

        See docs/sources/telemetry.md#episodes.

        Only episodes triage passed (a step processed or sampled) are published; the audited
        skips are evaluated against competence (false-negative rate per action type in the
        metadata). Rules: `rules/action_tokens.py` (axes, smoothing, bins, discount),
        `rules/telemetry_competence.py`, `rules/telemetry_triage.py` and
        `rules/telemetry_novelty.py` (both outputs carry a novelty_score; near-duplicates of
        published rows are dropped).
        """
        day_key = context.partition_key
        inputs = _episode_inputs(settings, day_key, events, classes)
        target = working_dir(f"{SOURCE}-{EPISODES}") / "episodes.parquet"
        sharding: dict[str, int] = {}
        if shards == 1:
            day = build_episode_day(inputs, embedder.embedder(), target)
        else:
            merged = merge_or_compute(
                _episode_staging(settings, day_key, embedder.embedder()),
                inputs,
                embedder.embedder(),
                target,
                shards,
            )
            if merged.not_merged is not None:
                context.log.info(f"{merged.not_merged}: built the day's episodes here")
            day, sharding = merged.day, {"shards": merged.merged}
        pairs, pairs_below_floor = trust_weighted_pairs(
            pairs_of_candidates(day.candidates()), inputs.walk
        )
        pairs, pair_novelty = novel_rows(
            context, settings, embedder, pairs, config="dpo", table=EPISODE_PAIRS
        )
        audit = audit_rates(day.audit)
        context.add_output_metadata(
            {
                **rules_metadata(*EPISODE_RULES),
                "by_value_class": day.value_classes,
                "index_rows": day.index_rows,
                f"dropped_{DUPLICATE_REASON}": day.duplicates,
                "novelty_score": histogram(pl.concat(day.scores)),
                "episodes": day.built,
                "triage_passed_episodes": day.passed,
                "triage_by_verdict": funnel(day.verdicts, "triage"),
                **{f"audited/{kind}": found["audited"] for kind, found in audit.items()},
                **{
                    f"audit_false_negative_rate/{kind}": found["rate"]
                    for kind, found in audit.items()
                },
                "dropped_below_trust_floor": day.below_floor,
                "published_episodes": day.published,
                "steps": day.steps,
                "flagged_steps": day.flagged_steps,
                "preview": preview(day.preview_rows()),
                **sharding,
            },
            output_name=EPISODES,
        )
        context.add_output_metadata(
            {"pairs": pairs.height, "dropped_below_trust_floor": pairs_below_floor, **pair_novelty},
            output_name=EPISODE_PAIRS,
        )
        return StagedParquet(target), pairs

    return telemetry_episodes


def episode_assets(shards: int) -> list[dg.AssetsDefinition]:
    """Return the daily steps of the episodes: `episodes` (and, sharded, its shard steps).

    With `shards` above 1: N shard steps building ranges of the day's buckets
    (`episode_shards`), which the episodes step merges.
    """
    if shards == 1:
        return [episodes_asset(1)]
    return [*(episode_shard_asset(k, shards) for k in range(shards)), episodes_asset(shards)]


telemetry_episode_steps = episode_assets(shard_count())
