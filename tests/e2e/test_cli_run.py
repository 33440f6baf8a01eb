"""End to end through the real CLIs: `distill run`, `dagster asset materialize`, `load_dataset`."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.conftest import PROJECT_ROOT, SAMPLE_DATES
from tests.e2e.conftest import Night, cli_env, copy_night, warnings_in

pytestmark = pytest.mark.e2e
BIN = Path(sys.executable).parent


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DISTILL_", "DAGSTER_"))}
    env["DISTILL_DATA_DIR"] = str(tmp_path / "data")
    env["DISTILL_ENV"] = "development"
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    env["HF_HOME"] = str(tmp_path / "hf_home")
    env["HF_DATASETS_OFFLINE"] = "1"
    (tmp_path / "dagster_home").mkdir(exist_ok=True)
    return env


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def published(
    tmp_path_factory: pytest.TempPathFactory, sample_night: Night
) -> tuple[Path, dict[str, str], str]:
    """`distill run` on the committed samples (a copy of the session's night); return the hub
    folder, the environment of a run on it and the run's stdout."""
    # a run on good data shows no Python warning (Dagster's own log lines are not warnings)
    warned = warnings_in(sample_night.stderr)
    assert warned == [], "\n".join(warned)
    tmp_path = tmp_path_factory.mktemp("e2e")
    copy_night(sample_night, tmp_path)
    return tmp_path / "data" / "hub" / "distill", cli_env(tmp_path), sample_night.stdout


def test_run_prints_location_and_load_line(sample_night: Night) -> None:
    stdout = sample_night.stdout
    latest = sample_night.data / "hub" / "distill" / "latest"
    assert f"published at {latest}" in stdout
    assert f'load_dataset("{latest}", "sft")' in stdout
    for day in SAMPLE_DATES:
        assert f"daily_ingest {day}: ok" in stdout
    lines = stdout.splitlines()
    assert "[distill] daily_ingest 2026-11-19 telemetry/dialogues: 11 rows" in lines
    quarantine = next(x for x in lines if x.startswith("[distill] quarantine 2026-11-19: "))
    assert quarantine.startswith(
        "[distill] quarantine 2026-11-19: traces 15 (conflicting_kind 1, invalid_json 1, "
    )
    assert "; escalations 16 (duplicate_id 1, " in quarantine
    assert "; telemetry 21 (" in quarantine


@pytest.fixture(scope="module")
def rerun(
    published: tuple[Path, dict[str, str], str],
) -> tuple[dict[str, str], subprocess.CompletedProcess[str]]:
    """Run `distill run` again on the same data dir; return the hub before it and the run."""
    hub, env, _ = published
    before = _tree_digest(hub)
    samples = PROJECT_ROOT / "data" / "samples"
    again = subprocess.run(
        [str(BIN / "distill"), "run", "--samples", str(samples)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert again.returncode == 0, again.stdout + again.stderr
    return before, again


def _counted(stdout: str) -> list[str]:
    """The lines of a run's summary that count: rows per step, checks per run, quarantine."""
    prefixes = ("[distill] daily_ingest ", "[distill] publish_release", "[distill] quarantine ")
    return [line for line in stdout.splitlines() if line.startswith(prefixes)]


def test_second_run_is_byte_identical(
    published: tuple[Path, dict[str, str], str],
    rerun: tuple[dict[str, str], subprocess.CompletedProcess[str]],
) -> None:
    hub, _, _ = published
    before, _ = rerun
    assert _tree_digest(hub) == before
    assert len(list((hub / "versions").iterdir())) == 1


def test_second_run_prints_the_same_counts(
    published: tuple[Path, dict[str, str], str],
    rerun: tuple[dict[str, str], subprocess.CompletedProcess[str]],
) -> None:
    # a day reads the deletions and consent of the days up to it, never what the first run's
    # release left on disk: the day-1 deletion request applies on day 1 in the first run too
    _, _, first = published
    _, again = rerun
    assert _counted(again.stdout) == _counted(first)
    lines = first.splitlines()
    assert "[distill] daily_ingest 2026-11-19 telemetry/accepted_events: 282 rows" in lines
    assert "[distill] daily_ingest 2026-11-20 telemetry/accepted_events: 347 rows" in lines
    # a warning-level check is reported as a warning, not as a failed check
    assert (
        "[distill] daily_ingest 2026-11-20: ok (50 materializations, 20 checks, "
        "warnings: telemetry/triage:pass_rate_within_budget)"
    ) in lines


@pytest.mark.parametrize("config", ["sft", "dpo", "instruction"])
def test_load_dataset_matches_manifest(
    published: tuple[Path, dict[str, str], str], config: str
) -> None:
    hub, env, _ = published
    latest = hub / "latest"
    manifest = json.loads((latest / "release.json").read_text())
    script = (
        "import json, sys\n"
        "from datasets import load_dataset\n"
        f"ds = load_dataset({str(latest)!r}, {config!r})\n"
        "print(json.dumps({s: {'rows': ds[s].num_rows, 'columns': ds[s].column_names}"
        " for s in ds}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    expected = manifest["configs"][config]["splits"]
    assert {s: v["rows"] for s, v in loaded.items()} == {s: v["rows"] for s, v in expected.items()}
    assert set(loaded) == {"train", "test"}
    for split in loaded.values():
        assert split["rows"] > 0
        assert {"id", "source", "source_ref", "quality_score", "metadata"} <= set(split["columns"])


def _dagster_materialize(env: dict[str, str], cwd: Path, selection: str) -> None:
    cmd = [
        str(BIN / "dagster"),
        "asset",
        "materialize",
        "-m",
        "distill_assets.definitions",
        "--select",
        selection,
        "--partition",
        SAMPLE_DATES[0],
    ]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=cwd, check=False)
    assert out.returncode == 0, out.stderr[-3000:]


def test_dagster_cli_materializes_one_partition(tmp_path: Path) -> None:
    """Bronze (a two-output multi-asset) then one single partitioned asset, from the real CLI."""
    env = _env(tmp_path)
    raw = tmp_path / "data" / "raw" / "escalations" / SAMPLE_DATES[0]
    raw.mkdir(parents=True)
    for src in (PROJECT_ROOT / "data" / "samples" / "escalations" / SAMPLE_DATES[0]).iterdir():
        (raw / src.name).write_bytes(src.read_bytes())
    legacy = ",".join(
        f"escalations/legacy_{t}"
        for t in ("records", "migration", "quarantine", "principles", "review_queue")
    )
    _dagster_materialize(
        env,
        tmp_path,
        f"escalations/records,escalations/quarantine,{legacy},escalations/legacy_skill_templates",
    )
    _dagster_materialize(env, tmp_path, "escalations/distillation_examples")
    lake = tmp_path / "data" / "lake" / "escalations"
    day = f"{SAMPLE_DATES[0]}.parquet"
    assert pl.read_parquet(lake / "records" / day).height == 84
    assert pl.read_parquet(lake / "quarantine" / day).height == 16
    assert pl.read_parquet(lake / "distillation_examples" / day).height == 84


# telemetry rows of the committed samples per config and split (issue 30: the samples exercise
# every telemetry product, so each config the game feeds has rows in both splits)
TELEMETRY_ROWS = {
    "cot": {"test": 4, "train": 8},
    "dpo": {"test": 2, "train": 10},
    "rlds": {"test": 1, "train": 7},
    "sft": {"test": 4, "train": 20},
}


def test_samples_publish_telemetry_in_every_config_and_split(
    published: tuple[Path, dict[str, str], str],
) -> None:
    hub, _, _ = published
    data = hub / "latest" / "data"
    counts: dict[str, dict[str, int]] = {}
    for config in TELEMETRY_ROWS:
        for split in ("train", "test"):
            counts.setdefault(config, {})[split] = sum(
                pl.read_parquet(path, columns=["source"])
                .filter(pl.col("source") == "telemetry")
                .height
                for path in sorted((data / config / split).glob("*.parquet"))
            )
    assert counts == TELEMETRY_ROWS
