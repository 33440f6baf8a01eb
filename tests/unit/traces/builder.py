"""Build trace files with known answers in the real llm-repo-agent format.

`AgentRun` replays the agent loop the way llm-repo-agent logs it: every `llm_request` re-sends
the whole chat (system prompt, `GOAL:` user message, assistant messages with `tool_calls` and no
content, `tool` messages with `tool_call_id`) plus the tool message of the previous step; a
reflection adds a system `DRIVER NOTE` after the assistant tool call, before its tool message;
after `write_file` the tool message is the output plus a `[TESTS PASS|FAIL]` suffix.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

SYSTEM = "You are a repo-fixing agent. Call one tool per turn."


@dataclass
class AgentRun:
    """One agent run; `lines` are its trace lines (JSON text) in the order they were written."""

    run_id: str
    goal: str = "Fix quicksort.py"
    task_id: str | None = "quixbugs/quicksort"
    kind_key: str = "kind"
    ts: float = 1_795_050_000.0
    system: str = SYSTEM
    lines: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        meta: dict[str, Any] = {
            "repo": "/tmp/sbx",
            "goal": self.goal,
            "test_cmd": "pytest -q",
            "model": "Qwen/Qwen2.5-7B-Instruct-Turbo",
            "provider": "together",
        }
        if self.task_id is not None:
            meta = {"task_id": self.task_id, **meta}
        self.meta = meta
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": f"GOAL:\n{self.goal}"},
        ]
        self.t = 0
        self.pending: str | None = None
        self.call_id: str | None = None
        self.last_test: dict[str, Any] | None = None
        self.log("run_start", {"run_id": self.run_id, "goal": self.goal})

    def log(self, kind: str, payload: dict[str, Any]) -> None:
        """Append one event line."""
        self.ts += 1.0
        event = {"ts": self.ts, self.kind_key: kind, "payload": payload}
        self.lines.append(json.dumps({**event, "run_id": self.run_id, "meta": self.meta}))

    def request(self) -> None:
        """Log the llm_request of the current step (the chat plus the last tool message)."""
        sent = list(self.messages)
        if self.pending is not None:
            tool = {"role": "tool", "tool_call_id": self.call_id, "content": self.pending}
            sent.append(tool)
            self.messages.append(tool)
            self.pending = None
        self.log("llm_request", {"t": self.t, "messages": sent})

    def call(
        self,
        name: str,
        args: dict[str, Any],
        output: str = "",
        *,
        ok: bool = True,
        tests: bool | None = None,
        note: str | None = None,
        thought: str = "next step",
    ) -> None:
        """One step calling a tool: request, action, result (tests, DRIVER NOTE if given)."""
        self.request()
        self.call_id = f"call_{self.run_id}_{self.t}"
        arguments = json.dumps({**args, "thought": thought})
        function = {"name": name, "arguments": arguments}
        self.messages.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": self.call_id, "type": "function", "function": function}],
            }
        )
        raw = {"type": "tool_call", "name": name, "args": {**args, "thought": thought}}
        action = {"type": "tool_call", "name": name, "args": args, "thought": thought}
        self.log("llm_action", {"t": self.t, "raw": raw, "action": action})
        obs = {"ok": ok, "output": output, "meta": {}}
        self.log("tool_result", {"t": self.t, "tool": name, "args": args, "obs": obs})
        self.pending = output
        if tests is not None:
            test_output = "1 passed" if tests else "1 failed"
            self.last_test = {"ok": tests, "output": test_output}
            self.log("tests", self.last_test)
            self.pending = f"{output}\n\n[TESTS {'PASS' if tests else 'FAIL'}]\n{test_output}"
        if note is not None:
            self.log("reflection", {"t": self.t, "reflection": {"notes": [note]}})
            self.messages.append({"role": "system", "content": f"DRIVER NOTE:\n{note}"})
        self.t += 1

    def final(self, summary: str = "done", run_end: bool = True) -> None:
        """The final action, `final` (with test_result if tests ran) and `run_end`."""
        self.request()
        obj = {"type": "final", "summary": summary, "changes": []}
        self.messages.append({"role": "assistant", "content": json.dumps(obj)})
        self.log("llm_action", {"t": self.t, "raw": obj, "action": obj})
        final = dict(obj)
        if self.last_test is not None:
            final["test_result"] = {"ok": self.last_test["ok"], "summary": "", "output_snippet": ""}
        self.log("final", {"final": final})
        if run_end:
            self.end(summary)

    def end(self, summary: str = "Stopped: max iters reached.") -> None:
        """`run_end` with the run state (last_test null if no tests ran)."""
        state = {"notes": [], "files_touched": [], "last_test": self.last_test}
        self.log("run_end", {"run_id": self.run_id, "summary": summary, "state": state})

    def parse_error(self) -> None:
        """The model output does not parse: request then llm_parse_error (the run stops)."""
        self.request()
        raw = {"type": "tool_call", "name": "write_file", "args": "x"}
        self.log(
            "llm_parse_error", {"t": self.t, "error": "tool_call requires args object", "raw": raw}
        )


def text(*runs: AgentRun, interleave: bool = False) -> str:
    """JSONL text of the runs, one after another or interleaved line by line."""
    if not interleave:
        return "".join(f"{line}\n" for run in runs for line in run.lines)
    out: list[str] = []
    longest = max(len(run.lines) for run in runs)
    for i in range(longest):
        out.extend(f"{run.lines[i]}\n" for run in runs if i < len(run.lines))
    return "".join(out)


def success_run(run_id: str = "ok1", **kwargs: Any) -> AgentRun:
    """list_files, read_file, write_file (tests pass), final: three samples."""
    run = AgentRun(run_id, **kwargs)
    run.call("list_files", {"rel_dir": ".", "max_files": 50}, "quicksort.py\ntest_quicksort.py")
    run.call("read_file", {"rel_path": "quicksort.py", "max_chars": 4000}, "def quicksort(a): ...")
    run.call(
        "write_file",
        {"rel_path": "quicksort.py", "content": "def quicksort(a): return sorted(a)"},
        "Wrote quicksort.py (34 chars).",
        tests=True,
    )
    run.final()
    return run


def failed_run(run_id: str = "bad1", **kwargs: Any) -> AgentRun:
    """read_file, write_file (tests fail, DRIVER NOTE), final: tests failed, no samples."""
    run = AgentRun(run_id, **kwargs)
    run.call("read_file", {"rel_path": "quicksort.py", "max_chars": 4000}, "def quicksort(a): ...")
    run.call(
        "write_file",
        {"rel_path": "quicksort.py", "content": "def quicksort(a): return a"},
        "Wrote quicksort.py (26 chars).",
        tests=False,
        note="- The tests still fail.",
    )
    run.final()
    return run


def recovery_run(run_id: str = "rec1", **kwargs: Any) -> AgentRun:
    """A bad-argument read_file (DRIVER NOTE), its retry, a passing write: 2 samples (+1 with
    include_recovery)."""
    run = AgentRun(run_id, **kwargs)
    run.call("list_files", {"rel_dir": ".", "max_files": 50}, "quicksort.py")
    run.call(
        "read_file",
        {"rel_path": "quicksort.py"},
        "Invalid tool args for read_file: missing required argument(s): max_chars",
        ok=False,
        note="- Pass every declared argument.",
    )
    run.call("read_file", {"rel_path": "quicksort.py", "max_chars": 4000}, "def quicksort(a): ...")
    run.call(
        "write_file",
        {"rel_path": "quicksort.py", "content": "fixed"},
        "Wrote quicksort.py (5 chars).",
        tests=True,
    )
    run.final()
    return run


def run_tests_run(run_id: str = "rt1", **kwargs: Any) -> AgentRun:
    """A passing write, then a call of the driver-only run_tests (not ok): 1 sample."""
    run = AgentRun(run_id, **kwargs)
    run.call(
        "write_file",
        {"rel_path": "quicksort.py", "content": "fixed"},
        "Wrote quicksort.py (5 chars).",
        tests=True,
    )
    run.call("run_tests", {}, "run_tests is driver-only", ok=False)
    run.final()
    return run


def parse_error_run(run_id: str = "pe1", **kwargs: Any) -> AgentRun:
    """One ok call then an llm_parse_error: no run_end, not successful."""
    run = AgentRun(run_id, **kwargs)
    run.call("list_files", {"rel_dir": ".", "max_files": 50}, "quicksort.py")
    run.parse_error()
    return run


@dataclass
class Extracted:
    """Every table the traces room derives from a set of trace files."""

    events: Any
    quarantine: Any
    runs: Any
    sft: Any
    tools: Any
    dropped: Any
    summary: Any


def extract(folder: Any, files: dict[str, str | bytes], **options: Any) -> Extracted:
    """Write `files` under `folder`, ingest them and run the extraction with `options`."""
    import polars as pl

    from distill_assets.contracts.traces import RAW
    from distill_assets.defs.ingest import ingest_partition
    from distill_assets.defs.traces.sft_extraction import Extraction, ExtractOptions

    raw = folder / "raw"
    for name, content in files.items():
        path = raw / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    paths = sorted(str(p) for p in raw.rglob("*") if p.is_file())
    work = folder / "work"
    work.mkdir(exist_ok=True)
    result = ingest_partition(RAW, paths, raw_root=str(raw), workdir=work)
    with Extraction(result.bronze.path, ExtractOptions(**options)) as extraction:
        extraction.write_runs(work / "runs.parquet")
        extraction.write_sft_steps(work / "sft.parquet", "together")
        extraction.write_sft_steps(work / "tools.parquet", "tools")
        extraction.write_dropped_steps(work / "dropped.parquet")
        summary = extraction.summary()
    return Extracted(
        events=pl.read_parquet(result.bronze.path),
        quarantine=pl.read_parquet(result.quarantine.path),
        runs=pl.read_parquet(work / "runs.parquet"),
        sft=pl.read_parquet(work / "sft.parquet"),
        tools=pl.read_parquet(work / "tools.parquet"),
        dropped=pl.read_parquet(work / "dropped.parquet"),
        summary=summary,
    )
