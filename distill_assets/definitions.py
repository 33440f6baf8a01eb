"""The one entry point: load the defs folder and apply project-wide policy here only."""

import warnings

import dagster as dg

from distill_assets import defs as defs_package
from distill_assets.defs.catalog import catalog_spec
from distill_assets.defs.resources import (
    DistillSettings,
    EmbedderResource,
    LakeIOManager,
    LlmResource,
)
from distill_assets.lib.executors import distill_executor


@dg.definitions
def defs() -> dg.Definitions:
    """Every source's assets, checks, jobs, schedules and sensors, with the shared resources."""
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
            },
            executor=distill_executor(),
        ),
    )
