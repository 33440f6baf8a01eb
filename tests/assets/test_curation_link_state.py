"""Nights decided from the link state (`defs.curation.links`) through the real `curate` asset: only
the rows a change touched are decided again, and the lake — curated files, removed rows and the
link state itself — is byte-identical to a from-scratch run of the same days and exclusions."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from distill_assets.defs.curation import decide as decide_module
from distill_assets.defs.curation import links
from distill_assets.lib.lake import global_path, write_parquet_atomic
from distill_assets.lib.settings import Settings
from tests.assets.test_curation_incremental import (
    DAYS,
    SELECTION,
    curation_metadata,
    land,
    published_bytes,
    use_data_dir,
)
from tests.conftest import materialize
from tests.unit.curation.feeds import feed_frame, feed_row, write_feed
from tests.unit.curation.texts import words

LONE_DAY = "2026-11-22"


def exclude(settings: Settings, ids: list[str]) -> None:
    """List rows by id as a Witness rejection would (`telemetry/witness_exclusions`)."""
    frame = pl.DataFrame(
        {"source": ["traces"] * len(ids), "subject": ids, "reason": ["witness_rejected"] * len(ids)}
    )
    write_parquet_atomic(frame, global_path(settings.lake_root, "telemetry", "witness_exclusions"))


def land_alone(settings: Settings) -> None:
    """Land a day of one sft row sharing no words with any other day."""
    row = feed_row("sft", "lone", " ".join(words("lone", 30)), source="traces", group="lone")
    write_feed(settings.lake_root, "traces", "sft_steps", LONE_DAY, feed_frame("sft", [row]))


def decided(result, config: str) -> dict[str, int]:
    return dict(curation_metadata(result, config, "decisions"))


@pytest.fixture
def lsh_semantic_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """`sft` keeps the link state (only `rlds` does in the code) and semantic search uses LSH
    above 4 near survivors, as it does above 10,000 in the rules."""
    monkeypatch.setattr(links, "STATE_CONFIGS", ("sft", *links.STATE_CONFIGS))
    monkeypatch.setattr(decide_module, "SEMANTIC_EXACT_LIMIT", 4)


def test_nights_from_the_link_state_equal_a_from_scratch_run_byte_for_byte(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lsh_semantic_search
) -> None:
    nightly = use_data_dir(monkeypatch, tmp_path / "nightly")
    nights = []
    for index in range(len(DAYS)):
        land(nightly, index)
        nights.append(decided(materialize(SELECTION), "sft"))
    # the day 2 representative of topic 0 leaves by a Witness rejection
    exclude(nightly, ["s1-0"])
    nights.append(decided(materialize(SELECTION), "sft"))
    # nothing changed: nothing is decided
    nights.append(decided(materialize(SELECTION), "sft"))
    # a day of one row sharing no words with history
    land_alone(nightly)
    nights.append(decided(materialize(SELECTION), "sft"))
    # a day's 10 rows are in 7 components: 6 topic rows, and 4 "plain question" rows whose
    # hashed embeddings share semantic LSH keys; every later day adds a row to each of them
    assert nights == [
        {"rows_decided": 10, "rows_total": 10, "components_touched": 0, "full_recompute": 1},
        {"rows_decided": 20, "rows_total": 20, "components_touched": 7, "full_recompute": 0},
        {"rows_decided": 30, "rows_total": 30, "components_touched": 7, "full_recompute": 0},
        # s1-0's component (s0-0, s1-0, s2-0) without s1-0
        {"rows_decided": 2, "rows_total": 29, "components_touched": 1, "full_recompute": 0},
        {"rows_decided": 0, "rows_total": 29, "components_touched": 0, "full_recompute": 0},
        # the lone row shares a semantic LSH key with one of the 12 "plain question" rows (16-bit
        # bands are coarse: see docs/curation-and-release.md#incremental), so it joins their
        # component and all 13 are decided
        {"rows_decided": 13, "rows_total": 30, "components_touched": 1, "full_recompute": 0},
    ]
    incremental = published_bytes(nightly)
    assert "curation/sft_links/2026-11-19.parquet" in incremental
    assert "curation/sft_links.parquet" in incremental

    scratch = use_data_dir(monkeypatch, tmp_path / "scratch")
    for index in range(len(DAYS)):
        land(scratch, index)
    exclude(scratch, ["s1-0"])
    land_alone(scratch)
    result = materialize(SELECTION)
    assert decided(result, "sft")["full_recompute"] == 1
    assert published_bytes(scratch) == incremental


def test_another_state_version_or_a_lost_link_file_decides_everything_again(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lsh_semantic_search
) -> None:
    nightly = use_data_dir(monkeypatch, tmp_path / "nightly")
    land(nightly, 0)
    materialize(SELECTION)
    land(nightly, 1)
    monkeypatch.setattr(links, "STATE_VERSION", "test")
    assert decided(materialize(SELECTION), "sft")["full_recompute"] == 1
    land(nightly, 2)
    (Path(nightly.lake_root) / "curation" / "sft_links" / f"{DAYS[0]}.parquet").unlink()
    assert decided(materialize(SELECTION), "sft")["full_recompute"] == 1
    assert decided(materialize(SELECTION), "sft") == {
        "rows_decided": 0,
        "rows_total": 30,
        "components_touched": 0,
        "full_recompute": 0,
    }


def test_a_config_with_semantic_dedup_decides_every_row_and_keeps_no_state(
    distill_env: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nightly = use_data_dir(monkeypatch, tmp_path / "nightly")
    land(nightly, 0)
    materialize(SELECTION)
    land(nightly, 1)
    assert decided(materialize(SELECTION), "sft") == {
        "rows_decided": 20,
        "rows_total": 20,
        "components_touched": 0,
        "full_recompute": 1,
    }
    assert not (Path(nightly.lake_root) / "curation" / "sft_links").exists()
    assert not (Path(nightly.lake_root) / "curation" / "sft_links.parquet").exists()
