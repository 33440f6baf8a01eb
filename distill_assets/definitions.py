"""The one entry point: load the defs folder and apply project-wide policy here only.

Importing this module reads no setting: `defs()` (called when the code location loads, by every
`distill` command and in every process an executor starts) resolves and checks them
(`lib.startup`, all but the player key, which its resource checks), a bad one raising its
one-line `SettingsError` before any asset module is imported (`defs.partitions`).
"""

import warnings

import dagster as dg

from distill_assets import defs as defs_package
from distill_assets.defs.catalog import catalog_spec
from distill_assets.defs.curation import card_notes as shape_notes
from distill_assets.defs.escalations.seed_exports import write_seed_exports
from distill_assets.defs.release.extras import ReleaseContributions
from distill_assets.defs.resources import (
    DistillSettings,
    EmbedderResource,
    LakeIOManager,
    LlmResource,
)
from distill_assets.defs.telemetry import card_notes as telemetry_notes
from distill_assets.defs.telemetry.taxonomy import VALUE_CLASS_KEY
from distill_assets.defs.telemetry.tfrecord import write_release_files
from distill_assets.lib.executors import distill_executor
from distill_assets.lib.startup import check_startup, resolve_settings

# what source rooms add to every version (the release imports no source room)
RELEASE_CONTRIBUTIONS = ReleaseContributions(
    writers=(write_seed_exports, write_release_files),
    card_notes={
        "sft": (shape_notes.SFT_NOTES,),
        "sft_tools": (shape_notes.SFT_TOOLS_NOTES,),
        "rlds": (telemetry_notes.RLDS_NOTES,),
        "dpo": (shape_notes.DPO_SHAPE_NOTES, telemetry_notes.DPO_NOTES),
        "cot": (telemetry_notes.COT_NOTES, shape_notes.COT_OUTCOME_NOTES),
    },
    counted_metadata=(VALUE_CLASS_KEY,),
)


@dg.definitions
def defs() -> dg.Definitions:
    """Every source's assets, checks, jobs, schedules and sensors, with the shared resources."""
    resolved = resolve_settings()
    check_startup(resolved, player_key=False)
    with warnings.catch_warnings():  # map_asset_specs is a Dagster "preview" API
        warnings.simplefilter("ignore", dg.PreviewWarning)
        loaded = dg.load_defs(defs_root=defs_package).map_asset_specs(func=catalog_spec)
    settings = DistillSettings()
    return dg.Definitions.merge(
        loaded,
        dg.Definitions(
            resources={
                "io_manager": LakeIOManager(settings=settings),
                "settings": settings,
                "embedder": EmbedderResource(settings=settings),
                "llm": LlmResource(settings=settings),
                "release_contributions": RELEASE_CONTRIBUTIONS,
            },
            executor=distill_executor(resolved),
        ),
    )
