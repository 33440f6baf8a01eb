"""Trace extraction on trace sets with known answers (the real llm-repo-agent format)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from tests.unit.traces.builder import (
    SYSTEM,
    AgentRun,
    extract,
    failed_run,
    parse_error_run,
    recovery_run,
    run_tests_run,
    success_run,
    text,
)

GOAL = "GOAL:\nFix quicksort.py"
LIST = '{"type":"tool_call","name":"list_files","args":{"rel_dir":".","max_files":50}}'
READ = '{"type":"tool_call","name":"read_file","args":{"rel_path":"quicksort.py","max_chars":4000}}'
BAD_READ = '{"type":"tool_call","name":"read_file","args":{"rel_path":"quicksort.py"}}'
WRITE = (
    '{"type":"tool_call","name":"write_file","args":'
    '{"rel_path":"quicksort.py","content":"def quicksort(a): return sorted(a)"}}'
)
FIXED = (
    '{"type":"tool_call","name":"write_file","args":{"rel_path":"quicksort.py","content":"fixed"}}'
)


def all_runs_file() -> str:
    """Five runs of five different tasks (same-task runs would share deduplicated samples)."""
    return text(
        success_run("ok1"),
        failed_run("bad1", goal="Fix mergesort.py", task_id="quixbugs/mergesort"),
        recovery_run("rec1", goal="Fix gcd.py", task_id="quixbugs/gcd"),
        run_tests_run("rt1", goal="Fix flatten.py", task_id="quixbugs/flatten"),
        parse_error_run("pe1", goal="Fix bitcount.py", task_id="quixbugs/bitcount"),
    )


def per_run(frame: pl.DataFrame) -> dict[str, int]:
    return dict(frame.group_by("run_id").len().sort("run_id").iter_rows())


def reasons(dropped: pl.DataFrame, run_id: str) -> list[tuple[int, str]]:
    rows = dropped.filter(pl.col("run_id") == run_id).sort("t").select("t", "reason")
    return list(rows.iter_rows())


def messages(frame: pl.DataFrame, run_id: str, t: int) -> list[dict[str, object]]:
    row = frame.filter((pl.col("run_id") == run_id) & (pl.col("t") == t))
    assert row.height == 1
    return row["messages"][0].to_list()


def test_exact_samples_per_run_and_drop_reasons(tmp_path: Path) -> None:
    out = extract(tmp_path, {"traces/agent.jsonl": all_runs_file()})
    assert per_run(out.sft) == {"ok1": 3, "rec1": 2, "rt1": 1}
    assert reasons(out.dropped, "ok1") == [(3, "final_action")]
    assert reasons(out.dropped, "bad1") == [(t, "run_tests_failed") for t in range(3)]
    assert reasons(out.dropped, "rec1") == [
        (1, "missing_args"),
        (2, "recovery_step"),
        (4, "final_action"),
    ]
    assert reasons(out.dropped, "rt1") == [(1, "unknown_tool"), (2, "final_action")]
    assert reasons(out.dropped, "pe1") == [(0, "run_llm_parse_error"), (1, "run_llm_parse_error")]
    assert out.summary.samples == 6
    assert out.summary.steps == out.sft.height + out.dropped.height == 17
    assert out.summary.runs_by_skip_reason == {"tests_failed": 1, "llm_parse_error": 1}


def test_first_and_last_messages_of_samples(tmp_path: Path) -> None:
    out = extract(tmp_path, {"traces/agent.jsonl": all_runs_file()})
    first = messages(out.sft, "ok1", 0)
    assert first == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": GOAL},
        {"role": "assistant", "content": LIST},
    ]
    last = messages(out.sft, "ok1", 2)
    assert last == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": GOAL},
        {"role": "assistant", "content": LIST},
        {"role": "user", "content": "[tool_result]\nquicksort.py\ntest_quicksort.py"},
        {"role": "assistant", "content": READ},
        {"role": "user", "content": "[tool_result]\ndef quicksort(a): ..."},
        {"role": "assistant", "content": WRITE},
    ]
    # the target parses back to the action the model took (thought removed)
    assert (
        json.loads(last[-1]["content"])["args"]["content"] == "def quicksort(a): return sorted(a)"
    )


def test_driver_note_between_call_and_tool_message_is_normalised(tmp_path: Path) -> None:
    out = extract(tmp_path, {"traces/agent.jsonl": all_runs_file()})
    together = messages(out.sft, "rec1", 3)
    assert [m["role"] for m in together] == ["system", "user"] + ["assistant", "user"] * 3 + [
        "assistant"
    ]
    assert together[4] == {"role": "assistant", "content": BAD_READ}
    assert together[5] == {
        "role": "user",
        "content": "[tool_result]\nInvalid tool args for read_file: missing required "
        "argument(s): max_chars\n\nDRIVER NOTE:\n- Pass every declared argument.",
    }
    assert together[-1] == {"role": "assistant", "content": FIXED}
    tools = messages(out.tools, "rec1", 3)
    assert [m["role"] for m in tools] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert tools[4]["content"] == ""
    assert tools[4]["tool_calls"] == [
        {
            "id": "call_2",
            "type": "function",
            "function": {"name": "read_file", "arguments": '{"rel_path":"quicksort.py"}'},
        }
    ]
    assert tools[5] == {
        "role": "tool",
        "content": "Invalid tool args for read_file: missing required argument(s): max_chars",
        "tool_calls": None,
        "tool_call_id": "call_2",
    }
    assert tools[6] == {
        "role": "user",
        "content": "DRIVER NOTE:\n- Pass every declared argument.",
        "tool_calls": None,
        "tool_call_id": None,
    }
    assert tools[-1]["content"] == ""
    assert tools[-1]["tool_calls"][0]["id"] == "call_4"
    assert json.loads(tools[-1]["tool_calls"][0]["function"]["arguments"]) == {
        "rel_path": "quicksort.py",
        "content": "fixed",
    }


def test_write_file_tool_message_keeps_the_tests_suffix(tmp_path: Path) -> None:
    run = AgentRun("w1")
    run.call(
        "write_file", {"rel_path": "a.py", "content": "x"}, "Wrote a.py (1 chars).", tests=True
    )
    run.call("list_files", {"rel_dir": ".", "max_files": 50}, "a.py")
    run.final()
    out = extract(tmp_path, {"traces/a.jsonl": text(run)})
    after_write = messages(out.sft, "w1", 1)
    assert after_write[3] == {
        "role": "user",
        "content": "[tool_result]\nWrote a.py (1 chars).\n\n[TESTS PASS]\n1 passed",
    }


def test_options_change_the_funnel(tmp_path: Path) -> None:
    files = {"traces/agent.jsonl": all_runs_file()}
    lenient = extract(tmp_path / "a", files, require_success=False)
    assert per_run(lenient.sft) == {"bad1": 2, "ok1": 3, "pe1": 1, "rec1": 2, "rt1": 1}
    assert reasons(lenient.dropped, "pe1") == [(1, "llm_parse_error")]
    recovering = extract(tmp_path / "b", files, include_recovery=True)
    assert per_run(recovering.sft) == {"ok1": 3, "rec1": 3, "rt1": 1}
    recovery = recovering.sft.filter((pl.col("run_id") == "rec1") & (pl.col("t") == 2))
    assert recovery["sample_kind"].to_list() == ["recovery"]
    assert recovery["quality_score"].to_list() == [pytest.approx(0.75)]
    not_ok = extract(tmp_path / "c", files, require_valid_tool_ok=False, include_recovery=True)
    assert per_run(not_ok.sft) == {"ok1": 3, "rec1": 3, "rt1": 1}


def test_failed_runs_samples_score_lower(tmp_path: Path) -> None:
    out = extract(tmp_path, {"traces/agent.jsonl": all_runs_file()}, require_success=False)
    scores = dict(
        out.sft.group_by("run_id").agg(pl.col("quality_score").min()).sort("run_id").iter_rows()
    )
    assert scores == {"bad1": 0.5, "ok1": 1.0, "pe1": 0.5, "rec1": 0.95, "rt1": 1.0}


def recovery(run_id: str) -> AgentRun:
    return recovery_run(run_id, goal="Fix gcd.py", task_id="quixbugs/gcd")


def test_interleaved_runs_in_one_file_match_separate_files(tmp_path: Path) -> None:
    together = extract(
        tmp_path / "one",
        {"traces/shared.jsonl": text(success_run("a1"), recovery("a2"), interleave=True)},
    )
    apart = extract(
        tmp_path / "two",
        {"traces/x.jsonl": text(success_run("a1")), "traces/y.jsonl": text(recovery("a2"))},
    )
    assert per_run(together.sft) == per_run(apart.sft) == {"a1": 3, "a2": 2}
    assert together.sft["messages"].to_list() != []
    key = ["run_id", "t"]
    assert together.sft.sort(key)["messages"].to_list() == apart.sft.sort(key)["messages"].to_list()


def test_run_cut_by_a_torn_last_line_keeps_its_complete_steps(tmp_path: Path) -> None:
    cut = AgentRun("cut", goal="Fix gcd.py", task_id="quixbugs/gcd")
    cut.call("list_files", {"rel_dir": ".", "max_files": 50}, "gcd.py")
    cut.call("read_file", {"rel_path": "gcd.py", "max_chars": 4000}, "def gcd(a, b): ...")
    cut.request()
    torn = cut.lines.pop()[:70]
    body = text(success_run("ok1"), cut, interleave=True) + torn
    files = {"traces/live.jsonl": body}
    kept = extract(tmp_path / "default", files)
    assert kept.quarantine.select("line_no", "reason").rows() == [
        (body.count("\n") + 1, "torn_last_line")
    ]
    assert kept.quarantine["raw_line"].to_list() == [torn]
    assert per_run(kept.sft) == {"ok1": 3}
    assert reasons(kept.dropped, "cut") == [(0, "run_incomplete"), (1, "run_incomplete")]
    assert kept.summary.steps == kept.sft.height + kept.dropped.height == 6
    everything = extract(tmp_path / "all", files, require_success=False)
    assert per_run(everything.sft) == {"cut": 2, "ok1": 3}
    assert messages(everything.sft, "cut", 1) == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "GOAL:\nFix gcd.py"},
        {"role": "assistant", "content": LIST},
        {"role": "user", "content": "[tool_result]\ngcd.py"},
        {
            "role": "assistant",
            "content": '{"type":"tool_call","name":"read_file",'
            '"args":{"rel_path":"gcd.py","max_chars":4000}}',
        },
    ]


def test_near_identical_samples_across_runs_are_deduplicated(tmp_path: Path) -> None:
    files = {"traces/x.jsonl": text(success_run("a1")), "traces/y.jsonl": text(success_run("b1"))}
    out = extract(tmp_path / "dedup", files)
    assert per_run(out.sft) == {"a1": 3}
    duplicates = out.dropped.filter(pl.col("reason") == "duplicate").sort("t")
    assert duplicates["run_id"].to_list() == ["b1", "b1", "b1"]
    kept_ids = out.sft.sort("t")["id"].to_list()
    assert duplicates["detail"].to_list() == [f"same as {i}" for i in kept_ids]
    kept = extract(tmp_path / "keep", files, dedup=False)
    assert per_run(kept.sft) == {"a1": 3, "b1": 3}
    # a different goal is a different sample
    other = extract(
        tmp_path / "other",
        {**files, "traces/y.jsonl": text(success_run("b1", goal="Fix mergesort.py"))},
    )
    assert per_run(other.sft) == {"a1": 3, "b1": 3}


def test_context_tool_outputs_are_cut_to_max_context_chars(tmp_path: Path) -> None:
    run = AgentRun("long")
    run.call("read_file", {"rel_path": "big.py", "max_chars": 100000}, "x" * 3_000_000)
    run.call(
        "write_file", {"rel_path": "big.py", "content": "y"}, "Wrote big.py (1 chars).", tests=True
    )
    run.final()
    out = extract(tmp_path, {"traces/big.jsonl": text(run)}, max_context_chars=10)
    assert (
        out.events.filter(pl.col("kind") == "tool_result")["event"].str.len_bytes().max()
        > 3_000_000
    )
    sample = messages(out.sft, "long", 1)
    assert sample[3] == {"role": "user", "content": "[tool_result]\n" + "x" * 10}
    meta = json.loads(out.sft.filter(pl.col("t") == 1)["metadata"][0])
    assert meta["truncated_outputs"] == 1
    assert out.sft.filter(pl.col("t") == 1)["quality_score"][0] == pytest.approx(0.9)
    unlimited = extract(tmp_path / "all", {"traces/big.jsonl": text(run)}, max_context_chars=0)
    assert len(messages(unlimited.sft, "long", 1)[3]["content"]) == 3_000_000 + len(
        "[tool_result]\n"
    )


def test_runs_table(tmp_path: Path) -> None:
    maxed = AgentRun("max1")
    maxed.call("list_files", {"rel_dir": ".", "max_files": 50}, "a.py")
    maxed.end()
    final_only = AgentRun("fin1", task_id=None, goal="Fix gcd.py")
    final_only.call(
        "write_file", {"rel_path": "gcd.py", "content": "ok"}, "Wrote gcd.py.", tests=True
    )
    final_only.final(run_end=False)
    out = extract(tmp_path, {"traces/agent.jsonl": all_runs_file() + text(maxed, final_only)})
    columns = [
        "run_id",
        "success",
        "success_rule",
        "ended_by",
        "skip_reason",
        "steps",
        "tool_calls",
        "ok_tool_calls",
    ]
    rows = {r[0]: r[1:] for r in out.runs.select(columns).iter_rows()}
    assert rows == {
        "ok1": (True, "run_end.last_test", "final", None, 4, 3, 3),
        "bad1": (False, "run_end.last_test", "final", "tests_failed", 3, 2, 2),
        "rec1": (True, "run_end.last_test", "final", None, 5, 4, 3),
        "rt1": (True, "run_end.last_test", "final", None, 3, 2, 1),
        "pe1": (False, "none", "llm_parse_error", "llm_parse_error", 2, 1, 1),
        "max1": (False, "none", "max_iters", "no_tests", 1, 1, 1),
        "fin1": (True, "final.test_result", "final", None, 2, 1, 1),
    }
    ok1 = out.runs.filter(pl.col("run_id") == "ok1").row(0, named=True)
    assert (ok1["task_id"], ok1["goal"], ok1["model"]) == (
        "quixbugs/quicksort",
        "Fix quicksort.py",
        "Qwen/Qwen2.5-7B-Instruct-Turbo",
    )
    assert (ok1["source_file"], ok1["first_line_no"]) == ("traces/agent.jsonl", 1)
    fin1 = out.runs.filter(pl.col("run_id") == "fin1").row(0, named=True)
    assert fin1["split_group"].startswith("goal:")
    assert out.runs["run_id"].to_list() == ["ok1", "bad1", "rec1", "rt1", "pe1", "max1", "fin1"]


def test_type_alias_gives_the_same_samples(tmp_path: Path) -> None:
    kind = extract(tmp_path / "kind", {"traces/a.jsonl": text(success_run("a1"))})
    alias = extract(tmp_path / "type", {"traces/a.jsonl": text(success_run("a1", kind_key="type"))})
    assert alias.sft["messages"].to_list() == kind.sft["messages"].to_list()
    assert alias.events["kind"].to_list() == kind.events["kind"].to_list()


def test_invalid_request_shape_is_dropped_before_writing(tmp_path: Path) -> None:
    run = AgentRun("inv1")
    run.call("list_files", {"rel_dir": ".", "max_files": 50}, "a.py")
    run.pending = None  # the writer lost the tool message: assistant call without its result
    run.call("write_file", {"rel_path": "a.py", "content": "ok"}, "Wrote a.py.", tests=True)
    run.final()
    out = extract(tmp_path, {"traces/a.jsonl": text(run)})
    assert per_run(out.sft) == {"inv1": 1}
    assert reasons(out.dropped, "inv1") == [(1, "invalid_sample"), (2, "final_action")]
    detail = out.dropped.filter(pl.col("t") == 1)["detail"][0]
    assert detail == "request roles system,user,assistant"


def test_split_by_task_and_feed_columns(tmp_path: Path) -> None:
    runs = [success_run(f"r{i}", task_id=f"task-{i}", goal=f"Fix bug {i}") for i in range(30)]
    out = extract(tmp_path, {"traces/a.jsonl": text(*runs)}, eval_fraction=0.3)
    by_task = out.sft.group_by("split_group").agg(pl.col("split").unique())
    assert by_task["split"].list.len().max() == 1
    assert set(out.sft["split"]) == {"train", "eval"}
    from distill_assets.lib.hashing import split_bucket

    expected = {
        f"task-{i}": "eval" if split_bucket(f"task-{i}") < 3000 else "train" for i in range(30)
    }
    assert dict(out.sft.select("split_group", "split").unique().iter_rows()) == expected
    assert out.sft["id"].n_unique() == out.sft.height
    assert out.sft["source_ref"][0] == "run:r0/step:0"


def test_asset_config_mirrors_the_extraction_options() -> None:
    from dataclasses import asdict

    from distill_assets.defs.traces.assets import SftExtractConfig
    from distill_assets.defs.traces.sft_extraction import ExtractOptions

    assert SftExtractConfig().options() == ExtractOptions()
    assert SftExtractConfig().model_dump() == asdict(ExtractOptions())
