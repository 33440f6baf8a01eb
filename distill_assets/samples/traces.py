"""Deterministic llm-repo-agent traces: the agent loop simulated on QuixBugs-style repair tasks.

Every line is what the llm-repo-agent trace writer appends (`{ts, kind, payload, run_id, meta}`,
`json.dumps(..., ensure_ascii=False)`): `run_start`, `llm_request` (the whole chat, with assistant
`tool_calls` and `tool` messages), `llm_usage`, `llm_action`, `driver_note`, `tool_result`, `tests`
(after every `write_file`), `reflection_request`/`reflection` (after a failed tool or test, then a
system `DRIVER NOTE` between the assistant tool call and its tool message), `llm_parse_error`,
`final`, `run_end`.

One *batch* is nine runs, one of each scenario, in four files (for `scale` K there are K batches;
batches are grouped 32 to a folder `gNNNN/` when K > 32):

- `rollouts-worker-1.jsonl.gz` — a success, a run whose tests keep failing (reflection + DRIVER
  NOTE), a success that also calls the driver-only `run_tests`; the three runs interleaved.
- `rollouts-worker-2.jsonl` — a success with a bad-argument call and its retry (DRIVER NOTE), a run
  that ends in `llm_parse_error`, a run cut short (no `run_end`; the file's last line is torn), and
  one bad line of every kind bronze quarantines (~5% of the records).
- `eval-<task>.jsonl` — an older writer (`type` instead of `kind`), UTF-8 BOM, CRLF line ends; a
  second success on worker-1's first task (near-duplicate samples across runs).
- `archive.jsonl.gz` — a run stopped by max iterations and a run that finished without tests (both
  unsuccessful), blank lines, and a tool output with invalid UTF-8 (kept, flagged).

Every 64th batch one run reads a multi-MB grep output (an uncapped writer), for benchmarks.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from distill_assets.samples import GeneratedDay

SOURCE = "traces"
BATCHES_PER_GROUP = 32
HUGE_OUTPUT_EVERY = 64
HUGE_OUTPUT_CHARS = 2_500_000
_BAD_BYTES_MARK = "\ue000"  # replaced by invalid UTF-8 bytes when the file is written

SYSTEM_PROMPT = (
    "You are a repo-fixing agent. You operate in a loop: choose ONE action, then wait for the "
    "tool result.\n"
    "- Call exactly one tool per turn (list_files, read_file, write_file, grep), passing every "
    "argument and a short 'thought'.\n"
    "- NEVER call run_tests: the driver runs the tests after every write_file.\n"
    '- When done, answer with JSON {"type":"final","summary":"...","changes":[...]}.\n'
)
REFLECTION_PROMPT = (
    "You are reviewing a repo-fixing agent's progress. Given the goal, a compact summary and the "
    'latest observation, answer with JSON {"notes":[...],"next_focus":"...",'
    '"risks":[...]}.'
)
MODELS = (
    ("Qwen/Qwen2.5-72B-Instruct-Turbo", "together"),
    ("gpt-4.1-mini", "openai"),
    ("Qwen/Qwen2.5-7B-Instruct-Turbo", "together"),
)
README = (
    "# QuixBugs (Python)\n\nEach program has one single-line defect. Tests live next to the "
    "program in `test_<name>.py` and run with `python -m pytest -q`.\n\n"
    + "".join(
        f"- `{n}`: {d}\n"
        for n, d in (
            ("quicksort", "sort a list, keeping duplicate elements"),
            ("gcd", "greatest common divisor by Euclid's algorithm"),
            ("bitcount", "number of 1-bits in a non-negative integer"),
            ("flatten", "flatten arbitrarily nested lists"),
            ("levenshtein", "edit distance between two strings"),
            ("is_valid_parenthesization", "balanced parentheses check"),
        )
    )
)


@dataclass(frozen=True)
class Task:
    """A one-line repair task: the buggy program, its fix, a wrong fix and its tests."""

    task_id: str
    name: str
    goal: str
    buggy: str
    fixed: str
    wrong: str
    tests: str
    pattern: str
    failure: str

    def in_fork(self, fork: int) -> Task:
        """Return the same task in another fork of the repository (fork 0 is the original)."""
        if fork == 0:
            return self
        return replace(
            self, task_id=f"{self.task_id}@fork{fork}", goal=f"{self.goal} (fork {fork})"
        )


def _tests(name: str, cases: list[tuple[str, str]]) -> str:
    body = "".join(
        f"\n\ndef test_{i}():\n    assert {name}({args}) == {want}\n"
        for i, (args, want) in enumerate(cases)
    )
    return f"from {name} import {name}{body}"


TASKS: tuple[Task, ...] = (
    Task(
        "quixbugs/quicksort",
        "quicksort",
        "Fix the bug in quicksort.py so that test_quicksort.py passes: duplicates are dropped.",
        "def quicksort(arr):\n    if not arr:\n        return []\n    pivot = arr[0]\n"
        "    lesser = quicksort([x for x in arr[1:] if x < pivot])\n"
        "    greater = quicksort([x for x in arr[1:] if x > pivot])\n"
        "    return lesser + [pivot] + greater\n",
        "def quicksort(arr):\n    if not arr:\n        return []\n    pivot = arr[0]\n"
        "    lesser = quicksort([x for x in arr[1:] if x < pivot])\n"
        "    greater = quicksort([x for x in arr[1:] if x >= pivot])\n"
        "    return lesser + [pivot] + greater\n",
        "def quicksort(arr):\n    if not arr:\n        return []\n    pivot = arr[0]\n"
        "    lesser = quicksort([x for x in arr[1:] if x <= pivot])\n"
        "    greater = quicksort([x for x in arr[1:] if x >= pivot])\n"
        "    return lesser + [pivot] + greater\n",
        _tests("quicksort", [("[3, 1, 2]", "[1, 2, 3]"), ("[2, 1, 2, 1]", "[1, 1, 2, 2]")]),
        "x > pivot",
        "E       assert [1, 2] == [1, 1, 2, 2]",
    ),
    Task(
        "quixbugs/gcd",
        "gcd",
        "gcd.py returns wrong results (it recurses on the wrong arguments). Fix it.",
        "def gcd(a, b):\n    if b == 0:\n        return a\n    else:\n"
        "        return gcd(a % b, b)\n",
        "def gcd(a, b):\n    if b == 0:\n        return a\n    else:\n"
        "        return gcd(b, a % b)\n",
        "def gcd(a, b):\n    if a == 0:\n        return b\n    else:\n"
        "        return gcd(a % b, b)\n",
        _tests("gcd", [("35, 21", "7"), ("13, 13", "13"), ("17, 0", "17")]),
        "gcd(a % b",
        "E       RecursionError: maximum recursion depth exceeded in comparison",
    ),
    Task(
        "quixbugs/bitcount",
        "bitcount",
        "bitcount.py never terminates for some inputs. Make test_bitcount.py pass.",
        "def bitcount(n):\n    count = 0\n    while n:\n        n ^= n - 1\n        count += 1\n"
        "    return count\n",
        "def bitcount(n):\n    count = 0\n    while n:\n        n &= n - 1\n        count += 1\n"
        "    return count\n",
        "def bitcount(n):\n    count = 0\n    while n > 1:\n        n ^= n - 1\n"
        "        count += 1\n"
        "    return count\n",
        _tests("bitcount", [("127", "7"), ("128", "1"), ("0", "0")]),
        "n ^= n - 1",
        "E       Failed: Timeout >2.0s",
    ),
    Task(
        "quixbugs/flatten",
        "flatten",
        "flatten.py yields nested lists instead of their elements. Fix the generator.",
        "def flatten(arr):\n    for x in arr:\n        if isinstance(x, list):\n"
        "            for y in flatten(x):\n                yield y\n        else:\n"
        "            yield flatten(x)\n",
        "def flatten(arr):\n    for x in arr:\n        if isinstance(x, list):\n"
        "            for y in flatten(x):\n                yield y\n        else:\n"
        "            yield x\n",
        "def flatten(arr):\n    for x in arr:\n        if isinstance(x, list):\n"
        "            yield x\n        else:\n            yield flatten(x)\n",
        _tests("list(flatten", [("[[1, [], [2, 3]], [[4]], 5])", "[1, 2, 3, 4, 5]")]),
        "yield flatten(x)",
        "E       assert [<generator object flatten at 0x7f3a>] == [1, 2, 3, 4, 5]",
    ),
    Task(
        "quixbugs/levenshtein",
        "levenshtein",
        "levenshtein.py overcounts edits when the first characters match. Fix it.",
        "def levenshtein(source, target):\n    if source == '' or target == '':\n"
        "        return len(source) or len(target)\n    elif source[0] == target[0]:\n"
        "        return 1 + levenshtein(source[1:], target[1:])\n    else:\n"
        "        return 1 + min(levenshtein(source, target[1:]),\n"
        "                       levenshtein(source[1:], target[1:]),\n"
        "                       levenshtein(source[1:], target))\n",
        "def levenshtein(source, target):\n    if source == '' or target == '':\n"
        "        return len(source) or len(target)\n    elif source[0] == target[0]:\n"
        "        return levenshtein(source[1:], target[1:])\n    else:\n"
        "        return 1 + min(levenshtein(source, target[1:]),\n"
        "                       levenshtein(source[1:], target[1:]),\n"
        "                       levenshtein(source[1:], target))\n",
        "def levenshtein(source, target):\n    if source == '' or target == '':\n"
        "        return 0\n    elif source[0] == target[0]:\n"
        "        return levenshtein(source[1:], target[1:])\n    else:\n"
        "        return 1 + min(levenshtein(source, target[1:]),\n"
        "                       levenshtein(source[1:], target))\n",
        _tests("levenshtein", [("'electron', 'neutron'", "3"), ("'kitten', 'sitting'", "3")]),
        "return 1 + levenshtein",
        "E       assert 8 == 3",
    ),
    Task(
        "quixbugs/is_valid_parenthesization",
        "is_valid_parenthesization",
        "is_valid_parenthesization.py accepts unbalanced strings like '(()'. Fix it.",
        "def is_valid_parenthesization(parens):\n    depth = 0\n    for paren in parens:\n"
        "        if paren == '(':\n            depth += 1\n        else:\n            depth -= 1\n"
        "            if depth < 0:\n                return False\n    return True\n",
        "def is_valid_parenthesization(parens):\n    depth = 0\n    for paren in parens:\n"
        "        if paren == '(':\n            depth += 1\n        else:\n            depth -= 1\n"
        "            if depth < 0:\n                return False\n    return depth == 0\n",
        "def is_valid_parenthesization(parens):\n    depth = 0\n    for paren in parens:\n"
        "        if paren == '(':\n            depth += 1\n        else:\n            depth -= 1\n"
        "    return depth >= 0\n",
        _tests(
            "is_valid_parenthesization",
            [("'((()()))()'", "True"), ("'(()'", "False"), ("')()('", "False")],
        ),
        "return True",
        "E       assert True == False",
    ),
)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@dataclass
class _Run:
    """One simulated agent run, recording its trace lines as (sort key, line) pairs."""

    rng: random.Random
    task: Task
    ts: float
    kind_key: str = "kind"
    logs_usage: bool = True
    lines: list[tuple[float, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.run_id = f"{self.rng.getrandbits(40):010x}"
        model, provider = self.rng.choice(MODELS)
        self.compact = provider == "openai"
        self.meta = {
            "task_id": self.task.task_id,
            "repo": f"/tmp/sbx_{self.rng.getrandbits(32):08x}",
            "goal": self.task.goal,
            "test_cmd": "python -m pytest -q",
            "model": model,
            "provider": provider,
        }
        self.meta_json = _json(self.meta)
        # the chat as pre-serialized messages (each request re-sends all of them)
        self.messages = [
            _json({"role": "system", "content": SYSTEM_PROMPT}),
            _json({"role": "user", "content": f"GOAL:\n{self.task.goal}"}),
        ]
        self.t = 0
        self.pending_tool: str | None = None
        self.call_id: str | None = None
        self.notes: list[str] = []
        self.reflection_notes: list[str] = []
        self.touched: list[str] = []
        self.last_test: dict[str, Any] | None = None
        self.log("run_start", _json({"run_id": self.run_id, "goal": self.task.goal}))

    def log(self, kind: str, payload_json: str) -> None:
        """Append one event line; `payload_json` is the serialized payload."""
        self.ts += self.rng.uniform(0.05, 4.0)
        line = (
            f'{{"ts": {self.ts:.6f}, "{self.kind_key}": "{kind}", "payload": {payload_json}, '
            f'"run_id": "{self.run_id}", "meta": {self.meta_json}}}'
        )
        self.lines.append((self.ts, line))

    def _request(self) -> None:
        sent = list(self.messages)
        if self.pending_tool is not None:
            tool_msg = _json(
                {"role": "tool", "tool_call_id": self.call_id, "content": self.pending_tool}
            )
            sent.append(tool_msg)
            self.messages.append(tool_msg)
            self.pending_tool = None
        self.log("llm_request", f'{{"t": {self.t}, "messages": [{", ".join(sent)}]}}')

    def _usage(self, phase: str = "action") -> None:
        if not self.logs_usage:
            return
        prompt = sum(len(m) for m in self.messages) // 4
        done = self.rng.randint(20, 160)
        usage = {"t": self.t, "prompt_tokens": prompt, "completion_tokens": done}
        self.log("llm_usage", _json({**usage, "total_tokens": prompt + done, "phase": phase}))

    def call(self, name: str, args: dict[str, Any], thought: str, result: tuple[bool, str]) -> None:
        """One iteration calling a tool; `result` is the tool's (ok, output)."""
        self._request()
        self.call_id = "call_" + "".join(
            self.rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            for _ in range(24)
        )
        arguments = {**args, "thought": thought}
        separators = (",", ":") if self.compact else (", ", ": ")
        encoded = json.dumps(arguments, ensure_ascii=False, separators=separators)
        function = {"name": name, "arguments": encoded}
        self.messages.append(
            _json(
                {
                    "role": "assistant",
                    "tool_calls": [{"id": self.call_id, "type": "function", "function": function}],
                }
            )
        )
        self._usage()
        raw = {"type": "tool_call", "name": name, "args": arguments}
        action = {"type": "tool_call", "name": name, "args": args, "thought": thought}
        self.log("llm_action", _json({"t": self.t, "raw": raw, "action": action}))
        ok, output = result
        if name == "write_file" and ok:
            self.touched.append(args["rel_path"])
            self.notes.append(f"touched {args['rel_path']}")
            self.log("driver_note", _json({"t": self.t, "note": f"touched {args['rel_path']}"}))
        obs = {"ok": ok, "output": output, "meta": _obs_meta(name, args, ok)}
        self.log("tool_result", _json({"t": self.t, "tool": name, "args": args, "obs": obs}))
        self.pending_tool = output
        tests_ok = None
        if name == "write_file" and ok:
            tests_ok = args["content"] == self.task.fixed
            test_output = _pytest_output(self.task, tests_ok)
            self.last_test = {"ok": tests_ok, "output": test_output}
            self.log("tests", _json(self.last_test))
            status = "PASS" if tests_ok else "FAIL"
            self.pending_tool = f"{output}\n\n[TESTS {status}]\n{test_output[:2000]}"
        if not ok or tests_ok is False:
            self._reflect(output if not ok else self.last_test["output"])
        self.t += 1

    def _reflect(self, observation: str) -> None:
        summary = {"files_touched": self.touched, "notes": self.notes[-4:]}
        question = {"goal": self.task.goal, "summary": summary, "latest_observation": observation}
        messages = [
            {"role": "system", "content": REFLECTION_PROMPT},
            {"role": "user", "content": json.dumps(question, indent=2)},
        ]
        self.log("reflection_request", _json({"t": self.t, "messages": messages}))
        self._usage("reflection")
        if "Invalid tool args" in observation:
            notes = ["The last call omitted a required argument.", "Pass every declared argument."]
            focus, risks = "Repeat the call with all arguments.", ["Wasting iterations"]
        else:
            notes = ["The change did not make the tests pass.", "Re-read the failing assertion."]
            focus, risks = f"Compare {self.task.name} with the failing case.", ["Overfitting"]
        self.reflection_notes.extend(notes)
        reflection = {"notes": notes, "next_focus": focus, "risks": risks}
        self.log("reflection", _json({"t": self.t, "reflection": reflection}))
        text = "\n".join([*(f"- {n}" for n in notes), f"Next focus: {focus}"])
        text += "\nRisks: " + "; ".join(risks)
        self.messages.append(_json({"role": "system", "content": f"DRIVER NOTE:\n{text}"}))

    def loop_note(self) -> None:
        """Log the driver's loop tripwire (recorded in the trace, not sent to the model)."""
        note = "Loop detected: change approach, inspect different evidence, then replan."
        self.notes.append(note)
        self.log("driver_note", _json({"t": self.t, "note": note}))

    def final(self, summary: str, thought: str) -> None:
        """Answer with a final action; the run ends with `final` and `run_end`."""
        self._request()
        changes = [{"path": p, "description": "Fixed the defect"} for p in self.touched]
        obj = {"type": "final", "summary": summary, "changes": changes, "thought": thought}
        self.messages.append(_json({"role": "assistant", "content": _json(obj)}))
        self._usage()
        self.log("llm_action", _json({"t": self.t, "raw": obj, "action": obj}))
        final_obj = dict(obj)
        if self.last_test is not None:
            out = self.last_test["output"].strip()
            ok = self.last_test["ok"]
            reason = "All tests passed." if ok else out.splitlines()[0]
            final_obj["test_result"] = {"ok": ok, "summary": reason, "output_snippet": out[:500]}
        self.log("final", _json({"final": final_obj}))
        self._end(summary)

    def stop_max_iters(self) -> None:
        """Stop at the iteration limit: `run_end` without `final`."""
        self._end("Stopped: max iters reached.")

    def _end(self, summary: str) -> None:
        state = {
            "notes": self.notes,
            "reflection_notes": self.reflection_notes,
            "reflection_next_focus": [],
            "reflection_risks": [],
            "files_touched": self.touched,
            "last_test": self.last_test,
            "run_id": self.run_id,
        }
        payload = {"run_id": self.run_id, "summary": summary, "state": state}
        self.log("run_end", _json(payload))

    def parse_error(self) -> None:
        """Log an output that does not parse: `llm_parse_error`, then the agent raises."""
        self._request()
        self._usage()
        raw = {"type": "tool_call", "name": "write_file", "args": f"{self.task.name}.py"}
        error = "tool_call requires args object"
        self.log("llm_parse_error", _json({"t": self.t, "error": error, "raw": raw}))

    def torn_request(self) -> str:
        """Return the first half of the next `llm_request` line (a write cut short)."""
        self._request()
        _, line = self.lines.pop()
        return line[: len(line) // 2]


def _obs_meta(name: str, args: dict[str, Any], ok: bool) -> dict[str, Any]:
    if not ok:
        return {"error": "invalid_args" if name != "run_tests" else "driver_only"}
    return {k: v for k, v in args.items() if k != "content"}


def _pytest_output(task: Task, ok: bool) -> str:
    count = task.tests.count("def test_")
    if ok:
        return f"{'.' * count}{' ' * (70 - count)}[100%]\n{count} passed in 0.03s"
    return (
        f"F{'.' * (count - 1)}{' ' * (70 - count)}[100%]\n"
        f"{'=' * 35} FAILURES {'=' * 35}\n{'_' * 20} test_0 {'_' * 20}\n\n"
        f"    def test_0():\n>       assert {task.name}(...)\n{task.failure}\n\n"
        f"test_{task.name}.py:5: AssertionError\n{'=' * 20} short test summary info {'=' * 20}\n"
        f"FAILED test_{task.name}.py::test_0\n1 failed, {count - 1} passed in 0.05s"
    )


def _listing(task: Task) -> str:
    names = [f"{task.name}.py", f"test_{task.name}.py", "README.md", "conftest.py", "pytest.ini"]
    return "\n".join(sorted(names))


def _explore(run: _Run, huge: bool) -> None:
    """Make the opening moves every run shares: list the repo, read the program, maybe more."""
    rng, task = run.rng, run.task
    run.call(
        "list_files",
        {"rel_dir": ".", "max_files": 50},
        "Survey the repo layout first.",
        (True, _listing(task)),
    )
    run.call(
        "read_file",
        {"rel_path": f"{task.name}.py", "max_chars": 4000},
        f"Read {task.name}.py to find the defect.",
        (True, task.buggy),
    )
    if rng.random() < 0.5:
        run.call(
            "read_file",
            {"rel_path": f"test_{task.name}.py", "max_chars": 4000},
            "Check what the tests expect.",
            (True, task.tests),
        )
    if rng.random() < 0.25:
        run.call(
            "read_file",
            {"rel_path": "README.md", "max_chars": 12000},
            "Look for conventions in the README.",
            (True, README),
        )
    if huge:
        hit = f"vendor/generated.py:{{}}:    return {task.pattern}  # generated\n"
        output = "".join(hit.format(i) for i in range(HUGE_OUTPUT_CHARS // len(hit)))
        run.call(
            "grep",
            {"pattern": task.pattern, "rel_dir": ".", "max_hits": 1_000_000},
            "Find every occurrence of the suspicious expression.",
            (True, output),
        )
    elif rng.random() < 0.4:
        run.call(
            "grep",
            {"pattern": task.pattern, "rel_dir": ".", "max_hits": 20},
            "Locate the suspicious expression.",
            (True, f"{task.name}.py:5:{task.pattern}"),
        )


def _write(run: _Run, content: str) -> None:
    path = f"{run.task.name}.py"
    run.call(
        "write_file",
        {"rel_path": path, "content": content},
        "Apply the one-line fix.",
        (True, f"Wrote {path} ({len(content)} chars)."),
    )


def _success(run: _Run, huge: bool = False) -> None:
    _explore(run, huge)
    _write(run, run.task.fixed)
    run.final(f"Fixed {run.task.name}; all tests pass.", "Tests pass; done.")


def _tests_failed(run: _Run, huge: bool = False) -> None:
    _explore(run, huge)
    _write(run, run.task.wrong)
    run.call(
        "read_file",
        {"rel_path": f"test_{run.task.name}.py", "max_chars": 4000},
        "Re-read the failing test.",
        (True, run.task.tests),
    )
    _write(run, run.task.wrong.replace("    ", "  "))
    run.final(f"Attempted a fix for {run.task.name}; tests still fail.", "Out of ideas.")


def _run_tests_call(run: _Run, huge: bool = False) -> None:
    _explore(run, huge)
    _write(run, run.task.fixed)
    run.call("run_tests", {}, "Double-check the tests.", (False, "run_tests is driver-only"))
    run.final(f"Fixed {run.task.name}.", "Tests passed after the write.")


def _recovery(run: _Run, huge: bool = False) -> None:
    task = run.task
    run.call(
        "list_files",
        {"rel_dir": ".", "max_files": 50},
        "Survey the repo layout first.",
        (True, _listing(task)),
    )
    run.call(
        "read_file",
        {"rel_path": f"{task.name}.py"},
        "Read the program.",
        (False, "Invalid tool args for read_file: missing required argument(s): max_chars"),
    )
    run.call(
        "read_file",
        {"rel_path": f"{task.name}.py", "max_chars": 4000},
        "Retry with every argument.",
        (True, task.buggy),
    )
    _write(run, task.fixed)
    run.final(f"Fixed {task.name}; all tests pass.", "Tests pass; done.")


def _parse_error(run: _Run, huge: bool = False) -> None:
    _explore(run, huge)
    run.parse_error()


def _max_iters(run: _Run, huge: bool = False) -> None:
    for _ in range(2):
        run.call(
            "list_files",
            {"rel_dir": ".", "max_files": 50},
            "Survey the repo layout.",
            (True, _listing(run.task)),
        )
    run.loop_note()
    for _ in range(2):
        run.call(
            "grep",
            {"pattern": "TODO", "rel_dir": ".", "max_hits": 20},
            "Look for hints.",
            (True, "(no matches)"),
        )
    run.stop_max_iters()


def _no_tests(run: _Run, huge: bool = False) -> None:
    _explore(run, huge)
    run.final("The code looks correct already.", "No change needed.")


def _incomplete(run: _Run, huge: bool = False) -> None:
    _explore(run, huge)


Scenario = Callable[[_Run, bool], None]
# file stem -> [(scenario, task offset)]; the eval file repeats worker-1's first task
FILES: dict[str, list[tuple[Scenario, int]]] = {
    "rollouts-worker-1": [(_success, 0), (_tests_failed, 1), (_run_tests_call, 2)],
    "rollouts-worker-2": [(_recovery, 3), (_parse_error, 4), (_incomplete, 5)],
    "eval": [(_success, 0)],
    "archive": [(_max_iters, 4), (_no_tests, 2)],
}


def _bad_lines(rng: random.Random, ts: float) -> list[tuple[str, str]]:
    """One line of every kind bronze quarantines (except the positional torn last line)."""
    rid = f"{rng.getrandbits(40):010x}"
    ok = {"ts": ts, "kind": "llm_usage", "payload": {"t": 0}, "run_id": rid, "meta": {}}
    return [
        ("invalid_json", f'{{"ts": {ts:.6f}, "kind": "tool_result", "payload": {{"t": 3, "obs": '),
        ("not_an_object", '["llm_usage", {"t": 0}]'),
        ("missing_kind", _json({k: v for k, v in ok.items() if k != "kind"})),
        ("invalid_kind", _json({**ok, "kind": 7})),
        ("conflicting_kind", _json({**ok, "type": "llm_request"})),
        ("missing_run_id", _json({k: v for k, v in ok.items() if k != "run_id"})),
        ("invalid_run_id", _json({**ok, "run_id": ""})),
        ("missing_ts", _json({k: v for k, v in ok.items() if k != "ts"})),
        ("invalid_ts", _json({**ok, "ts": "2026-11-19T10:00:00Z"})),
        ("missing_payload", _json({k: v for k, v in ok.items() if k != "payload"})),
        ("invalid_payload", _json({**ok, "payload": "t=0"})),
        ("invalid_meta", _json({**ok, "meta": "quixbugs"})),
        ("missing_t", _json({**ok, "kind": "tool_result", "payload": {"tool": "grep"}})),
        (
            "invalid_messages",
            _json({**ok, "kind": "llm_request", "payload": {"t": 0, "messages": {}}}),
        ),
    ]


def _day_start(day: str) -> float:
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp() + 3600.0


def _write_file(path: Path, lines: list[str], *, bom: bool, crlf: bool, torn: str | None) -> None:
    sep = "\r\n" if crlf else "\n"
    text = ("\ufeff" if bom else "") + "".join(line + sep for line in lines) + (torn or "")
    data = text.encode("utf-8").replace(_BAD_BYTES_MARK.encode("utf-8"), b"\xff\xfe")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    path.write_bytes(data)


def generate_day(
    out_dir: Path | str, day: str, scale: int, seed: int, *, plain: bool = False
) -> GeneratedDay:
    """Write `scale` batches of runs for `day` under `<out_dir>/traces/<day>/`.

    `plain` writes every file as uncompressed `.jsonl` (benchmarks measure JSONL throughput).
    """
    folder = Path(out_dir) / SOURCE / day
    result = GeneratedDay(source=SOURCE, day=day)
    groups = (scale + BATCHES_PER_GROUP - 1) // BATCHES_PER_GROUP
    rotation = date.fromisoformat(day).toordinal()
    for group in range(groups):
        batches = range(group * BATCHES_PER_GROUP, min(scale, (group + 1) * BATCHES_PER_GROUP))
        where = folder / f"g{group:04d}" if groups > 1 else folder
        for stem, scenarios in FILES.items():
            lines: list[tuple[float, str]] = []
            torn = None
            for batch in batches:
                rng = random.Random(f"{seed}:{day}:{batch}:{stem}")
                start = _day_start(day) + rng.uniform(0, 600) + 72_000 * batch / scale
                for slot, (scenario, offset) in enumerate(scenarios):
                    task = TASKS[(rotation + batch * 3 + offset) % len(TASKS)].in_fork(batch)
                    # the eval file comes from an older writer: `type`, no llm_usage events
                    old = stem == "eval"
                    begin = start + slot * rng.uniform(1, 20)
                    run = _Run(rng, task, begin, "type" if old else "kind", logs_usage=not old)
                    huge = batch % HUGE_OUTPUT_EVERY == HUGE_OUTPUT_EVERY - 1 and (
                        stem,
                        slot,
                    ) == ("rollouts-worker-1", 0)
                    scenario(run, huge)
                    if scenario is _incomplete and batch == batches[-1]:
                        torn = run.torn_request()
                    lines.extend(run.lines)
                if stem == "rollouts-worker-2":
                    for reason, line in _bad_lines(rng, start + 30.0):
                        lines.append((start + rng.uniform(0, 60), line))
                        result.bad_records[reason] = result.bad_records.get(reason, 0) + 1
                if stem == "archive":
                    _mark_invalid_utf8(lines, rng)
            lines.sort(key=lambda item: item[0])
            text_lines = [line for _, line in lines]
            if stem == "archive":
                text_lines = _with_blank_lines(text_lines)
            name = {
                "rollouts-worker-1": "rollouts-worker-1.jsonl.gz",
                "eval": f"eval-{TASKS[(rotation + batches[0] * 3) % len(TASKS)].name}.jsonl",
                "archive": "archive.jsonl.gz",
            }
            path = where / name.get(stem, f"{stem}.jsonl")
            if plain:
                path = path.with_name(path.name.removesuffix(".gz"))
            _write_file(path, text_lines, bom=stem == "eval", crlf=stem == "eval", torn=torn)
            result.files.append(path)
            result.records += sum(1 for line in text_lines if line.strip()) + (1 if torn else 0)
            if torn:
                result.bad_records["torn_last_line"] = (
                    result.bad_records.get("torn_last_line", 0) + 1
                )
    return result


def _mark_invalid_utf8(lines: list[tuple[float, str]], rng: random.Random) -> None:
    """Put invalid UTF-8 bytes in one tool output of the batch (a binary file read)."""
    candidates = [i for i, (_, line) in enumerate(lines) if '"kind": "tool_result"' in line]
    i = rng.choice(candidates)
    ts, line = lines[i]
    lines[i] = (ts, line.replace('"output": "', f'"output": "{_BAD_BYTES_MARK}', 1))


def _with_blank_lines(lines: list[str]) -> list[str]:
    out: list[str] = []
    for i, line in enumerate(lines):
        out.append(line)
        if i % 9 == 4:
            out.append("")
    return out
