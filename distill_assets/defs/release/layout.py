"""The dataset repository layout and how its Parquet files are written (deterministically).

`data/<config>/<split>-<NNNNN>-of-<NNNNN>.parquet` (the Hugging Face convention), at most
`SHARD_ROWS` rows per file. Files are written by PyArrow with fixed options from Arrow tables cast
to one canonical schema (plain `string`/`list`, no Polars view types), so the same rows give the
same bytes, and `datasets` infers `Value("string")` and friends.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

DATA_DIR = "data"
SHARD_ROWS = 250_000
ROW_GROUP_ROWS = 10_000
COMPRESSION = "zstd"
README = "README.md"
MANIFEST = "release.json"


def shard_count(rows: int, shard_rows: int = SHARD_ROWS) -> int:
    """Return how many files hold `rows` rows (at least one)."""
    return max(1, -(-rows // shard_rows))


def data_file_path(config: str, split: str, index: int, count: int) -> str:
    """Return a data file's path inside the repository."""
    return f"{DATA_DIR}/{config}/{split}-{index:05d}-of-{count:05d}.parquet"


def arrow_type(dtype: pl.DataType) -> pa.DataType:
    """Return the canonical Arrow type of a Polars type (plain strings and lists)."""
    if dtype == pl.String:
        return pa.string()
    if isinstance(dtype, pl.List):
        return pa.list_(arrow_type(dtype.inner))
    if isinstance(dtype, pl.Struct):
        return pa.struct([pa.field(f.name, arrow_type(f.dtype)) for f in dtype.fields])
    return pl.Series(dtype=dtype).to_arrow().type


def arrow_schema(schema: pl.Schema) -> pa.Schema:
    """Return the canonical Arrow schema of a Polars schema."""
    return pa.schema([pa.field(name, arrow_type(dtype)) for name, dtype in schema.items()])


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


def write_data_file(frame: pl.DataFrame, schema: pl.Schema, path: Path) -> WrittenFile:
    """Write `frame` (columns of `schema`, in order) as one Parquet data file."""
    table = frame.select(schema.names()).to_arrow().cast(arrow_schema(schema))
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(
        table.combine_chunks(),
        path,
        compression=COMPRESSION,
        row_group_size=ROW_GROUP_ROWS,
    )
    return WrittenFile(rows=table.num_rows, bytes=path.stat().st_size, sha256=file_sha256(path))
