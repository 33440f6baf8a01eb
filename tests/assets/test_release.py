"""Release assets materialized in-process: candidate, blocking checks, publish, versions."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from distill_assets.contracts.published import CONFIG_FEEDS
from distill_assets.contracts.release import ReleaseManifest
from distill_assets.defs.curation.curated_table import read_curated
from distill_assets.defs.release import checks as release_checks
from distill_assets.defs.release import scan
from distill_assets.defs.release.candidate import candidate_dir, read_manifest
from distill_assets.defs.release.layout import published_arrow_schema, write_data_file
from distill_assets.lib.lake import global_path
from distill_assets.lib.settings import Settings
from distill_assets.rules.curation import WITHHELD_MAX_ROWS
from tests.conftest import materialize, without_daily
from tests.unit.curation.feeds import feed_frame, feed_row, write_feed

SELECTION = "group:curation or group:release"
DAY1, DAY2 = "2026-11-19", "2026-11-20"
CHECKS = {
    "files_match_manifest",
    "groups_within_one_split",
    "has_rows",
    "ids_unique",
    "keeps_previous_configs",
    "matches_contract",
    "independent_pii_scan",
    "no_unscrubbed_secrets",
}


def land_feeds(settings: Settings, day: str, n: int, prefix: str = "") -> None:
    lake = settings.lake_root
    rows = {
        config: [
            feed_row(
                config,
                f"{prefix}{config}{i}",
                f"{prefix} {config} example {i} from dev{i}@corp.com",
                source=source,
                group=f"{prefix}g{i}",
                score=(i % 10) / 10,
            )
            for i in range(n)
        ]
        for config, source in (
            ("sft", "traces"),
            ("dpo", "revisions"),
            ("instruction", "escalations"),
        )
    }
    write_feed(lake, "traces", "sft_steps", day, feed_frame("sft", rows["sft"]))
    write_feed(lake, "revisions", "revision_pairs", day, feed_frame("dpo", rows["dpo"]))
    write_feed(
        lake,
        "escalations",
        "instruction_examples",
        day,
        feed_frame("instruction", rows["instruction"]),
    )


def repo(settings: Settings) -> Path:
    return Path(settings.hub_root) / settings.dataset_name


def files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def manifest_of(folder: Path) -> ReleaseManifest:
    return ReleaseManifest.model_validate_json((folder / "release.json").read_text())


def dataset_metadata(result: dg.ExecuteInProcessResult) -> dict[str, object]:
    (event,) = result.asset_materializations_for_node("release__dataset")
    return {k: v.value for k, v in event.metadata.items()}


def run_unchecked(selection: str) -> dg.ExecuteInProcessResult:
    from distill_assets.definitions import defs

    job = dg.define_asset_job("release_test_job", selection=without_daily(selection))
    definitions = dg.Definitions.merge(defs(), dg.Definitions(jobs=[job]))
    return definitions.resolve_job_def("release_test_job").execute_in_process(raise_on_error=False)


def test_release_publishes_a_checked_version_and_a_rerun_changes_nothing(
    distill_env: Settings,
) -> None:
    land_feeds(distill_env, DAY1, 25)
    result = materialize(SELECTION)
    assert {e.check_name: e.passed for e in result.get_asset_check_evaluations()} == dict.fromkeys(
        CHECKS, True
    )

    latest = repo(distill_env) / "latest"
    manifest = manifest_of(latest)
    version_dir = repo(distill_env) / "versions" / manifest.version
    assert [p.name for p in (repo(distill_env) / "versions").iterdir()] == [manifest.version]
    assert sorted(files(version_dir)) == [
        "README.md",
        "data/dpo/test/2026-11-19-00000.parquet",
        "data/dpo/train/2026-11-19-00000.parquet",
        "data/instruction/test/2026-11-19-00000.parquet",
        "data/instruction/train/2026-11-19-00000.parquet",
        "data/sft/test/2026-11-19-00000.parquet",
        "data/sft/train/2026-11-19-00000.parquet",
        "exports/instruction_20261119.jsonl",  # the escalation rows, a release extra
        "release.json",
    ]
    assert (
        files(latest)
        == files(version_dir)
        == files(Path(distill_env.lake_root) / "release" / "candidate")
    )
    assert manifest.version.startswith("v20261119-")
    written = {"escalations/instruction_examples", "revisions/revision_pairs", "traces/sft_steps"}
    assert manifest.created_from == {
        f"{source}/{table}": [DAY1] if f"{source}/{table}" in written else []
        for feeds in CONFIG_FEEDS.values()
        for source, table in feeds
    }
    expected_rows = {"train": 24, "test": 1}
    assert {c: manifest.split_rows(c) for c in manifest.configs} == {
        c: expected_rows for c in ("dpo", "instruction", "sft")
    }
    meta = dataset_metadata(result)
    assert meta["path"] == str(latest)
    assert meta["version"] == manifest.version
    assert meta["new_version"] is True
    assert f'ds = load_dataset("{latest}", "sft")' in meta["load_dataset"]
    assert meta["rows"] == 75
    card = (latest / "README.md").read_text()
    assert yaml.safe_load(card.split("---\n")[1])["configs"][2]["config_name"] == "sft"
    test_rows = pl.read_parquet(latest / "data/instruction/test/2026-11-19-00000.parquet")
    assert test_rows.select("id", "instruction").rows() == [
        ("instruction16", " instruction example 16 from [REDACTED_EMAIL]")
    ]

    before = files(repo(distill_env))
    again = materialize(SELECTION)
    assert dataset_metadata(again)["new_version"] is False
    assert dataset_metadata(again)["version"] == manifest.version
    assert files(repo(distill_env)) == before


def test_changed_input_makes_a_new_version_with_its_diff(distill_env: Settings) -> None:
    land_feeds(distill_env, DAY1, 25)
    materialize(SELECTION)
    first = manifest_of(repo(distill_env) / "latest")
    land_feeds(distill_env, DAY2, 10, prefix="new")
    materialize(SELECTION)
    second = manifest_of(repo(distill_env) / "latest")
    assert second.version != first.version
    assert second.version.startswith("v20261120-")
    assert second.previous_version == first.version
    assert sorted(p.name for p in (repo(distill_env) / "versions").iterdir()) == sorted(
        [first.version, second.version]
    )
    assert manifest_of(repo(distill_env) / "versions" / first.version) == first
    deltas = {c: {s: d.delta for s, d in v.items()} for c, v in second.changes.items()}
    added = {
        c: {s: second.split_rows(c)[s] - first.split_rows(c)[s] for s in ("train", "test")}
        for c in second.configs
    }
    assert deltas == added
    assert sum(d for v in deltas.values() for d in v.values()) == 30
    card = (repo(distill_env) / "latest" / "README.md").read_text()
    assert f"## Changes since `{first.version}`" in card
    train = second.changes["sft"]["train"]
    assert f"| `sft` | train | {train.previous} | {train.current} | +{train.delta} |" in card


def test_a_failing_blocking_check_stops_the_publish(distill_env: Settings) -> None:
    land_feeds(distill_env, DAY1, 25)
    materialize(SELECTION)
    published = files(repo(distill_env))
    # a feed room bug: the same id for two different rows
    write_feed(
        distill_env.lake_root,
        "revisions",
        "revision_pairs",
        DAY2,
        feed_frame(
            "dpo",
            [
                feed_row("dpo", "clash", "first prompt", source="revisions", group="x"),
                feed_row("dpo", "clash", "second prompt", source="revisions", group="x"),
            ],
        ),
    )
    result = run_unchecked(SELECTION)
    assert not result.success
    outcome = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert outcome["ids_unique"] is False
    failed = next(e for e in result.get_asset_check_evaluations() if e.check_name == "ids_unique")
    assert failed.metadata["failures"].value == {"dpo": {"repeated_ids": 1, "ids": ["clash"]}}
    assert result.asset_materializations_for_node("release__dataset") == []
    assert files(repo(distill_env)) == published


def test_a_release_that_drops_a_config_is_blocked_unless_allowed(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    land_feeds(distill_env, DAY1, 25)
    materialize(SELECTION)
    first = manifest_of(repo(distill_env) / "latest")
    assert set(first.configs) == {"dpo", "instruction", "sft"}
    published = files(repo(distill_env))
    # every dpo row is gone (its only feed stopped): the candidate has no `dpo`
    shutil.rmtree(Path(distill_env.lake_root) / "revisions" / "revision_pairs")
    result = run_unchecked(SELECTION)
    assert not result.success
    failed = next(
        e for e in result.get_asset_check_evaluations() if e.check_name == "keeps_previous_configs"
    )
    assert failed.passed is False
    assert failed.description == (
        f"config `dpo` had rows in {first.version} (train 24, test 1) and has none now; "
        "set DISTILL_ALLOW_DROPPED_CONFIGS=dpo to publish without it on purpose"
    )
    assert files(repo(distill_env)) == published

    monkeypatch.setenv("DISTILL_ALLOW_DROPPED_CONFIGS", "dpo")
    result = materialize(SELECTION)
    outcome = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert outcome["keeps_previous_configs"] is True
    assert set(manifest_of(repo(distill_env) / "latest").configs) == {"instruction", "sft"}


def land_ssn_leak(settings: Settings, day: str, *others: dict[str, object]) -> None:
    """Land an instruction row whose SSN (with spaces) only the independent scan catches."""
    # an SSN written with spaces is outside the scrubber's (dashed) pattern on purpose
    leak = feed_row("instruction", "leak", "my ssn is 219 09 9999", source="escalations", group="b")
    write_feed(
        settings.lake_root,
        "escalations",
        "instruction_examples",
        day,
        feed_frame("instruction", [*others, leak]),
    )


def blocked_by_the_independent_scan(result: dg.ExecuteInProcessResult) -> bool:
    """Return whether the run failed with only the independent PII scan failing of the two."""
    outcome = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    return (
        not result.success
        and outcome["independent_pii_scan"] is False
        and (outcome["no_unscrubbed_secrets"] is True)
    )


def test_a_scan_finding_withholds_its_row_and_the_rest_is_published(distill_env: Settings) -> None:
    land_ssn_leak(
        distill_env,
        DAY1,
        feed_row("instruction", "ok", "a plain question", source="escalations", group="a"),
    )
    result = run_unchecked(SELECTION)
    assert result.success
    outcome = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert outcome["independent_pii_scan"] is True
    latest = repo(distill_env) / "latest"
    published = pl.concat(
        pl.read_parquet(p) for p in (latest / "data/instruction").rglob("*.parquet")
    )
    assert published["id"].to_list() == ["ok"]
    withheld = manifest_of(latest).configs["instruction"].withheld
    assert [(w.id, w.column, w.kind) for w in withheld] == [
        ("leak", "instruction", "us_ssn"),
        ("leak", "output", "us_ssn"),
    ]
    card = (latest / "README.md").read_text()
    assert "| `instruction` | `leak` | `output` | us_ssn |" in card
    assert "219 09" not in card


def test_more_withheld_rows_than_the_threshold_block_the_release(distill_env: Settings) -> None:
    leaks = [
        feed_row(
            "instruction", f"leak{i:02d}", f"ssn 219 09 99{i:02d}", source="escalations", group="b"
        )
        for i in range(1, WITHHELD_MAX_ROWS + 2)
    ]
    write_feed(
        distill_env.lake_root,
        "escalations",
        "instruction_examples",
        DAY1,
        feed_frame(
            "instruction",
            [feed_row("instruction", "ok", "a question", source="escalations", group="a"), *leaks],
        ),
    )
    result = run_unchecked(SELECTION)
    assert blocked_by_the_independent_scan(result)
    failed = next(
        e for e in result.get_asset_check_evaluations() if e.check_name == "independent_pii_scan"
    )
    assert failed.metadata["failures"].value == {
        "instruction": {
            "withheld_rows": WITHHELD_MAX_ROWS + 1,
            "rows": WITHHELD_MAX_ROWS + 2,
            "threshold": WITHHELD_MAX_ROWS,
        }
    }
    assert result.asset_materializations_for_node("release__dataset") == []
    assert not repo(distill_env).exists()


def test_text_checks_read_only_files_they_did_not_pass_under_the_same_checks(
    distill_env: Settings, monkeypatch
) -> None:
    land_feeds(distill_env, DAY1, 25)
    first = materialize(SELECTION)
    listed = len(manifest_of(repo(distill_env) / "latest").files)

    def read_counts(result: dg.ExecuteInProcessResult) -> dict[str, tuple[int, int]]:
        return {
            e.check_name: (e.metadata["files_read"].value, e.metadata["files_passed_before"].value)
            for e in result.get_asset_check_evaluations()
            if "files_read" in e.metadata
        }

    text_checks = {"matches_contract", "no_unscrubbed_secrets", "independent_pii_scan"}
    assert read_counts(first) == dict.fromkeys(text_checks, (listed, 0))
    # the same candidate again: nothing to read
    assert read_counts(materialize(SELECTION)) == dict.fromkeys(text_checks, (0, listed))
    # another version of the checks (a pattern, a detector, a library): everything again
    monkeypatch.setattr(release_checks, "checks_version", lambda: "another-version")
    assert read_counts(materialize(SELECTION)) == dict.fromkeys(text_checks, (listed, 0))

    # a new day with a leak the scrubber misses and a clean row: the leak is withheld, the new
    # day's file is read (and passes), the old ones not
    land_ssn_leak(
        distill_env,
        DAY2,
        feed_row("instruction", "ok2", "another question", source="escalations", group="c"),
    )
    result = run_unchecked(SELECTION)
    assert result.success
    assert read_counts(result)["independent_pii_scan"] == (1, listed)
    assert len(manifest_of(repo(distill_env) / "latest").files) == listed + 1


def scan_check() -> dg.AssetCheckEvaluation:
    """Run the independent PII scan alone on the staged candidate; return its evaluation."""
    from distill_assets.definitions import defs

    job = dg.define_asset_job(
        "scan_check_job", selection=dg.AssetSelection.checks(release_checks.independent_pii_scan)
    )
    definitions = dg.Definitions.merge(defs(), dg.Definitions(jobs=[job]))
    result = definitions.resolve_job_def("scan_check_job").execute_in_process(raise_on_error=False)
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation


def test_the_scan_check_finds_the_same_with_and_without_the_candidates_line_memory(
    distill_env: Settings, monkeypatch
) -> None:
    lake = distill_env.lake_root
    land_ssn_leak(
        distill_env,
        DAY1,
        feed_row("instruction", "ok", "served at 127.0.0.1", source="escalations", group="a"),
    )
    assert run_unchecked(SELECTION).success
    lines = global_path(lake, "release", "scanned_lines")
    passed = global_path(lake, "release", "checked_independent_pii_scan")
    read: list[str] = []

    def counted(candidates: pl.DataFrame) -> pl.DataFrame:
        read.extend(candidates.get_column("text"))
        return line_findings(candidates)

    line_findings = scan.line_findings
    monkeypatch.setattr(scan, "line_findings", counted)

    def evaluate(memory: bool) -> tuple[bool, dict[str, object], list[str]]:
        passed.unlink(missing_ok=True)
        saved = lines.read_bytes()
        if not memory:
            lines.unlink()
        read.clear()
        evaluation = scan_check()
        lines.write_bytes(saved)
        metadata = {k: v.value for k, v in evaluation.metadata.items()}
        return evaluation.passed, metadata, sorted(read)

    # the clean candidate: passes either way; with the memory the detectors read no line
    with_memory, without_memory = evaluate(True), evaluate(False)
    assert with_memory[:2] == without_memory[:2]
    assert with_memory[0] is True
    assert with_memory[2] == [] and "served at 127.0.0.1" in without_memory[2]

    # a data file changed after the build, the withheld row put back: its lines are in the memory
    # (with their finding), and the check fails the same way with and without it
    folder = candidate_dir(lake)
    (entry,) = [f for f in read_manifest(folder).files if f.config == "instruction"]
    leak = read_curated(lake, "instruction").filter(pl.col("id") == "leak")
    path = folder / entry.path
    planted = pl.concat([pl.read_parquet(path), leak.select(pl.read_parquet(path).columns)])
    write_data_file(planted, published_arrow_schema("instruction"), path)
    with_memory, without_memory = evaluate(True), evaluate(False)
    assert with_memory[:2] == without_memory[:2]
    assert with_memory[0] is False
    assert with_memory[1]["failures"]["instruction"]["rows"] == [
        ["leak", "instruction", "us_ssn"],
        ["leak", "output", "us_ssn"],
    ]
    assert with_memory[2] == [] and "my ssn is 219 09 9999" in without_memory[2]
