"""One typed place for distill's locations and names.

Values are resolved when asked for (never at import time): an explicit value wins, then the
environment (`DISTILL_RAW_ROOT`, `DISTILL_LAKE_ROOT`, `DISTILL_HUB_ROOT`, `DISTILL_DATASET_NAME`),
then defaults under `DISTILL_DATA_DIR` (default: `./data` of the working directory, which is the
project checkout for `make run`). Roots are URIs: a local path or anything fsspec understands
(`s3://bucket/lake`).
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, Field

SOURCES: tuple[str, ...] = ("traces", "escalations", "revisions", "telemetry")


class Settings(BaseModel):
    """Resolved locations of the raw landing zone, the lake, the hub and the dataset name."""

    data_dir: str = Field(description="Folder holding raw/, lake/, hub/ by default")
    raw_root: str = Field(description="Root URI of raw landing: <raw>/<source>/<YYYY-MM-DD>/")
    lake_root: str = Field(description="Root URI of the Parquet lake: <lake>/<source>/<table>/")
    hub_root: str = Field(description="Root of local dataset repositories: <hub>/<name>/")
    dataset_name: str = Field(default="distill", description="Published dataset repository name")

    @classmethod
    def resolve(
        cls,
        raw_root: str | None = None,
        lake_root: str | None = None,
        hub_root: str | None = None,
        dataset_name: str | None = None,
    ) -> Settings:
        """Build settings from explicit values, then the environment, then defaults."""
        env = os.environ
        data_dir = env.get("DISTILL_DATA_DIR") or str(Path.cwd() / "data")
        return cls(
            data_dir=data_dir,
            raw_root=raw_root or env.get("DISTILL_RAW_ROOT") or f"{data_dir}/raw",
            lake_root=lake_root or env.get("DISTILL_LAKE_ROOT") or f"{data_dir}/lake",
            hub_root=hub_root or env.get("DISTILL_HUB_ROOT") or f"{data_dir}/hub",
            dataset_name=dataset_name or env.get("DISTILL_DATASET_NAME") or "distill",
        )
