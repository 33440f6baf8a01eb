"""`refresh_review_files`: the seed's review folders, rewritten where something changed."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import polars as pl
import pytest

from distill_assets.defs.escalations import review_files
from distill_assets.defs.escalations.review import DECISION_SCHEMA, PENDING_COLUMNS
from distill_assets.defs.escalations.review_files import COUNTS, refresh_review_files
from distill_assets.lib.lake import partition_path
from tests.unit.escalations.frames import example_frame

DAY = 86400.0
NOV_20 = 1795132800.0  # 2026-11-20 00:00 UTC
TRICKY = 'Ça "marche" \\ 😀\n\ttab \x7f'  # non-ASCII, quotes, backslash, escapes, DEL


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, str]:
    return tmp_path / "distilled", str(tmp_path / "lake")


def write_partition(lake: str, day: str, *ids: str) -> pl.DataFrame:
    records = ({"id": i, "query": f"q {i} {TRICKY}", "claude_response": f"a {i}"} for i in ids)
    frame = example_frame(*records)
    path = Path(str(partition_path(lake, "escalations", "distillation_examples", day)))
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)
    return frame


def decisions(*rows: tuple[str, str, float]) -> pl.DataFrame:
    return pl.DataFrame(
        [(i, d, f"notes {i}", "ann", ts, None, None) for i, d, ts in rows],
        schema=DECISION_SCHEMA,
        orient="row",
    )


def old_pending(examples: pl.DataFrame, decided: pl.DataFrame) -> bytes:
    """What the writer before the incremental refresh wrote for a partition (`to_dicts`)."""
    pending = examples.join(decided, on="id", how="anti").filter(pl.col("human_reviewed") == 0)
    rows = pending.sort("id").select(PENDING_COLUMNS).to_dicts()
    return (json.dumps(rows, indent=2, sort_keys=True) + "\n").encode()


def counts(written: review_files.Written) -> dict[str, int]:
    return {"pending": written.pending, "reviewed": written.reviewed, **written.counts}


def expect(pending: int, reviewed: int, **nonzero: int) -> dict[str, int]:
    return {"pending": pending, "reviewed": reviewed, **dict.fromkeys(COUNTS, 0), **nonzero}


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the two review folders: its bytes and modification time."""
    return {
        f"{p.parent.name}/{p.name}": (p.read_bytes(), p.stat().st_mtime_ns)
        for folder in ("pending_review", "approved")
        for p in sorted((root / folder).iterdir())
    }


DECIDED = decisions(("b", "approve", NOV_20 + 60), ("d", "reject", NOV_20 + DAY))


@pytest.fixture
def refreshed(folders: tuple[Path, str]) -> tuple[Path, str, pl.DataFrame, pl.DataFrame]:
    root, lake = folders
    nov19 = write_partition(lake, "2026-11-19", "c", "a", "b", "f")
    nov20 = write_partition(lake, "2026-11-20", "e", "d")
    stale = root / "pending_review" / "batch_20261101.json"
    stale.parent.mkdir(parents=True)
    stale.write_text("[]")

    written = refresh_review_files(root, lake, DECIDED)

    assert counts(written) == expect(
        4,
        2,
        pending_batches_written=2,
        pending_batches_deleted=1,
        reviewed_files_written=2,
        partitions_read=2,
    )
    return root, lake, nov19, nov20


def test_first_refresh_writes_the_seed_files_as_the_previous_writer(
    refreshed: tuple[Path, str, pl.DataFrame, pl.DataFrame],
) -> None:
    root, _, nov19, nov20 = refreshed

    pending = root / "pending_review"
    names = sorted(p.name for p in pending.iterdir())
    assert names == ["batch_20261119.json", "batch_20261120.json"]
    assert (pending / "batch_20261119.json").read_bytes() == old_pending(nov19, DECIDED)
    assert (pending / "batch_20261120.json").read_bytes() == old_pending(nov20, DECIDED)
    ids = [r["id"] for r in json.loads((pending / "batch_20261119.json").read_text())]
    assert ids == ["a", "c", "f"]
    reviewed = {
        p.name: [json.loads(line) for line in p.read_text().splitlines()]
        for p in (root / "approved").iterdir()
    }
    assert sorted(reviewed) == ["reviewed_20261120.jsonl", "reviewed_20261121.jsonl"]
    [line] = reviewed["reviewed_20261120.jsonl"]
    assert line == {
        "claude_response": "a b",
        "decision": "approve",
        "id": "b",
        "notes": "notes b",
        "query": f"q b {TRICKY}",
        "reviewer": "ann",
        "source_ref": nov19.filter(pl.col("id") == "b").item(0, "source_ref"),
        "ts": NOV_20 + 60,
    }
    raw = (root / "approved" / "reviewed_20261120.jsonl").read_bytes()
    assert raw == (json.dumps(line, sort_keys=True) + "\n").encode()
    assert [x["id"] for x in reviewed["reviewed_20261121.jsonl"]] == ["d"]


def test_a_second_refresh_without_change_writes_nothing(
    refreshed: tuple[Path, str, pl.DataFrame, pl.DataFrame],
) -> None:
    root, lake, _, _ = refreshed
    before = files(root)

    written = refresh_review_files(root, lake, DECIDED)

    assert counts(written) == expect(4, 2, pending_batches_kept=2, reviewed_files_kept=2)
    assert files(root) == before


def test_a_new_decision_rewrites_only_the_batch_of_its_partition(
    refreshed: tuple[Path, str, pl.DataFrame, pl.DataFrame],
) -> None:
    root, lake, nov19, _ = refreshed
    before = files(root)
    later = pl.concat([DECIDED, decisions(("a", "approve", NOV_20 + 2 * DAY))])

    written = refresh_review_files(root, lake, later)

    assert counts(written) == expect(
        3,
        3,
        pending_batches_written=1,
        pending_batches_kept=1,
        reviewed_files_written=1,
        reviewed_files_kept=2,
        partitions_id_scanned=2,
    )
    after = files(root)
    batch = "pending_review/batch_20261119.json"
    assert after[batch][0] == old_pending(nov19, later)
    assert [r["id"] for r in json.loads(after[batch][0])] == ["c", "f"]
    assert {k: v for k, v in after.items() if k != batch and k in before} == {
        k: v for k, v in before.items() if k != batch
    }
    assert sorted(set(after) - set(before)) == ["approved/reviewed_20261122.jsonl"]


def test_a_batch_with_nothing_left_to_review_is_deleted(
    refreshed: tuple[Path, str, pl.DataFrame, pl.DataFrame],
) -> None:
    root, lake, _, _ = refreshed
    later = pl.concat([DECIDED, decisions(("e", "reject", NOV_20 + 60))])

    written = refresh_review_files(root, lake, later)

    assert counts(written) == expect(
        3,
        3,
        pending_batches_kept=1,
        pending_batches_deleted=1,
        reviewed_files_written=1,
        reviewed_files_kept=1,
        partitions_id_scanned=2,
    )
    assert sorted(p.name for p in (root / "pending_review").iterdir()) == ["batch_20261119.json"]


def test_a_new_day_writes_only_its_batch(
    refreshed: tuple[Path, str, pl.DataFrame, pl.DataFrame],
) -> None:
    root, lake, _, _ = refreshed
    before = files(root)
    nov21 = write_partition(lake, "2026-11-21", "h", "g")

    written = refresh_review_files(root, lake, DECIDED)

    assert counts(written) == expect(
        6,
        2,
        pending_batches_written=1,
        pending_batches_kept=2,
        reviewed_files_kept=2,
        partitions_read=1,
    )
    after = files(root)
    assert after["pending_review/batch_20261121.json"][0] == old_pending(nov21, DECIDED)
    assert {k: after[k] for k in before} == before


def test_a_removed_or_changed_partition_updates_its_files(
    refreshed: tuple[Path, str, pl.DataFrame, pl.DataFrame],
) -> None:
    root, lake, _, _ = refreshed
    Path(str(partition_path(lake, "escalations", "distillation_examples", "2026-11-20"))).unlink()
    nov19 = write_partition(lake, "2026-11-19", "c", "a", "b", "f", "k")

    written = refresh_review_files(root, lake, DECIDED)

    assert counts(written) == expect(
        4,
        1,
        pending_batches_written=1,
        pending_batches_deleted=1,
        reviewed_files_kept=1,
        reviewed_files_deleted=1,
        partitions_read=1,
    )
    assert sorted(files(root)) == [
        "approved/reviewed_20261120.jsonl",
        "pending_review/batch_20261119.json",
    ]
    batch = root / "pending_review" / "batch_20261119.json"
    assert batch.read_bytes() == old_pending(nov19, DECIDED)


def test_a_deleted_or_hand_edited_file_is_written_again(
    refreshed: tuple[Path, str, pl.DataFrame, pl.DataFrame],
) -> None:
    root, lake, _, _ = refreshed
    before = {name: content for name, (content, _) in files(root).items()}
    (root / "pending_review" / "batch_20261119.json").unlink()
    with (root / "pending_review" / "batch_20261120.json").open("a") as edited:
        edited.write("reviewed by hand\n")
    (root / "approved" / "reviewed_20261121.jsonl").write_text("")

    written = refresh_review_files(root, lake, DECIDED)

    assert counts(written) == expect(
        4, 2, pending_batches_written=2, reviewed_files_written=1, reviewed_files_kept=1
    )
    assert {name: content for name, (content, _) in files(root).items()} == before


def test_after_a_crash_before_the_state_is_written_the_files_are_written_again(
    refreshed: tuple[Path, str, pl.DataFrame, pl.DataFrame],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root, lake, nov19, _ = refreshed
    later = pl.concat([DECIDED, decisions(("a", "approve", NOV_20 + 2 * DAY))])

    def crash(*_: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patched:
        patched.setattr(review_files, "_write_state", crash)
        with pytest.raises(OSError, match="disk full"):
            refresh_review_files(root, lake, later)

    written = refresh_review_files(root, lake, later)

    # the state still described the files before the crash: the changed ones are written again
    assert counts(written) == expect(
        3,
        3,
        pending_batches_written=1,
        pending_batches_kept=1,
        reviewed_files_written=1,
        reviewed_files_kept=2,
        partitions_id_scanned=2,
    )
    batch = root / "pending_review" / "batch_20261119.json"
    assert batch.read_bytes() == old_pending(nov19, later)


def test_a_partition_read_in_many_slices_gives_the_same_batch(
    folders: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, lake = folders
    ids = [f"x{n:02d}" for n in (7, 3, 11, 0, 5, 9, 1, 10, 2, 8, 4, 6)]
    examples = write_partition(lake, "2026-11-19", *ids)
    monkeypatch.setattr(review_files, "SLICE_BYTES", 1)  # one example per slice
    monkeypatch.setattr(review_files, "ENCODE_ROWS", 5)  # read and encoded 5 rows at a time
    decided = decisions(("x05", "approve", NOV_20))

    written = refresh_review_files(root, lake, decided)

    assert counts(written) == expect(
        11, 1, pending_batches_written=1, reviewed_files_written=1, partitions_read=1
    )
    batch = root / "pending_review" / "batch_20261119.json"
    assert batch.read_bytes() == old_pending(examples, decided)
    assert [p.name for p in Path(tempfile.gettempdir()).glob("distill-*-review-spill-*")] == []
