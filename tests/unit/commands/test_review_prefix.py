"""`distill review show|approve|reject` take any unique prefix of an example id."""

from __future__ import annotations

import polars as pl
import pytest

from distill_assets.cli import main
from distill_assets.commands.review import resolve_id
from distill_assets.lib.lake import partition_path
from distill_assets.lib.settings import Settings


@pytest.fixture
def examples(distill_env: Settings) -> Settings:
    """Three examples over two partitions of `escalations/distillation_examples`."""
    for day, ids in (("2026-11-19", ["9f2c01", "9f2c02"]), ("2026-11-20", ["a7f3b2"])):
        path = partition_path(distill_env.lake_root, "escalations", "distillation_examples", day)
        path.parent.mkdir(parents=True, exist_ok=True)
        pl.DataFrame({"id": ids}).write_parquet(str(path))
    return distill_env


def test_a_unique_prefix_names_its_example(examples: Settings) -> None:
    assert resolve_id(examples, "a7") == "a7f3b2"
    assert resolve_id(examples, "9f2c02") == "9f2c02"


@pytest.mark.parametrize(
    ("prefix", "line"),
    [
        ("9f2c", "distill review: example id prefix '9f2c' matches 2 examples: 9f2c01, 9f2c02"),
        ("b", "distill review: unknown example id 'b'"),
    ],
)
def test_an_ambiguous_or_unknown_prefix_is_one_line(
    examples: Settings, capsys: pytest.CaptureFixture[str], prefix: str, line: str
) -> None:
    assert main(["review", "show", prefix]) == 1
    captured = capsys.readouterr()
    assert (captured.out, captured.err.splitlines()) == ("", [line])


def test_no_examples_yet_is_unknown(distill_env: Settings) -> None:
    with pytest.raises(LookupError, match=r"^unknown example id '9f'$"):
        resolve_id(distill_env, "9f")
