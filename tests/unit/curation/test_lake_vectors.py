"""`LakeVectors` reads the full vectors of a few rows from product files, row group by row group."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from distill_assets.defs.curation.products import LakeVectors


def write_products(path, first: int, rows: int) -> None:
    """A product-like file: row r has signature [r, r + 1] and embedding [r / 2, -r, 0.5]."""
    ids = np.arange(first, first + rows)
    signature = np.stack([ids, ids + 1], axis=1).astype(np.uint32)
    embedding = np.stack([ids / 2, -ids, np.full(rows, 0.5)], axis=1).astype(np.float32)
    table = pa.table(
        {
            "signature": pa.FixedSizeListArray.from_arrays(pa.array(signature.ravel()), 2),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(embedding.ravel()), 3),
        }
    )
    pq.write_table(table, path, row_group_size=3)


def product_files(folder, sizes: list[int]) -> list[UPath]:
    """One product file per day of `sizes` rows, product rows numbered on across the files."""
    paths, first = [], 0
    for i, size in enumerate(sizes):
        path = folder / f"2026-11-{19 + i}.parquet"
        write_products(path, first, size)
        paths.append(UPath(path))
        first += size
    return paths


def test_rows_of_any_file_and_row_group_come_back_in_the_order_asked(tmp_path):
    vectors = LakeVectors(product_files(tmp_path, [7, 1, 5]))
    rows = np.array([12, 0, 7, 5, 6, 8, 3])
    assert vectors.fetch("signature", rows).tolist() == [[r, r + 1] for r in rows.tolist()]
    embedding = vectors.fetch("embedding", rows)
    assert embedding.dtype == np.float32
    assert embedding.tolist() == [[r / 2, -r, 0.5] for r in rows.tolist()]
    assert vectors.fetch("embedding", np.array([], dtype=np.int64)).shape == (0, 3)


def test_whole_columns_of_every_file_and_row_group_are_the_rows_in_file_order(tmp_path):
    signature, embedding = LakeVectors(product_files(tmp_path, [7, 1, 5, 0, 3])).columns(
        {"signature": np.uint32, "embedding": np.float32}
    )
    rows = np.arange(7 + 1 + 5 + 0 + 3)
    assert signature.dtype == np.uint32
    assert signature.tolist() == [[r, r + 1] for r in rows.tolist()]
    assert embedding.dtype == np.float32
    assert embedding.tolist() == [[r / 2, -r, 0.5] for r in rows.tolist()]
