from pathlib import Path

import pytest

from distill_assets.cli import main
from distill_assets.defs.player_ids import PlayerIdHasher
from distill_assets.lib.settings import Settings
from distill_assets.lib.startup import (
    DEVELOPMENT_KEY_WARNING,
    SettingsError,
    check_startup,
    resolve_settings,
)


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
