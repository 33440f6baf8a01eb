import errno
import re
import sqlite3
from pathlib import Path

import dagster as dg
import pytest

from distill_assets.cli import main
from distill_assets.defs.player_ids import PlayerIdHasher
from distill_assets.lib import startup
from distill_assets.lib.settings import Settings
from distill_assets.lib.startup import (
    DEVELOPMENT_KEY_WARNING,
    SettingsError,
    check_startup,
    resolve_settings,
)
from tests.conftest import PROJECT_ROOT, land


def settings_in(tmp_path: Path, **overrides: str) -> Settings:
    values = {
        "raw_root": str(tmp_path / "raw"),
        "lake_root": str(tmp_path / "lake"),
        "hub_root": str(tmp_path / "hub"),
    }
    values.update(overrides)
    return Settings.resolve(**values)


def test_development_key_warns_in_development_and_fails_elsewhere(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    assert check_startup(settings, {"DISTILL_ENV": "development"}) == [DEVELOPMENT_KEY_WARNING]
    with pytest.raises(SettingsError, match=r"^DISTILL_PLAYER_ID_KEY is not set: the public"):
        check_startup(settings, {})
    assert check_startup(settings, {"DISTILL_PLAYER_ID_KEY": "s3cret"}) == []


@pytest.mark.parametrize(
    "name", ["../../x", "a/b", "..", "a\\b", ".hidden", "x..y", "distill\n", " ", "\t"]
)
def test_dataset_names_with_path_parts_are_refused(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISTILL_DATASET_NAME", name)
    with pytest.raises(SettingsError, match=r"^DISTILL_DATASET_NAME=.* must be a plain name"):
        resolve_settings()


def test_roots_under_a_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    settings = settings_in(tmp_path, lake_root=str(tmp_path / "file" / "lake"))
    with pytest.raises(SettingsError, match=r"^DISTILL_LAKE_ROOT=.* lies under a file"):
        check_startup(settings, {"DISTILL_PLAYER_ID_KEY": "k"})
    object_store = settings_in(tmp_path, lake_root="s3://bucket/lake")
    assert check_startup(object_store, {"DISTILL_PLAYER_ID_KEY": "k"}) == []


def test_hub_repo_id_needs_a_token_and_the_owner_name_form(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    env = {"DISTILL_PLAYER_ID_KEY": "k", "DISTILL_HUB_REPO_ID": "org/data"}
    with pytest.raises(SettingsError, match="HF_TOKEN is not: refusing to publish locally"):
        check_startup(settings, env)
    assert check_startup(settings, {**env, "HF_TOKEN": "hf_x"}) == []
    with pytest.raises(SettingsError, match="must have the form owner/name"):
        check_startup(settings, {**env, "DISTILL_HUB_REPO_ID": "../x", "HF_TOKEN": "hf_x"})


@pytest.mark.parametrize("key", [" ", "\t", " \n "])
def test_a_blank_or_whitespace_player_key_is_refused(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_in(tmp_path)
    with pytest.raises(SettingsError, match=r"^DISTILL_PLAYER_ID_KEY is set but blank"):
        check_startup(settings, {"DISTILL_PLAYER_ID_KEY": key, "DISTILL_ENV": "development"})
    monkeypatch.setenv("DISTILL_PLAYER_ID_KEY", key)
    monkeypatch.setenv("DISTILL_ENV", "development")
    with pytest.raises(SettingsError, match=r"^DISTILL_PLAYER_ID_KEY is set but blank"):
        PlayerIdHasher().resolved()
    with pytest.raises(ValueError, match=r"^player_id_hasher.key is set but blank"):
        PlayerIdHasher(key=key).resolved()


def test_the_player_id_hasher_refuses_the_development_key_outside_development(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DISTILL_PLAYER_ID_KEY", raising=False)
    monkeypatch.delenv("DISTILL_ENV", raising=False)
    with pytest.raises(SettingsError):
        PlayerIdHasher().resolved()
    assert PlayerIdHasher(key="configured").resolved().source == "config"


def test_distill_run_prints_one_line_errors_and_the_key_warning(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("DISTILL_PLAYER_ID_KEY", raising=False)
    monkeypatch.delenv("DISTILL_ENV", raising=False)
    assert main(["run", "--samples", "none"]) == 2
    assert capsys.readouterr().out.splitlines() == [
        "[distill] error: DISTILL_PLAYER_ID_KEY is not set: the public development key is only "
        "allowed with DISTILL_ENV=development"
    ]
    monkeypatch.setenv("DISTILL_ENV", "development")
    monkeypatch.setenv("DISTILL_DATASET_NAME", "../../x")
    assert main(["run", "--samples", "none"]) == 2
    assert capsys.readouterr().out.splitlines() == [
        "[distill] error: DISTILL_DATASET_NAME='../../x' must be a plain name (letters, digits, "
        "'.', '_', '-'; no path separators or '..')"
    ]
    monkeypatch.delenv("DISTILL_DATASET_NAME")
    assert main(["run", "--samples", "none"]) == 1  # no raw partitions: nothing to do
    assert capsys.readouterr().out.splitlines()[0] == f"[distill] {DEVELOPMENT_KEY_WARNING}"


# one bad value of every documented DISTILL_* setting (docs/operations.md#settings) and its line;
# `{file}` is an existing file of the test's folder
BAD_SETTINGS = [
    (
        "DISTILL_DATA_DIR",
        "{file}/data",
        "DISTILL_DATA_DIR={file}/data lies under a file ({file}), not a folder",
    ),
    (
        "DISTILL_RAW_ROOT",
        "{file}/raw",
        "DISTILL_RAW_ROOT={file}/raw lies under a file ({file}), not a folder",
    ),
    (
        "DISTILL_LAKE_ROOT",
        "{file}/lake",
        "DISTILL_LAKE_ROOT={file}/lake lies under a file ({file}), not a folder",
    ),
    (
        "DISTILL_HUB_ROOT",
        "{file}/hub",
        "DISTILL_HUB_ROOT={file}/hub lies under a file ({file}), not a folder",
    ),
    (
        "DISTILL_MEMORY_ROOT",
        "{file}/memory",
        "DISTILL_MEMORY_ROOT={file}/memory lies under a file ({file}), not a folder",
    ),
    (
        "DISTILL_DATASET_NAME",
        "../x",
        "DISTILL_DATASET_NAME='../x' must be a plain name (letters, digits, '.', '_', '-'; no "
        "path separators or '..')",
    ),
    (
        "DISTILL_HUB_REPO_ID",
        "org/data",
        "DISTILL_HUB_REPO_ID=org/data is set but HF_TOKEN is not: refusing to publish locally "
        "instead of to the Hub",
    ),
    (
        "DISTILL_PLAYER_ID_KEY",
        " ",
        "DISTILL_PLAYER_ID_KEY is set but blank: set a real value or unset it",
    ),
    ("DISTILL_ENV", "dev", "DISTILL_ENV='dev' must be one of development, production"),
    (
        "DISTILL_PARTITIONS_START",
        "2026-13-01",
        "DISTILL_PARTITIONS_START='2026-13-01' is not a date (YYYY-MM-DD)",
    ),
    (
        "DISTILL_FUTURE_DAYS",
        "one",
        "DISTILL_FUTURE_DAYS='one': Input should be a valid integer, unable to parse string "
        "as an integer",
    ),
    (
        "DISTILL_EXECUTOR",
        "bogus",
        "DISTILL_EXECUTOR='bogus' must be one of in_process, multiprocess, k8s",
    ),
    (
        "DISTILL_MAX_CONCURRENT",
        "zero",
        "DISTILL_MAX_CONCURRENT='zero' must be a whole number, at least 1",
    ),
    (
        "DISTILL_INGEST_SHARDS",
        "0",
        "DISTILL_INGEST_SHARDS='0' must be a whole number from 1 to 64",
    ),
    (
        "DISTILL_INGEST_SHARDS",
        "65",
        "DISTILL_INGEST_SHARDS='65' must be a whole number from 1 to 64",
    ),
    ("DISTILL_EMBEDDER", "bogus", "DISTILL_EMBEDDER='bogus' must be one of hashed, model2vec"),
    ("DISTILL_EVAL_SETS", "/nonexistent", "DISTILL_EVAL_SETS=/nonexistent is not a folder"),
    (
        "DISTILL_EMBEDDER_MODEL",
        "/nonexistent",
        "DISTILL_EMBEDDER_MODEL=/nonexistent is not a folder",
    ),
    (
        "DISTILL_LLM_BASE_URL",
        "localhost:8000",
        "DISTILL_LLM_BASE_URL='localhost:8000' must start with http:// or https://",
    ),
    (
        "DISTILL_LLM_BASE_URL",
        "http://localhost:8000",
        "DISTILL_LLM_BASE_URL is set but DISTILL_LLM_MODEL is not",
    ),
    ("DISTILL_LLM_MODEL", "qwen", "DISTILL_LLM_MODEL is set but DISTILL_LLM_BASE_URL is not"),
    ("DISTILL_LLM_API_KEY", "sk-1", "DISTILL_LLM_API_KEY is set but DISTILL_LLM_BASE_URL is not"),
    (
        "DISTILL_ALLOW_DROPPED_CONFIGS",
        "sft,spf",
        "DISTILL_ALLOW_DROPPED_CONFIGS='sft,spf' names no published config: spf (configs: "
        "correction, cot, dpo, instruction, rlds, sft, sft_tools, or *)",
    ),
]


def test_every_documented_setting_has_a_bad_value_case() -> None:
    documented = set(
        re.findall(r"`(DISTILL_[A-Z_]+)`", (PROJECT_ROOT / "docs" / "operations.md").read_text())
    )
    test_only = {"DISTILL_INTEGRATION", "DISTILL_BENCH_SCALE"}
    assert documented - test_only == {variable for variable, _, _ in BAD_SETTINGS}


@pytest.mark.parametrize(("variable", "value", "line"), BAD_SETTINGS)
@pytest.mark.parametrize(
    "command", [["run", "--samples", "none"], ["backfill", "--stale"], ["stale"], ["check"]]
)
def test_every_bad_setting_is_one_line_and_exit_2_before_any_work(
    distill_env: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    *,
    variable: str,
    value: str,
    line: str,
    command: list[str],
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv(variable, value.format(file=a_file))
    assert main(command) == 2
    captured = capsys.readouterr()
    expected = line.format(file=a_file)
    assert (captured.out.splitlines(), captured.err) == ([f"[distill] error: {expected}"], "")
    assert not Path(distill_env.data_dir).exists()


def test_an_embedder_model_needs_the_model2vec_backend(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("DISTILL_EMBEDDER_MODEL", str(tmp_path))
    with pytest.raises(SettingsError, match=r"^DISTILL_EMBEDDER_MODEL is set but DISTILL_EMBEDDER"):
        resolve_settings()
    monkeypatch.delenv("DISTILL_EMBEDDER_MODEL")
    monkeypatch.setenv("DISTILL_EMBEDDER", "model2vec")
    with pytest.raises(SettingsError, match=r"^DISTILL_EMBEDDER=model2vec needs DISTILL_EMBEDDER"):
        resolve_settings()


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "/data/lake/x.parquet"),
            "No space left on device: /data/lake/x.parquet",
        ),
        (
            PermissionError(errno.EACCES, "Permission denied", "/data/hub"),
            "Permission denied: /data/hub",
        ),
        (
            OSError(errno.EROFS, "Read-only file system", "/data"),
            "Read-only file system: /data",
        ),
        (
            sqlite3.OperationalError("database or disk is full"),
            "Dagster storage: database or disk is full: under /home/dagster",
        ),
    ],
)
def test_storage_errors_end_with_one_line_naming_the_path(
    distill_env: Settings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    error: Exception,
    line: str,
) -> None:
    from distill_assets.commands import stats

    def fail(args: object) -> int:
        raise error

    monkeypatch.setenv("DAGSTER_HOME", "/home/dagster")
    monkeypatch.setattr(stats, "run", fail)
    assert main(["stats", "escalations"]) == 1
    assert capsys.readouterr().out.splitlines() == [f"[distill] error: {line}"]


def test_other_errors_are_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    from distill_assets.commands import stats

    def fail(args: object) -> int:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/x")

    monkeypatch.setattr(stats, "run", fail)
    with pytest.raises(FileNotFoundError):
        main(["stats", "escalations"])


def test_the_development_key_warning_is_shown_once_per_process(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two telemetry partitions in one process log it once; after a command printed it, never."""
    from distill_assets.definitions import defs

    monkeypatch.setattr(startup, "_ANNOUNCED", set())
    monkeypatch.delenv("DISTILL_PLAYER_ID_KEY", raising=False)
    days = ("2026-11-19", "2026-11-20")
    for day in days:
        land(distill_env, "telemetry", day, "a.jsonl", "{}\n")
    job = defs().resolve_job_def("daily_ingest")
    events = [dg.AssetKey(["telemetry", name]) for name in ("events", "quarantine")]

    def warnings_logged() -> int:
        with dg.instance_for_test() as instance:
            runs = [
                job.execute_in_process(partition_key=day, asset_selection=events, instance=instance)
                for day in days
            ]
            return sum(
                entry.user_message == DEVELOPMENT_KEY_WARNING
                for run in runs
                for entry in instance.all_logs(run.run_id)
            )

    assert warnings_logged() == 1
    assert warnings_logged() == 0
