"""A scan finding withholds its row, records it without the value, and the rest is published."""

import json
from dataclasses import replace

import polars as pl

from distill_assets.defs.release.build import build_release
from distill_assets.defs.release.checks import withheld_limit, withheld_over_threshold
from distill_assets.defs.release.withhold import (
    find_withheld,
    read_withheld,
    record_withheld,
    withheld_lines,
    withhold_inputs,
)
from distill_assets.lib.lake import global_path
from tests.unit.curation.feeds import feed_row
from tests.unit.release.test_build import curated, inputs, no_previous, sft_rows

# space-separated SSNs are left by the scrubber (dashed only) and found by the scan
LEAK = "my ssn is 219 09 9999"


def leaky_inputs():
    rows = [*sft_rows(30), feed_row("sft", "leak", LEAK, source="traces", group="taskx")]
    base = inputs()
    return replace(base, curated={**base.curated, "sft": curated("sft", rows)})


def test_a_finding_withholds_its_row_and_the_rest_is_published(tmp_path):
    lake = str(tmp_path / "lake")
    release_inputs = leaky_inputs()
    row_id = "leak"
    withheld = find_withheld(lake, release_inputs.curated)
    # the sft row's prompt and completion both hold the question
    assert withheld.rows() == [
        ("sft", "2026-11-19", row_id, "completion", "us_ssn"),
        ("sft", "2026-11-19", row_id, "prompt", "us_ssn"),
    ]
    assert read_withheld(lake).rows() == withheld.rows()

    out = tmp_path / "release"
    manifest = build_release(withhold_inputs(release_inputs, withheld), out, no_previous)
    manifest = record_withheld(out, manifest, withheld, {})
    published = pl.concat(pl.read_parquet(p) for p in (out / "data" / "sft").rglob("*.parquet"))
    assert published.height == 30
    assert row_id not in published["id"].to_list()
    stored = json.loads((out / "release.json").read_text())
    assert stored["configs"]["sft"]["withheld"] == [
        {"id": row_id, "column": "completion", "kind": "us_ssn"},
        {"id": row_id, "column": "prompt", "kind": "us_ssn"},
    ]
    card = (out / "README.md").read_text()
    assert f"| `sft` | `{row_id}` | `prompt` | us_ssn |" in card
    everything = card + (out / "release.json").read_text()
    everything += global_path(lake, "release", "withheld").read_bytes().decode("latin-1")
    assert "219 09" not in everything
    assert withheld_lines(withheld) == [
        f"withheld sft row {row_id} column completion: us_ssn",
        f"withheld sft row {row_id} column prompt: us_ssn",
    ]


def test_a_part_scanned_before_is_not_read_again(tmp_path):
    lake = str(tmp_path / "lake")
    release_inputs = leaky_inputs()
    parts = release_inputs.curated["sft"]
    fingerprinted = {"sft": [replace(p, fingerprint="fp1") for p in parts]}
    first = find_withheld(lake, fingerprinted)

    def unreadable(_columns):
        raise AssertionError("read again")

    again = {"sft": [replace(p, fingerprint="fp1", read=unreadable) for p in parts]}
    assert find_withheld(lake, again).rows() == first.rows()


def withheld_frame(counts: dict[str, int]) -> pl.DataFrame:
    """`n` withheld rows per config, each with two findings (one row counts once)."""
    rows = [
        (config, "2026-11-19", f"{config}{i}", column, "phone")
        for config, n in counts.items()
        for i in range(n)
        for column in ("prompt", "metadata")
    ]
    return pl.DataFrame(rows, schema=["config", "partition", "id", "column", "kind"], orient="row")


def test_the_withheld_threshold_is_a_share_of_the_config_with_a_floor():
    assert [withheld_limit(n) for n in (0, 200_000, 200_001, 1_000_000)] == [20, 20, 21, 100]
    withheld = withheld_frame({"sft": 21, "rlds": 100, "dpo": 101})
    published = {"sft": 100, "rlds": 999_900, "dpo": 999_899}
    assert withheld_over_threshold(withheld, published) == {
        "dpo": {"withheld_rows": 101, "rows": 1_000_000, "threshold": 100},
        "sft": {"withheld_rows": 21, "rows": 121, "threshold": 20},
    }
