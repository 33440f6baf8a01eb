"""The README's operations commands work as written: make targets that set DAGSTER_HOME."""

from __future__ import annotations

import subprocess

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
