"""A day's products computed in shards and merged are byte-identical to the day computed whole.

`product_shards`: a step stages the day's checked candidates, N shards each compute a contiguous
range of the day's slices, the merge copies their row groups into the day's product file. The
day here has several slices in two feed files (row groups of 3 rows, slices of at most 4 rows),
and a valid card number found only in the first file's rows that must also be replaced inside a
longer run in the last file's rows: a shard scrubbing with its own rows' candidates gives other
bytes (the broken variant below).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import dagster as dg
import polars as pl
import pyarrow.parquet as pq
import pytest
from upath import UPath

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.curation.daily import product_assets, product_shard_key, products_key
from distill_assets.defs.curation.decontaminate import load_eval_ngrams
from distill_assets.defs.curation.product_shards import (
    FOUND_FILE,
    RANGE_KEY,
    ShardRange,
    merge_or_compute,
    product_shard_dir,
    shard_ranges,
    stage_found,
    write_product_shard,
)
from distill_assets.defs.curation.products import (
    ProductContext,
    feed_files_of_day,
    product_slices,
    refresh_day,
    scan_feed_file,
    scrub_found,
    vector_row_bytes,
    write_day_products,
)
from distill_assets.defs.resources import DistillSettings, EmbedderResource
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.lake import feed_fingerprint, partition_path
from tests.conftest import isolate
from tests.unit.curation.feeds import feed_row
from tests.unit.curation.texts import words

DAY = "2026-11-19"
CARD = "4539 1488 0343 6467"  # Luhn-valid, not a published test number
EVAL_WORDS = words("eval", 20)
# (source, table) -> rows; the card is valid in revisions-1 only, inside a run in escalations-7
FEEDS = {("revisions", "revision_pairs"): 23, ("escalations", "preference_pairs"): 9}
EXTRAS = {
    "revisions-1": f" card {CARD}",
    "revisions-3": " mail me at user3@corp.com",
    "revisions-5": " broken \ufffd text",
    "revisions-12": " " + " ".join(EVAL_WORDS),
    "escalations-7": f" ref x{CARD}",
}


def _rows(source: str, count: int) -> list[dict[str, object]]:
    return [
        feed_row(
            "dpo",
            f"{source}-{i}",
            " ".join(words(f"{source}-{i % 4}", 30)) + EXTRAS.get(f"{source}-{i}", ""),
            source=source,
            group=f"g{i % 3}",
            score=0.2 + 0.1 * (i % 7),
            event_time=float(i),
            metadata={"trust": 0.5 + 0.01 * i} if i % 2 else None,
        )
        for i in range(count)
    ]


def write_lake(lake: str) -> None:
    """Write the day's two dpo feed partitions, in row groups of 3 rows."""
    for (source, table), count in FEEDS.items():
        path = partition_path(lake, source, table, DAY)
        path.parent.mkdir(parents=True, exist_ok=True)
        frame = pl.DataFrame(_rows(source, count), schema=feed_schema("dpo"))
        pq.write_table(frame.to_arrow(), path.path, row_group_size=3)


@pytest.fixture
def context(tmp_path: Path) -> ProductContext:
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "bench.jsonl").write_text(json.dumps({"q": " ".join(EVAL_WORDS)}) + "\n")
    return ProductContext("dpo", load_embedder(), load_eval_ngrams(str(folder)))


def slice_bytes(lake: str, context: ProductContext) -> int:
    """Return a slice size of a few rows: two row groups' feed bytes and four rows' vectors."""
    files = feed_files_of_day(lake, "dpo", DAY)
    groups = [pq.ParquetFile(p.path).metadata.row_group(0).total_byte_size for *_, p in files]
    return 2 * max(groups) + 4 * vector_row_bytes(context)


def whole_day(lake: str, context: ProductContext, size: int) -> bytes:
    """Return the bytes of the day's product file computed by one step (then removed)."""
    refresh = refresh_day(lake, context, DAY, size)
    assert refresh.path is not None and refresh.written is not None
    data = refresh.path.read_bytes()
    refresh.path.unlink()
    return data


def run_shards(lake: str, context: ProductContext, shards: int, size: int) -> None:
    """Stage the day's candidates and its `shards` shards."""
    staged = stage_found(lake, context, DAY)
    assert staged is not None and staged.counts == {"iban": 0, "payment_card": 1}
    for k in range(shards):
        write_product_shard(lake, context, DAY, shard=k, shards=shards, slice_bytes=size)


@pytest.mark.parametrize("shards", [2, 3, 40])
def test_merged_shards_are_byte_identical_to_the_day_computed_whole(
    tmp_path: Path, context: ProductContext, shards: int
) -> None:
    lake = str(tmp_path / "lake")
    write_lake(lake)
    size = slice_bytes(lake, context)
    files = feed_files_of_day(lake, "dpo", DAY)
    pieces = product_slices(files, context, size)
    # several slices of at most 4 rows in both files; 40 shards: more shards than slices
    assert 8 < len(pieces) < 40 and {p.path.name for p in pieces} == {f"{DAY}.parquet"}
    assert len({str(p.path) for p in pieces}) == 2 and max(p.rows for p in pieces) <= 4
    expected = whole_day(lake, context, size)

    run_shards(lake, context, shards, size)
    staging = product_shard_dir(lake, "dpo", DAY)
    ranges = shard_ranges(pieces, shards)
    assert ranges[0].start == 0 and ranges[-1].stop == len(pieces)
    assert all(a.stop == b.start for a, b in itertools.pairwise(ranges))
    # each staged shard holds its range (an empty range: a footer alone)
    for k, span in enumerate(ranges):
        staged = pq.ParquetFile((staging / f"{k}.parquet").path)
        covered = ShardRange.read(staged.schema_arrow.metadata)
        assert covered == ShardRange(k, shards, span.start, span.stop, covered.slice_rows)
        assert staged.metadata.num_rows == sum(p.rows for p in pieces[span.start : span.stop])
    if shards == 40:
        assert sum(not r for r in ranges) == 40 - len(pieces)

    day = merge_or_compute(lake, context, DAY, shards, size)
    assert (day.merged, day.not_merged) == (shards, None)
    assert day.refresh.path is not None and day.refresh.path.read_bytes() == expected
    written = day.refresh.written
    assert written is not None and (written.rows, written.slices) == (32, len(pieces))
    assert written.largest_slice_rows == max(p.rows for p in pieces)
    assert RANGE_KEY not in pq.read_schema(day.refresh.path.path).metadata
    assert not staging.exists()
    # the card found in revisions-1 is replaced inside escalations-7's longer run
    products = pl.read_parquet(day.refresh.path.path)
    prompt = products.filter(pl.col("id") == "escalations-7")["prompt"][0][0]["content"]
    assert prompt.endswith("ref x[REDACTED_CARD]")


def test_shards_scrubbing_with_their_own_candidates_are_not_the_day(
    tmp_path: Path, context: ProductContext
) -> None:
    """The broken variant the merge must not be: each shard's candidates from its rows alone."""
    lake = str(tmp_path / "lake")
    write_lake(lake)
    size = slice_bytes(lake, context)
    expected = whole_day(lake, context, size)
    files = feed_files_of_day(lake, "dpo", DAY)
    pieces = product_slices(files, context, size)
    fingerprint = feed_fingerprint([path for *_, path in files])
    scans = {str(p): scan_feed_file("dpo", s, t, str(p), DAY) for s, t, p in files}
    staging = product_shard_dir(lake, "dpo", DAY)
    for k, span in enumerate(shard_ranges(pieces, 2)):
        mine = pieces[span.start : span.stop]
        own = scrub_found([scans[str(p.path)].slice(p.offset, p.rows) for p in mine], "dpo")
        covered = ShardRange(k, 2, span.start, span.stop, [p.rows for p in mine])
        write_day_products(
            staging / f"{k}.parquet",
            files,
            DAY,
            context,
            fingerprint=fingerprint,
            slice_bytes=size,
            found=own,
            pieces=mine,
            footer={RANGE_KEY: covered.encode()},
        )
    day = merge_or_compute(lake, context, DAY, 2, size)
    assert day.merged == 2 and day.refresh.path is not None
    assert day.refresh.path.read_bytes() != expected


def test_missing_or_stale_shards_make_the_merge_compute_the_day(
    tmp_path: Path, context: ProductContext
) -> None:
    lake = str(tmp_path / "lake")
    write_lake(lake)
    size = slice_bytes(lake, context)
    expected = whole_day(lake, context, size)
    staging = product_shard_dir(lake, "dpo", DAY)

    run_shards(lake, context, 3, size)
    (staging / "1.parquet").unlink()
    day = merge_or_compute(lake, context, DAY, 3, size)
    assert (day.merged, day.not_merged) == (0, "shard 1 is not staged")
    assert day.refresh.written is not None and day.refresh.path is not None
    assert day.refresh.path.read_bytes() == expected and not staging.exists()
    # fresh: every step keeps it, nothing is staged
    assert stage_found(lake, context, DAY) is None
    shard = write_product_shard(lake, context, DAY, shard=0, shards=3, slice_bytes=size)
    assert (shard.reused, shard.slices) == (True, 0) and not staging.exists()
    kept = merge_or_compute(lake, context, DAY, 3, size)
    assert (kept.refresh.reused, kept.merged, kept.not_merged) == (True, 0, None)

    # shards of another slice size cover other slices
    day.refresh.path.unlink()
    run_shards(lake, context, 2, size)
    day = merge_or_compute(lake, context, DAY, 2, size // 2)
    assert day.not_merged == "shard 0 covers other slices than the day's"
    assert day.refresh.written is not None and day.refresh.path is not None
    computed = day.refresh.path.read_bytes()
    day.refresh.path.unlink()
    assert computed == whole_day(lake, context, size // 2)

    # a feed partition rewritten after the shards ran: they are stale, the day is computed
    run_shards(lake, context, 2, size)
    path = partition_path(lake, "escalations", "preference_pairs", DAY)
    frame = pl.read_parquet(path.path).head(5)
    pq.write_table(frame.to_arrow(), path.path, row_group_size=3)
    day = merge_or_compute(lake, context, DAY, 2, size)
    assert day.not_merged == "shard 0 is stale (another product version or feed partition)"
    assert day.refresh.path is not None and day.refresh.written is not None
    assert day.refresh.written.rows == 23 + 5
    computed = day.refresh.path.read_bytes()
    day.refresh.path.unlink()
    assert computed == whole_day(lake, context, size)


def test_product_shard_steps_and_the_merge_as_assets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The found step, two shard steps and the merge: the day's file of the unsharded asset."""
    settings = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DISTILL_INGEST_SHARDS", "2")
    write_lake(settings.lake_root)
    settings_resource = DistillSettings()
    resources = {
        "settings": settings_resource,
        "embedder": EmbedderResource(settings=settings_resource),
    }
    (single,) = product_assets("dpo", 1)
    assert dg.materialize([single], partition_key=DAY, resources=resources).success
    path = UPath(partition_path(settings.lake_root, "curation", "dpo_products", DAY))
    expected = path.read_bytes()
    path.unlink()

    assets = product_assets("dpo", 2)
    keys = [a.key for a in assets]
    assert [k.to_user_string() for k in keys] == [
        *(f"curation/dpo_products_found_{rule}_{piece}" for rule in (0, 1) for piece in (0, 1)),
        "curation/dpo_products_found",
        "curation/dpo_products_shard_0",
        "curation/dpo_products_shard_1",
        "curation/dpo_products",
    ]
    merge = assets[-1]
    assert {product_shard_key("dpo", 0), product_shard_key("dpo", 1)} <= set(
        merge.asset_deps[products_key("dpo")]
    )
    result = dg.materialize(assets, partition_key=DAY, resources=resources)
    assert result.success and path.read_bytes() == expected
    found = result.asset_materializations_for_node("curation__dpo_products_found")[0].metadata
    assert found["candidates"].value == {"iban": 0, "payment_card": 1}
    shard = result.asset_materializations_for_node("curation__dpo_products_shard_1")[0].metadata
    assert shard["shard"].value == "2 of 2" and shard["reused"].value is False
    assert shard["rows"].value == 9 and shard["slices"].value == 1  # the escalations file
    merged = result.asset_materializations_for_node("curation__dpo_products")[0].metadata
    assert (merged["shards"].value, merged["dagster/row_count"].value) == (2, 32)
    assert (merged["reused"].value, merged["slices"].value) == (False, 2)
    assert not product_shard_dir(settings.lake_root, "dpo", DAY).exists()
    assert not (product_shard_dir(settings.lake_root, "dpo", DAY) / FOUND_FILE).exists()
