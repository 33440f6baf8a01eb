"""The README's operations commands work as written: make targets that set DAGSTER_HOME."""

from __future__ import annotations

import subprocess

import pytest

from distill_assets.cli import main
from distill_assets.lib.settings import Settings
from tests.conftest import PROJECT_ROOT


def _make_dry_run(*args: str) -> list[str]:
    done = subprocess.run(
        ["make", "-n", "-s", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def test_backfill_targets_run_distill_on_the_project_instance() -> None:
    assert ".venv/bin/distill backfill --from 2026-11-19 --to 2026-11-20" in _make_dry_run(
        "backfill", "FROM=2026-11-19", "TO=2026-11-20"
    )
    assert ".venv/bin/distill backfill --stale" in _make_dry_run("backfill-stale")
    assert ".venv/bin/distill stale" in _make_dry_run("stale")
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert "export DAGSTER_HOME := $(CURDIR)/data/.dagster" in makefile


def test_readme_backfill_uses_the_make_targets() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    assert "make backfill FROM=" in readme
    assert "make stale" in readme
    for line in readme.splitlines():
        if "dagster asset materialize" in line:
            assert "DAGSTER_HOME=" in line and ".venv/bin/dagster" in line, line


def test_ui_starts_dagster_dev_in_dagster_home() -> None:
    """`dagster dev` warns about a dagster.yaml in its working folder that is not DAGSTER_HOME.

    The project keeps its instance config at the top level (copied into DAGSTER_HOME), so
    `make ui` starts `dagster dev` from DAGSTER_HOME itself.
    """
    assert (PROJECT_ROOT / "dagster.yaml").is_file()
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    [recipe] = [line for line in makefile.splitlines() if "dagster dev" in line]
    assert recipe.strip().startswith("cd $(DAGSTER_HOME) && ")
    assert "-w $(CURDIR)/workspace.yaml" in recipe


def test_ui_checks_the_settings_first_and_hides_only_the_dev_supersession_warning() -> None:
    lines = _make_dry_run("ui")
    check = lines.index(".venv/bin/distill check")
    [dev] = [line for line in lines if "dagster dev" in line]
    assert lines.index(dev) > check
    assert "PYTHONWARNINGS='ignore:Function `dev_command` is superseded' " in dev


def test_distill_check_is_one_line_and_exit_2_on_a_bad_setting(
    distill_env: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DISTILL_PLAYER_ID_KEY", "k")
    assert main(["check"]) == 0
    assert capsys.readouterr().out == "[distill] settings ok\n"
    monkeypatch.setenv("DISTILL_EXECUTOR", "bogus")
    assert main(["check"]) == 2
    assert capsys.readouterr().out == (
        "[distill] error: DISTILL_EXECUTOR='bogus' must be one of in_process, multiprocess, k8s\n"
    )


def test_bench_installs_its_extras_once_and_passes_its_arguments() -> None:
    lines = _make_dry_run("-B", "bench", "ARGS=--quick")
    install = lines.index(".venv/bin/python -m pip install --quiet -e '.[dev,bench]'")
    assert lines.index(".venv/bin/python -m bench --quick") > install
    assert "touch .venv/.installed-bench" in lines
