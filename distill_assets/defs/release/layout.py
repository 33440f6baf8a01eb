"""The dataset repository layout and how its Parquet files are written (deterministically).

`data/<config>/<split>/<partition>-<NNNNN>.parquet`: one or more shards (at most `SHARD_ROWS` rows
each, numbered from 00000) per feed partition (ingest day) of the config's curated rows and split,
so a night rewrites only the shards of the partitions it changed and the others are reused from
the previous version. The card's `configs:` point `datasets` at `data/<config>/<split>/*.parquet`,
which reads the shards in path order (partition order). Files are written by PyArrow with fixed
options from Arrow tables cast to one canonical schema (plain `string`/`list`, no Polars view
types), so the same rows give the same bytes, and `datasets` infers `Value("string")` and friends.
Fields a config lists in `JSON_FIELDS` are written as Arrow JSON (`arrow.json`, Parquet's JSON
logical type), which `datasets` loads as Python objects (`Json()`); the release's own readers see
them as plain strings again (`without_extensions`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from distill_assets.contracts.published import JSON_FIELDS, published_schema

DATA_DIR = "data"
LAYOUT_FORMAT = "3"
SHARD_ROWS = 250_000
ROW_GROUP_ROWS = 10_000
COMPRESSION = "zstd"
README = "README.md"
MANIFEST = "release.json"


def shard_count(rows: int, shard_rows: int = SHARD_ROWS) -> int:
    """Return how many files hold `rows` rows (at least one)."""
    return max(1, -(-rows // shard_rows))


def data_file_path(config: str, split: str, partition: str, index: int) -> str:
    """Return the path inside the repository of shard `index` of a partition's split."""
    return f"{DATA_DIR}/{config}/{split}/{partition}-{index:05d}.parquet"


def split_pattern(config: str, split: str) -> str:
    """Return the glob matching every data file of a config's split (what the card lists)."""
    return f"{DATA_DIR}/{config}/{split}/*.parquet"


def link_or_copy(source: Path | str, target: Path | str) -> None:
    """Place `source` at `target`: a hard link when both are on one filesystem, else a copy.

    Published files are never modified in place (they are replaced by renames), so a hard link
    shared by several versions is safe.
    """
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def arrow_type(
    dtype: pl.DataType, json_fields: frozenset[str] = frozenset(), path: str = ""
) -> pa.DataType:
    """Return the canonical Arrow type of a Polars type (plain strings and lists).

    A string at a dotted `path` listed in `json_fields` becomes Arrow JSON.
    """
    if dtype == pl.String:
        return pa.json_() if path in json_fields else pa.string()
    if isinstance(dtype, pl.List):
        return pa.list_(arrow_type(dtype.inner, json_fields, path))
    if isinstance(dtype, pl.Struct):
        return pa.struct(
            [
                pa.field(f.name, arrow_type(f.dtype, json_fields, f"{path}.{f.name}"))
                for f in dtype.fields
            ]
        )
    return pl.Series(dtype=dtype).to_arrow().type


def arrow_schema(schema: pl.Schema, json_fields: frozenset[str] = frozenset()) -> pa.Schema:
    """Return the canonical Arrow schema of a Polars schema (`json_fields` as Arrow JSON)."""
    return pa.schema(
        [pa.field(name, arrow_type(dtype, json_fields, name)) for name, dtype in schema.items()]
    )


def published_arrow_schema(config: str) -> pa.Schema:
    """Return the Arrow schema of a config's data files."""
    return arrow_schema(published_schema(config), JSON_FIELDS.get(config, frozenset()))


def storage_type(dtype: pa.DataType) -> pa.DataType:
    """Return `dtype` with every extension type (Arrow JSON) replaced by its storage type."""
    if isinstance(dtype, pa.BaseExtensionType):
        return dtype.storage_type
    if pa.types.is_list(dtype):
        return pa.list_(storage_type(dtype.value_type))
    if pa.types.is_struct(dtype):
        return pa.struct([pa.field(f.name, storage_type(f.type)) for f in dtype])
    return dtype


def without_extensions(table: pa.Table) -> pa.Table:
    """Return a data file's table with Arrow JSON columns as plain strings (Polars reads them)."""
    plain = pa.schema([pa.field(f.name, storage_type(f.type)) for f in table.schema])
    return table if plain.equals(table.schema) else table.cast(plain)


@dataclass(frozen=True)
class WrittenFile:
    """A data file as written: its rows, size and checksum."""

    rows: int
    bytes: int
    sha256: str


def file_sha256(path: Path) -> str:
    """Return the hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(8 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_data_file(frame: pl.DataFrame, schema: pa.Schema, path: Path) -> WrittenFile:
    """Write `frame` (columns of `schema`, in order) as one Parquet data file."""
    table = frame.select(schema.names).to_arrow().cast(schema)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        table.combine_chunks(),
        path,
        compression=COMPRESSION,
        row_group_size=ROW_GROUP_ROWS,
    )
    return WrittenFile(rows=table.num_rows, bytes=path.stat().st_size, sha256=file_sha256(path))
