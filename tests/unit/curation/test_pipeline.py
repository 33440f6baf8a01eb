import polars as pl
import pytest

from distill_assets.defs.curation.pipeline import (
    curate,
    curated_schema,
    feed_partitions,
    scan_exclusions,
    scan_feeds,
)
from distill_assets.lib.lake import partition_path, write_parquet_atomic
from distill_assets.rules.curation import REDACTIONS
from tests.unit.curation.feeds import feed_frame, feed_row, write_feed


def test_feeds_of_all_tables_and_partitions_are_read_and_missing_tables_give_no_rows(tmp_path):
    lake = str(tmp_path / "lake")
    write_feed(
        lake,
        "traces",
        "sft_steps",
        "2026-11-19",
        feed_frame(
            "sft",
            [
                feed_row("sft", "a", "one", source="traces", group="t"),
            ],
        ),
    )
    write_feed(
        lake,
        "traces",
        "sft_steps",
        "2026-11-20",
        feed_frame(
            "sft",
            [
                feed_row("sft", "b", "two", source="traces", group="t"),
            ],
        ),
    )
    frame = scan_feeds(lake, "sft").collect()
    assert frame.select("id", "partition").rows() == [("a", "2026-11-19"), ("b", "2026-11-20")]
    assert feed_partitions(lake, "sft") == {
        "traces/sft_steps": ["2026-11-19", "2026-11-20"],
        "telemetry/dialogues": [],
    }
    empty = curate(scan_feeds(lake, "instruction"), "instruction")
    assert empty.curated.schema == curated_schema("instruction")
    assert (empty.curated.height, empty.duplicates.height, empty.rows_in) == (0, 0, 0)


def test_extra_feed_columns_are_ignored_and_a_missing_contract_column_is_named(tmp_path):
    lake = str(tmp_path / "lake")
    frame = feed_frame("dpo", [feed_row("dpo", "a", "p", source="revisions", group="g")])
    write_feed(
        lake,
        "revisions",
        "revision_pairs",
        "2026-11-19",
        frame.with_columns(pl.lit(1).alias("extra")),
    )
    assert scan_feeds(lake, "dpo").collect().columns == [*frame.columns, "subject", "partition"]
    write_parquet_atomic(
        frame.drop("split_group"), partition_path(lake, "revisions", "revision_pairs", "2026-11-20")
    )
    with pytest.raises(
        ValueError, match=r"revisions/revision_pairs of config 'dpo' lacks \['split_group'\]"
    ):
        scan_feeds(lake, "dpo")


def test_curate_counts_redactions_per_kind_and_rows_touched():
    rows = [
        feed_row("instruction", "a", "mail a@b.io", source="escalations", group="s1"),
        feed_row(
            "instruction",
            "b",
            "clean",
            source="escalations",
            group="s2",
            metadata={"tel": "555-123-4567"},
        ),
        feed_row("instruction", "c", "nothing here", source="escalations", group="s3"),
    ]
    frame = (
        feed_frame("instruction", rows).lazy().with_columns(pl.lit("2026-11-19").alias("partition"))
    )
    result = curate(frame, "instruction")
    assert result.redactions == {
        **{r.kind: 0 for r in REDACTIONS},
        "email": 2,
        "phone": 1,
    }
    assert result.redacted_rows == 2
    by_id = {r["id"]: r for r in result.curated.iter_rows(named=True)}
    assert by_id["a"]["instruction"] == "mail [REDACTED_EMAIL]"
    assert by_id["a"]["output"] == "output for mail [REDACTED_EMAIL]"
    assert by_id["b"]["metadata"] == '{"tel": "[REDACTED_PHONE]"}'


def test_rows_of_excluded_subjects_leave_with_the_listed_reason(tmp_path):
    lake = str(tmp_path / "lake")
    rows = [
        feed_row("sft", "a", "one", source="telemetry", group="g"),
        feed_row("sft", "b", "two", source="telemetry", group="g"),
        feed_row("sft", "c", "three", source="traces", group="g"),
        feed_row("sft", "d", "four", source="telemetry", group="g"),
    ]
    frame = feed_frame("sft", rows).with_columns(
        pl.Series("subject", ["player-1", "player-2", "player-1", None])
    )
    write_feed(lake, "telemetry", "dialogues", "2026-11-19", frame)
    exclusions = pl.LazyFrame(
        {
            "source": ["telemetry", "telemetry", "telemetry", "escalations"],
            "subject": ["player-1", "player-1", None, "player-2"],
            "reason": ["deletion_request", "consent_withdrawn", "deletion_request", "rejected"],
        }
    )
    result = curate(scan_feeds(lake, "sft"), "sft", exclusions)
    # the traces row shares the subject text but not the source; a null subject never matches
    assert sorted(result.curated["id"].to_list()) == ["b", "c", "d"]
    assert result.excluded == {"consent_withdrawn": 1}
    assert result.drop_reasons == {
        "consent_withdrawn": 1,
        "exact_duplicate": 0,
        "near_duplicate": 0,
        "semantic_duplicate": 0,
        "contaminated": 0,
        "below_threshold": 0,
    }
    assert result.rows_in == 4


def test_a_row_listed_by_its_id_leaves_alone(tmp_path):
    lake = str(tmp_path / "lake")
    rows = [
        feed_row("sft", "a", "one", source="telemetry", group="g"),
        feed_row("sft", "b", "two", source="telemetry", group="g"),
        feed_row("sft", "a2", "three", source="traces", group="g"),
    ]
    frame = feed_frame("sft", rows).with_columns(
        pl.Series("subject", ["sft:player-1", "sft:player-1", None])
    )
    write_feed(lake, "telemetry", "dialogues", "2026-11-19", frame)
    # a Witness rejection names one row by its id; the player's other row stays
    exclusions = pl.LazyFrame(
        {
            "source": ["telemetry", "telemetry"],
            "subject": ["a", "a2"],
            "reason": ["rejected_by_witness", "rejected_by_witness"],
        }
    )
    result = curate(scan_feeds(lake, "sft"), "sft", exclusions)
    assert sorted(result.curated["id"].to_list()) == ["a2", "b"]
    assert result.excluded == {"rejected_by_witness": 1}


def test_feed_tables_without_a_subject_column_have_no_subject(tmp_path):
    lake = str(tmp_path / "lake")
    write_feed(
        lake,
        "traces",
        "sft_steps",
        "2026-11-19",
        feed_frame("sft", [feed_row("sft", "a", "one", source="traces", group="g")]),
    )
    assert scan_feeds(lake, "sft").collect()["subject"].to_list() == [None]
    assert scan_exclusions(lake).collect().height == 0
