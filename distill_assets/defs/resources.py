"""Project-wide resources: settings, the Parquet lake IO manager.

The lake IO manager holds the data dir's run lock (`lib.runlock`) for as long as its run (or, with
a step-per-process executor, its step) executes: every run that writes the lake takes it in its
own process, whoever launched it, so two writers never overlap on one data dir (runs of distinct
partitions share it; a release or a `distill` command has it alone).

`LakeIOManager` is built on Dagster's `UPathIOManager` (dagster-polars 0.27.12 breaks on Polars 2.x;
README.md#how-it-works): outputs are Polars frames (a LazyFrame is streamed), Arrow tables, or a
`StagedParquet` file an asset wrote itself with DuckDB; all land atomically at
`<lake root>/<source>/<table>/<partition>.parquet`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pyarrow as pa
from pydantic import PrivateAttr
from upath import UPath

from distill_assets.lib.cleanup import remove_if_empty
from distill_assets.lib.embed import Embedder, load_embedder
from distill_assets.lib.lake import (
    move_into_place,
    parquet_columns,
    parquet_row_count,
    write_parquet_atomic,
)
from distill_assets.lib.llm import ChatClient, chat_client
from distill_assets.lib.runlock import run_lock
from distill_assets.lib.settings import Settings

PARTITION_TAG = "dagster/partition"


class DistillSettings(dg.ConfigurableResource):
    """Where raw data lands, where the lake and hub live, the dataset's name, the backends.

    Empty fields fall back to `DISTILL_*` environment variables, then to folders under
    `DISTILL_DATA_DIR` (see `distill_assets.lib.settings`). Read once per resource (a run, a
    sensor or schedule evaluation): the IO manager, the embedder and the LLM resource receive
    this resource instead of reading the environment themselves.
    """

    raw_root: str = ""
    lake_root: str = ""
    hub_root: str = ""
    dataset_name: str = ""
    _settings: Settings | None = PrivateAttr(default=None)

    def resolved(self) -> Settings:
        """Return the effective settings (validated and read on first use)."""
        if self._settings is None:
            self._settings = Settings.resolve(
                raw_root=self.raw_root or None,
                lake_root=self.lake_root or None,
                hub_root=self.hub_root or None,
                dataset_name=self.dataset_name or None,
            )
        return self._settings


class EmbedderResource(dg.ConfigurableResource):
    """The project's one text embedder (`distill_assets.lib.embed`).

    Empty fields fall back to `DISTILL_EMBEDDER` / `DISTILL_EMBEDDER_MODEL`, then to the offline
    hashed n-gram embedder (no model, no download).
    """

    settings: DistillSettings
    backend: str = ""
    model_path: str = ""

    def embedder(self) -> Embedder:
        """Return the configured embedder (loaded once per process)."""
        settings = self.settings.resolved()
        return load_embedder(
            self.backend or settings.embedder, self.model_path or settings.embedder_model
        )


class LlmResource(dg.ConfigurableResource):
    """An optional OpenAI-compatible chat endpoint for the extractors (`distill_assets.lib.llm`).

    Empty fields fall back to `DISTILL_LLM_BASE_URL`, `DISTILL_LLM_MODEL`, `DISTILL_LLM_API_KEY`;
    with no base URL anywhere, `client()` is None and the offline extractors do all the work.
    """

    settings: DistillSettings
    base_url: str = ""
    model: str = ""
    api_key: str = ""

    def client(self) -> ChatClient | None:
        """Return a client for the configured endpoint, or None when none is configured."""
        settings = self.settings.resolved()
        return chat_client(
            self.base_url or settings.llm_base_url,
            self.model or settings.llm_model,
            self.api_key or settings.llm_api_key,
        )


@dataclass(frozen=True)
class StagedParquet:
    """A Parquet file an asset already wrote to local disk; the IO manager moves it into place."""

    path: Path


class ParquetLakeIO(dg.UPathIOManager):
    """UPath IO manager writing Parquet atomically and loading Polars frames."""

    extension: str = ".parquet"

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        """Write `obj` to `path` atomically."""
        if isinstance(obj, StagedParquet):
            move_into_place(obj.path, path)
            remove_if_empty(obj.path.parent)
        elif isinstance(obj, pl.DataFrame | pl.LazyFrame | pa.Table):
            write_parquet_atomic(obj, path)
        else:
            raise TypeError(f"the lake stores Polars/Arrow frames, not {type(obj).__name__}")

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pl.DataFrame | pl.LazyFrame:
        """Load a Parquet file as a LazyFrame when the input asks for one, else a DataFrame."""
        frame = pl.scan_parquet(str(path))
        if context.dagster_type.typing_type is pl.LazyFrame:
            return frame
        return frame.collect()

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, Any]:
        """Report the written row count and column schema (from the Parquet footer).

        Every lake asset gets them here, so the UI's catalog shows each table's columns and rows.
        """
        path = (
            next(iter(self._get_paths_for_partitions(context).values()))
            if context.has_asset_partitions
            else self._get_path(context)
        )
        columns = [dg.TableColumn(name, dtype) for name, dtype in parquet_columns(path)]
        return {
            "dagster/row_count": dg.MetadataValue.int(parquet_row_count(path)),
            "dagster/column_schema": dg.MetadataValue.table_schema(dg.TableSchema(columns)),
        }


class LakeIOManager(dg.ConfigurableIOManagerFactory):
    """The lake IO manager; `lake_root` empty means the settings' lake root."""

    settings: DistillSettings
    lake_root: str = ""

    @contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[ParquetLakeIO]:
        """Hold the data dir's run lock while the run uses the lake (module docstring)."""
        tags = context.dagster_run.tags if context.dagster_run is not None else {}
        partition = tags.get(PARTITION_TAG)
        with run_lock(self.settings.resolved().data_dir, context.run_id, partition):
            yield self.create_io_manager(context)

    def create_io_manager(self, context: dg.InitResourceContext) -> ParquetLakeIO:
        """Build the IO manager rooted at the configured lake."""
        root = self.lake_root or self.settings.resolved().lake_root
        return ParquetLakeIO(base_path=UPath(root))
