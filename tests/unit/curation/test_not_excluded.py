"""Removal by subject before deciding: the kept keys and their vectors, taken once, in key order."""

import numpy as np
import polars as pl

from distill_assets.contracts.published import EXCLUSION_SCHEMA
from distill_assets.defs.curation.decide import ArraySource, RowVectors
from distill_assets.defs.curation.pipeline import _not_excluded


def keys_and_vectors() -> tuple[pl.DataFrame, RowVectors]:
    """Six rows of two sources; row i's arrays hold i, and a column decide never reads."""
    keys = pl.DataFrame(
        {
            "id": ["a", "b", "c", "d", "e", "f"],
            "source": ["telemetry", "telemetry", "traces", "telemetry", "traces", "traces"],
            "subject": ["p1", "p2", "p1", "p1", None, "x"],
            "split_group": ["g0", "g1", "g2", "g3", "g4", "g5"],
        }
    )
    rows = np.arange(6)
    vectors = RowVectors(
        np.stack([rows, rows + 10], axis=1).astype(np.uint64),
        rows % 2 == 0,
        rows.reshape(-1, 1).astype(np.uint64),
        np.stack([rows, -rows], axis=1).astype(np.float32),
        rows.astype(np.float32),
        ArraySource({}),
        rows,
    )
    return keys, vectors


def test_excluded_subjects_and_ids_leave_and_the_rest_keep_their_order_and_vectors():
    keys, vectors = keys_and_vectors()
    exclusions = pl.LazyFrame(
        {
            "source": ["telemetry", "traces", "traces", "telemetry"],
            "subject": ["p1", "e", "f", "p1"],
            "reason": ["6", "8", "7", "5"],
        },
        schema=EXCLUSION_SCHEMA,
    )
    kept, taken, excluded = _not_excluded(keys, vectors, exclusions)
    # telemetry p1 (a, d) under its smallest reason 5; the traces rows e and f by their ids
    # (e has no subject), under 8 and 7; traces p1 (c) is another source's subject
    assert kept.to_dict(as_series=False) == {
        "id": ["b", "c"],
        "source": ["telemetry", "traces"],
        "subject": ["p2", "p1"],
        "split_group": ["g1", "g2"],
    }
    assert excluded == {"5": 2, "7": 1, "8": 1}
    assert taken.band_keys.tolist() == [[1, 11], [2, 12]]
    assert taken.shingled.tolist() == [False, True]
    assert taken.semantic_keys.tolist() == [[1], [2]]
    assert taken.embedding_head.tolist() == [[1.0, -1.0], [2.0, -2.0]]
    assert taken.embedding_tail.tolist() == [1.0, 2.0]
    assert taken.source_rows.tolist() == [1, 2]


def test_nothing_excluded_keeps_the_same_keys_and_vectors_uncopied():
    keys, vectors = keys_and_vectors()
    listed = pl.LazyFrame(
        {"source": ["escalations"], "subject": ["p1"], "reason": ["5"]}, schema=EXCLUSION_SCHEMA
    )
    kept, taken, excluded = _not_excluded(keys, vectors, listed)
    assert kept is keys and taken is vectors and excluded == {}
    kept, taken, excluded = _not_excluded(keys, vectors, None)
    assert kept is keys and taken is vectors and excluded == {}
