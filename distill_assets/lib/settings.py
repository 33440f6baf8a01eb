"""One typed place for distill's locations, names and optional backends.

Values are resolved when asked for (never at import time): an explicit value wins, then the
environment, then defaults under `DISTILL_DATA_DIR` (default: `./data` of the working directory,
which is the project checkout for `make run`). Roots are URIs: a local path or anything fsspec
understands (`s3://bucket/lake`).

- `raw_root`, `lake_root`, `hub_root`: `DISTILL_RAW_ROOT`, `DISTILL_LAKE_ROOT`,
  `DISTILL_HUB_ROOT` (default `<data dir>/raw`, `/lake`, `/hub`);
- `dataset_name`: `DISTILL_DATASET_NAME` (default `distill`);
- `memory_root`: `DISTILL_MEMORY_ROOT`, the principles memory (`<data dir>/memory`;
  docs/sources/revisions.md#memory);
- `eval_sets`: `DISTILL_EVAL_SETS`, a folder of evaluation sets (empty: no decontamination);
- `embedder`, `embedder_model`: `DISTILL_EMBEDDER` (`hashed`, the offline default, or
  `model2vec`) and `DISTILL_EMBEDDER_MODEL` (a local model folder);
- `llm_base_url`, `llm_model`, `llm_api_key`: `DISTILL_LLM_BASE_URL`, `DISTILL_LLM_MODEL`,
  `DISTILL_LLM_API_KEY` (empty base URL: the offline extractors only);
- `partitions_start`: `DISTILL_PARTITIONS_START`, the first daily partition, every day from it a
  partition (empty: the days with raw files, see `defs.partitions`).
- `future_days`: `DISTILL_FUTURE_DAYS` (default 0), how many days after the last complete UTC day
  are partitions too (1: today's still incomplete day; for producers whose clocks run ahead).
- `allow_dropped_configs`: `DISTILL_ALLOW_DROPPED_CONFIGS`, configs (comma-separated, or `*`) a
  release may drop although the previous version had rows in them (default: none; a release that
  drops one is blocked, `defs/release/continuity.py`).
- `executor`, `max_concurrent`: `DISTILL_EXECUTOR` (`in_process`, the local default, or
  `multiprocess` / `k8s`) and `DISTILL_MAX_CONCURRENT`, the steps one run executes at once.
- `ingest_shards` (`shards`): `DISTILL_INGEST_SHARDS` (default 1, at most `MAX_SHARDS`), the shard
  steps a day's raw files of each source are split in (`defs.shards`; 1: none, one bronze step).
"""

from __future__ import annotations

import os
import re
from datetime import date
from pathlib import Path

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

SOURCES: tuple[str, ...] = ("traces", "escalations", "revisions", "telemetry")
# the dataset name is a folder under the hub root: one plain path component
DATASET_NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
EXECUTORS: tuple[str, ...] = ("in_process", "multiprocess", "k8s")
EMBEDDERS: tuple[str, ...] = ("hashed", "model2vec")
# the settings that take one of a few names
CHOICES: dict[str, tuple[str, ...]] = {"executor": EXECUTORS, "embedder": EMBEDDERS}
# shard steps per source and day: each is an asset of its own in the definitions
MAX_SHARDS = 64


def refuse_blank(variable: str, value: str) -> str:
    """Return `value`, or raise `ValueError` if it is set but blank or only whitespace.

    A secret such as `DISTILL_PLAYER_ID_KEY=" "` would be accepted by a truthiness test and give
    a guessable key.
    """
    if value and not value.strip():
        raise ValueError(f"{variable} is set but blank: set a real value or unset it")
    return value


class Settings(BaseModel):
    """Resolved locations, names and optional backends (see the module docstring)."""

    data_dir: str = Field(description="Folder holding raw/, lake/, hub/ by default")
    raw_root: str = Field(description="Root URI of raw landing: <raw>/<source>/<YYYY-MM-DD>/")
    lake_root: str = Field(description="Root URI of the Parquet lake: <lake>/<source>/<table>/")
    hub_root: str = Field(description="Root of local dataset repositories: <hub>/<name>/")
    dataset_name: str = Field(default="distill", description="Published dataset repository name")
    memory_root: str = Field(default="", description="Root of the principles memory")
    eval_sets: str = Field(default="", description="Folder of evaluation sets to decontaminate")
    embedder: str = Field(default="", description="Embedder backend: hashed (default) | model2vec")
    embedder_model: str = Field(default="", description="Local model folder of the embedder")
    llm_base_url: str = Field(default="", description="OpenAI-compatible endpoint; empty: offline")
    llm_model: str = Field(default="", description="Model name sent to the LLM endpoint")
    llm_api_key: str = Field(default="", description="Bearer key of the LLM endpoint, if any")
    partitions_start: str = Field(
        default="", description="First daily partition; empty: the days with raw files"
    )
    future_days: int = Field(
        default=0, ge=0, description="Days past the last complete day whose raw folders ingest"
    )
    allow_dropped_configs: str = Field(
        default="", description="Configs a release may drop on purpose (comma-separated, or *)"
    )
    executor: str = Field(default="", description="in_process (default) | multiprocess | k8s")
    max_concurrent: str = Field(default="", description="Steps a run executes at once")
    ingest_shards: str = Field(
        default="", description="Shard steps a day's raw files of a source are split in"
    )

    @field_validator("dataset_name")
    @classmethod
    def _plain_dataset_name(cls, name: str) -> str:
        # fullmatch: `$` would accept a trailing newline (`distill\n`)
        if not DATASET_NAME_PATTERN.fullmatch(name) or ".." in name:
            raise ValueError(
                f"DISTILL_DATASET_NAME={name!r} must be a plain name (letters, digits, '.', '_', "
                "'-'; no path separators or '..')"
            )
        return name

    @field_validator("partitions_start")
    @classmethod
    def _iso_date(cls, value: str) -> str:
        if value:
            try:
                date.fromisoformat(value)
            except ValueError:
                raise ValueError(
                    f"DISTILL_PARTITIONS_START={value!r} is not a date (YYYY-MM-DD)"
                ) from None
        return value

    @field_validator("executor", "embedder")
    @classmethod
    def _known_choice(cls, value: str, info: ValidationInfo) -> str:
        choices = CHOICES[str(info.field_name)]
        if value and value not in choices:
            variable = f"DISTILL_{str(info.field_name).upper()}"
            raise ValueError(f"{variable}={value!r} must be one of {', '.join(choices)}")
        return value

    @field_validator("max_concurrent")
    @classmethod
    def _positive_count(cls, value: str) -> str:
        if value and not (value.isdigit() and int(value) >= 1):
            raise ValueError(f"DISTILL_MAX_CONCURRENT={value!r} must be a whole number, at least 1")
        return value

    @field_validator("ingest_shards")
    @classmethod
    def _shard_count(cls, value: str) -> str:
        if value and not (value.isascii() and value.isdigit() and 1 <= int(value) <= MAX_SHARDS):
            raise ValueError(
                f"DISTILL_INGEST_SHARDS={value!r} must be a whole number from 1 to {MAX_SHARDS}"
            )
        return value

    @property
    def shards(self) -> int:
        """Shard steps of a day's bronze ingest per source (`DISTILL_INGEST_SHARDS`, default 1)."""
        return int(self.ingest_shards or 1)

    @field_validator("eval_sets", "embedder_model")
    @classmethod
    def _existing_folder(cls, value: str, info: ValidationInfo) -> str:
        if value and not Path(value).is_dir():
            variable = f"DISTILL_{str(info.field_name).upper()}"
            raise ValueError(f"{variable}={value} is not a folder")
        return value

    @field_validator("llm_base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not value.startswith(("http://", "https://")):
            raise ValueError(f"DISTILL_LLM_BASE_URL={value!r} must start with http:// or https://")
        return value

    @field_validator("llm_api_key")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        return refuse_blank("DISTILL_LLM_API_KEY", value)

    @model_validator(mode="after")
    def _llm_endpoint_complete(self) -> Settings:
        # a model or key without an endpoint would be ignored silently (offline extractors), an
        # endpoint without a model would fail mid-run
        if self.llm_base_url and not self.llm_model:
            raise ValueError("DISTILL_LLM_BASE_URL is set but DISTILL_LLM_MODEL is not")
        for variable, value in (
            ("DISTILL_LLM_MODEL", self.llm_model),
            ("DISTILL_LLM_API_KEY", self.llm_api_key),
        ):
            if value and not self.llm_base_url:
                raise ValueError(f"{variable} is set but DISTILL_LLM_BASE_URL is not")
        return self

    @model_validator(mode="after")
    def _embedder_and_model_agree(self) -> Settings:
        if self.embedder == "model2vec" and not self.embedder_model:
            raise ValueError("DISTILL_EMBEDDER=model2vec needs DISTILL_EMBEDDER_MODEL (a folder)")
        if self.embedder_model and self.embedder != "model2vec":
            raise ValueError("DISTILL_EMBEDDER_MODEL is set but DISTILL_EMBEDDER is not model2vec")
        return self

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
            memory_root=env.get("DISTILL_MEMORY_ROOT") or f"{data_dir}/memory",
            eval_sets=env.get("DISTILL_EVAL_SETS", ""),
            embedder=env.get("DISTILL_EMBEDDER", ""),
            embedder_model=env.get("DISTILL_EMBEDDER_MODEL", ""),
            llm_base_url=env.get("DISTILL_LLM_BASE_URL", ""),
            llm_model=env.get("DISTILL_LLM_MODEL", ""),
            llm_api_key=env.get("DISTILL_LLM_API_KEY", ""),
            partitions_start=env.get("DISTILL_PARTITIONS_START", ""),
            future_days=env.get("DISTILL_FUTURE_DAYS") or 0,
            allow_dropped_configs=env.get("DISTILL_ALLOW_DROPPED_CONFIGS", ""),
            executor=env.get("DISTILL_EXECUTOR", ""),
            max_concurrent=env.get("DISTILL_MAX_CONCURRENT", ""),
            ingest_shards=env.get("DISTILL_INGEST_SHARDS", ""),
        )
