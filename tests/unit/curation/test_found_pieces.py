"""The day's checked candidates collected in pieces, one round per checked rule, are the day's.

`product_shards.stage_found_piece`: round r's N pieces each collect the r-th checked rule's
candidates on their slices of the day, with the day's candidates of the checked rules before
it (the previous rounds' pieces); `stage_found` stages their union. The staged `found.parquet`
must be byte-identical to the one the found step collects alone, and the products to the
unsharded step's. The day here holds an IBAN valid in the revisions file whose digits hold a
Luhn-valid card number, and the same IBAN glued to a word in the escalations file (no IBAN
candidate there): the day's IBAN replaces it there too, so the card is no candidate of the
day. A piece collecting cards with its own IBANs alone finds it (the broken variant below).
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pyarrow.parquet as pq
import pytest
from upath import UPath

from distill_assets.contracts.published import feed_schema
from distill_assets.defs.curation.daily import found_key, found_piece_key, product_assets
from distill_assets.defs.curation.decontaminate import load_eval_ngrams
from distill_assets.defs.curation.product_shards import (
    FOUND_FILE,
    FoundPiece,
    found_piece_file,
    merge_or_compute,
    product_shard_dir,
    stage_found,
    stage_found_piece,
    write_product_shard,
)
from distill_assets.defs.curation.products import (
    ProductContext,
    checked_rules,
    day_found,
    feed_files_of_day,
    found_slices,
    found_texts,
    refresh_day,
    scrub_found,
)
from distill_assets.defs.resources import DistillSettings, EmbedderResource
from distill_assets.lib.embed import load_embedder
from distill_assets.lib.lake import partition_path
from tests.conftest import isolate
from tests.unit.curation.feeds import feed_row
from tests.unit.curation.texts import words

DAY = "2026-11-19"
# a valid German IBAN whose digits `4123 4567 8901 2349` are a Luhn-valid card number
IBAN = "DE73 4123 4567 8901 2349 07"
CARD_IN_IBAN = "4123 4567 8901 2349"
CARD = "4539 1488 0343 6467"
FEEDS = {("revisions", "revision_pairs"): 14, ("escalations", "preference_pairs"): 9}
EXTRAS = {
    "revisions-2": f" iban {IBAN} ok",
    "revisions-9": f" card {CARD}",
    "escalations-4": f" ref x{IBAN}",
}
# slices of the found pass of one row each (so a piece is several slices)
SLICE_BYTES = 1


def write_lake(lake: str) -> None:
    """Write the day's two dpo feed partitions, in row groups of 3 rows."""
    for (source, table), count in FEEDS.items():
        rows = [
            feed_row(
                "dpo",
                f"{source}-{i}",
                " ".join(words(f"{source}-{i % 4}", 30)) + EXTRAS.get(f"{source}-{i}", ""),
                source=source,
                group=f"g{i % 3}",
                event_time=float(i),
            )
            for i in range(count)
        ]
        path = partition_path(lake, source, table, DAY)
        path.parent.mkdir(parents=True, exist_ok=True)
        frame = pl.DataFrame(rows, schema=feed_schema("dpo"))
        pq.write_table(frame.to_arrow(), path.path, row_group_size=3)


@pytest.fixture
def context(tmp_path: Path) -> ProductContext:
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "bench.jsonl").write_text(json.dumps({"q": "unrelated eval words"}) + "\n")
    return ProductContext("dpo", load_embedder(), load_eval_ngrams(str(folder)))


def stage_rounds(lake: str, context: ProductContext, pieces: int) -> None:
    """Stage every checked rule's `pieces` pieces, round after round."""
    for rule in range(len(checked_rules())):
        for piece in range(pieces):
            stage_found_piece(
                lake, context, DAY, rule=rule, piece=piece, pieces=pieces, slice_bytes=SLICE_BYTES
            )


def found_alone(lake: str, context: ProductContext) -> bytes:
    """Return the bytes of `found.parquet` staged by the found step alone (then removed)."""
    staged = stage_found(lake, context, DAY, slice_bytes=SLICE_BYTES)
    assert staged is not None and staged.from_pieces == 0
    path = product_shard_dir(lake, "dpo", DAY) / FOUND_FILE
    data = path.read_bytes()
    path.unlink()
    return data


@pytest.mark.parametrize("pieces", [2, 3])
def test_found_in_pieces_is_the_day_found_and_the_products_the_day(
    tmp_path: Path, context: ProductContext, pieces: int
) -> None:
    lake = str(tmp_path / "lake")
    write_lake(lake)
    files = feed_files_of_day(lake, "dpo", DAY)
    slices = found_slices(files, SLICE_BYTES)
    assert len(slices) > 3 and len({str(s.path) for s in slices}) == 2
    found = day_found(files, DAY, "dpo")
    # the card inside the IBAN is no candidate of the day: the day's IBAN replaced it
    assert found == {"iban": [IBAN], "payment_card": [CARD]}
    expected_found = found_alone(lake, context)
    refresh = refresh_day(lake, context, DAY)
    assert refresh.path is not None
    expected = refresh.path.read_bytes()
    refresh.path.unlink()

    stage_rounds(lake, context, pieces)
    staging = product_shard_dir(lake, "dpo", DAY)
    covered = [
        FoundPiece.read(pq.read_schema(found_piece_file(staging, rule, k).path).metadata)
        for rule in range(2)
        for k in range(pieces)
    ]
    assert [(c.rule, c.piece) for c in covered if c] == [
        (rule, k) for rule in ("iban", "payment_card") for k in range(pieces)
    ]
    assert covered[0] is not None and covered[pieces - 1] is not None
    assert (covered[0].first, covered[pieces - 1].end) == (0, len(slices))
    # slices of one row: the IBAN (revisions-2) in the first piece, its glued copy
    # (escalations-4, after the 14 revisions rows) in the last
    assert covered[0].end > 2 and covered[pieces - 1].first <= 14 + 4
    assert slices[2].path.parent.name == "revision_pairs"
    assert slices[14 + 4].path.parent.name == "preference_pairs"
    staged = stage_found(lake, context, DAY, pieces, slice_bytes=SLICE_BYTES)
    assert staged is not None and staged.from_pieces == 2
    assert staged.counts == {"iban": 1, "payment_card": 1}
    assert (staging / FOUND_FILE).read_bytes() == expected_found

    for k in range(pieces):
        write_product_shard(lake, context, DAY, shard=k, shards=pieces)
    day = merge_or_compute(lake, context, DAY, pieces)
    assert (day.merged, day.not_merged) == (pieces, None)
    assert day.refresh.path is not None and day.refresh.path.read_bytes() == expected
    assert not staging.exists()
    products = pl.read_parquet(day.refresh.path.path)
    prompt = products.filter(pl.col("id") == "escalations-4")["prompt"][0][0]["content"]
    assert prompt.endswith("ref x[REDACTED_IBAN]")


def test_pieces_collecting_cards_with_their_own_ibans_are_not_the_day(
    tmp_path: Path, context: ProductContext
) -> None:
    """The broken variant: each piece's cards with the IBANs of its own rows alone."""
    lake = str(tmp_path / "lake")
    write_lake(lake)
    files = feed_files_of_day(lake, "dpo", DAY)
    by_file = [
        found_texts(files, DAY, "dpo", [s for s in found_slices(files) if s.path == path])
        for *_, path in files
    ]
    own = [scrub_found(texts, "dpo")["payment_card"] for texts in by_file]
    assert own == [[CARD], [CARD_IN_IBAN]]
    assert day_found(files, DAY, "dpo")["payment_card"] == [CARD]


def test_missing_or_stale_pieces_are_collected_by_the_steps_after_them(
    tmp_path: Path, context: ProductContext
) -> None:
    lake = str(tmp_path / "lake")
    write_lake(lake)
    expected_found = found_alone(lake, context)
    staging = product_shard_dir(lake, "dpo", DAY)
    target = staging / FOUND_FILE

    # a missing card piece: the found step collects the cards itself, with the staged IBANs
    stage_rounds(lake, context, 2)
    found_piece_file(staging, 1, 0).unlink()
    staged = stage_found(lake, context, DAY, 2, slice_bytes=SLICE_BYTES)
    assert staged is not None and staged.from_pieces == 1
    assert target.read_bytes() == expected_found

    # a missing IBAN piece: a card piece collects the day's IBANs itself
    found_piece_file(staging, 0, 1).unlink()
    stage_found_piece(lake, context, DAY, rule=1, piece=1, pieces=2, slice_bytes=SLICE_BYTES)
    stage_found_piece(lake, context, DAY, rule=1, piece=0, pieces=2, slice_bytes=SLICE_BYTES)
    staged = stage_found(lake, context, DAY, 2, slice_bytes=SLICE_BYTES)
    assert staged is not None and staged.from_pieces == 1
    assert target.read_bytes() == expected_found

    # pieces of another count or slice size cover other slices: not used
    stage_rounds(lake, context, 2)
    staged = stage_found(lake, context, DAY, 3, slice_bytes=SLICE_BYTES)
    assert staged is not None and staged.from_pieces == 0
    staged = stage_found(lake, context, DAY, 2)
    assert staged is not None and staged.from_pieces == 0
    assert target.read_bytes() == expected_found

    # a feed partition rewritten after the pieces ran: they are stale
    stage_rounds(lake, context, 2)
    path = partition_path(lake, "escalations", "preference_pairs", DAY)
    frame = pl.read_parquet(path.path).head(3)
    pq.write_table(frame.to_arrow(), path.path, row_group_size=3)
    staged = stage_found(lake, context, DAY, 2, slice_bytes=SLICE_BYTES)
    assert staged is not None and staged.from_pieces == 0
    assert staged.counts == {"iban": 1, "payment_card": 1}
    assert target.read_bytes() != expected_found
    assert target.read_bytes() == found_alone(lake, context)

    # a fresh product file: nothing is staged
    refresh_day(lake, context, DAY)
    assert stage_found_piece(lake, context, DAY, rule=0, piece=0, pieces=2) is None
    assert stage_found(lake, context, DAY, 2) is None


def test_found_pieces_as_assets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two rounds of two pieces, the found step, two shards and the merge: the day's file."""
    settings = isolate(tmp_path, monkeypatch)
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
    assert [a.key.to_user_string() for a in assets[:5]] == [
        "curation/dpo_products_found_0_0",
        "curation/dpo_products_found_0_1",
        "curation/dpo_products_found_1_0",
        "curation/dpo_products_found_1_1",
        "curation/dpo_products_found",
    ]
    card_piece = assets[2].asset_deps[found_piece_key("dpo", 1, 0)]
    assert {found_piece_key("dpo", 0, 0), found_piece_key("dpo", 0, 1)} <= card_piece
    found = assets[4].asset_deps[found_key("dpo")]
    assert {found_piece_key("dpo", 1, 0), found_piece_key("dpo", 1, 1)} <= found
    result = dg.materialize(assets, partition_key=DAY, resources=resources)
    assert result.success and path.read_bytes() == expected
    node = "curation__dpo_products_found"
    metadata = result.asset_materializations_for_node(node)[0].metadata
    assert metadata["candidates"].value == {"iban": 1, "payment_card": 1}
    assert metadata["rules_from_pieces"].value == 2
    piece = result.asset_materializations_for_node(f"{node}_1_1")[0].metadata
    assert (piece["piece"].value, piece["staged"].value) == ("2 of 2", True)
    assert not product_shard_dir(settings.lake_root, "dpo", DAY).exists()
