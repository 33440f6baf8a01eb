"""`distillation_examples` and the export feeds are built in batches, with the whole day's result.

The inputs are the committed sample day through the real ingest (two raw files) and the legacy
fixture database migrated into the same partition: its `source_file` sorts between the two raw
files, so the merge of bronze and legacy records is exercised, not just appended.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from distill_assets.defs.escalations import exports
from distill_assets.defs.escalations.examples import (
    ORDER,
    distillation_examples,
    example_batches,
)
from distill_assets.defs.escalations.legacy import migrate_databases
from distill_assets.defs.escalations.records import ingest_records
from tests.fixtures.escalations.legacy_db import write_legacy_db

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "escalations"
DAY = "2026-11-19"
DB = "escalations/2026-11-19/escalations-node2.db"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, pl.DataFrame]:
    root = tmp_path_factory.mktemp("raw")
    shutil.copytree(SAMPLES / DAY, root / "escalations" / DAY)
    files = sorted(str(p) for p in (root / "escalations" / DAY).iterdir())
    bronze = pl.read_parquet(ingest_records(files, raw_root=str(root)).bronze.path)
    legacy = migrate_databases([str(write_legacy_db(root / DB))], raw_root=str(root)).records
    return bronze, legacy


def test_batches_give_the_whole_days_examples_in_order(
    inputs: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    bronze, legacy = inputs
    assert (bronze.height, legacy.height) == (84, 5)
    records = pl.concat([bronze, legacy], how="diagonal").sort(ORDER)
    whole = distillation_examples(records.lazy()).collect()

    batches = list(example_batches(bronze.lazy(), legacy.lazy(), rows=8))

    assert [b.height for b in batches] == [8] * 11 + [1]
    assert pl.concat(batches).equals(whole)
    files = pl.concat(batches).get_column("source_ref").str.extract(r"^([^:#]+)").to_list()
    assert files == [
        *["escalations/2026-11-19/escalations-node1.jsonl"] * 49,
        *["escalations-node2.db"] * 5,
        *["escalations/2026-11-19/escalations-node2.jsonl.gz"] * 35,
    ]


def test_no_records_give_one_empty_batch_with_the_tables_schema(
    inputs: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    bronze, legacy = inputs
    whole = distillation_examples(pl.concat([bronze, legacy], how="diagonal").lazy()).collect()

    batches = list(example_batches(bronze.head(0).lazy(), legacy.head(0).lazy()))

    assert len(batches) == 1
    assert batches[0].height == 0
    assert batches[0].schema == whole.schema


def test_records_out_of_order_are_an_error_not_a_silent_reorder(
    inputs: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    bronze, legacy = inputs
    shuffled = pl.concat([bronze.slice(20), bronze.head(20)])

    with pytest.raises(ValueError, match="not in strictly increasing"):
        list(example_batches(shuffled.lazy(), legacy.lazy(), rows=8))


def test_export_feeds_written_in_batches_equal_the_whole_days_rows(
    inputs: tuple[pl.DataFrame, pl.DataFrame],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bronze, legacy = inputs
    examples = pl.concat(list(example_batches(bronze.lazy(), legacy.lazy())))
    source = tmp_path / "examples.parquet"
    examples.write_parquet(source)
    monkeypatch.setattr(exports, "BATCH_ROWS", 5)

    for name in exports.FORMATS:
        whole, dropped = exports.export_rows(examples, name)
        target = tmp_path / f"{name}.parquet"

        written = exports.write_export(pl.scan_parquet(source), name, target)

        assert (written.rows, written.examples, written.dropped) == (
            whole.height,
            examples.height,
            dropped,
        )
        assert pl.read_parquet(target).equals(whole)
