"""Rules for agent traces → step-level SFT samples (`sft-extract`).

See docs/sources/traces.md#agent-traces.

Everything here is data the trace assets apply; the module's content hash is their `code_version`.

- **Tools** (docs/sources/traces.md#filtering-rules; llm-repo-agent's tool schema): the four
  tools a model may call and their arguments. Every declared argument is required, as the agent
  enforces it (a missing one gives `ok: false`, "Invalid tool args"). `run_tests` is driver-only and
  never a target.
- **Success** (docs/sources/traces.md#success): `run_end.payload.state.last_test.ok`, else
  `final.payload.final.test_result.ok`; a run with neither is not successful.
- **Options** (`SFTExtractConfig` defaults plus the "future enhancements";
  docs/sources/traces.md#options).
- **Formats**: how a tool result and a DRIVER NOTE read in the `together` (content-only) format,
  and the role grammars every sample is validated against before it is written.
- **Quality score** weights of `sft_steps.quality_score`.
"""

from __future__ import annotations

import json
from typing import Any

# --- tools ---------------------------------------------------------------------------------------
# name -> (description, [(argument, JSON type, description)]) — llm-repo-agent's TOOL_DEFINITIONS.
KNOWN_TOOLS: dict[str, tuple[str, list[tuple[str, str, str]]]] = {
    "list_files": (
        "List files under a repo-relative directory.",
        [
            ("rel_dir", "string", "Directory path relative to repo root."),
            ("max_files", "integer", "Max files to list before truncating."),
        ],
    ),
    "read_file": (
        "Read a text file under the repo (repo-relative path).",
        [
            ("rel_path", "string", "Path to the file to read."),
            ("max_chars", "integer", "Max characters to return."),
        ],
    ),
    "grep": (
        "Search for a pattern in files under a repo-relative directory.",
        [
            ("pattern", "string", "Literal substring to search for."),
            ("rel_dir", "string", "Directory to search under."),
            ("max_hits", "integer", "Max matches to return before truncating."),
        ],
    ),
    "write_file": (
        "Write/replace a file under the repo (repo-relative path).",
        [
            ("rel_path", "string", "Path to write (relative to repo root)."),
            ("content", "string", "Full file contents to write."),
        ],
    ),
}
# JSON schema type -> the json_type() names DuckDB reports for a valid value of it
JSON_TYPE_NAMES: dict[str, list[str]] = {
    "string": ["VARCHAR"],
    "integer": ["BIGINT", "UBIGINT"],
}
# The optional reasoning channel the agent allows in every call's arguments; it is not an argument
# of the tool, so it is removed from the canonical tool-call JSON.
THOUGHT_ARG = "thought"


def tool_schemas() -> list[dict[str, Any]]:
    """Return the OpenAI/TRL function schemas of the known tools (`sft_tools`' `tools` column)."""
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {a: {"type": t, "description": d} for a, t, d in args},
                    "required": [a for a, _, _ in args],
                    "additionalProperties": False,
                },
            },
        }
        for name, (description, args) in KNOWN_TOOLS.items()
    ]


def tools_json() -> str:
    """Return `tool_schemas()` as the compact JSON string stored in the `tools` column."""
    return json.dumps(tool_schemas(), ensure_ascii=False, separators=(",", ":"))


def tool_arg_rows() -> list[dict[str, Any]]:
    """Return one row per (tool, argument): the table the step filters join against."""
    return [
        {"tool": name, "arg": arg, "json_types": JSON_TYPE_NAMES[kind]}
        for name, (_, args) in KNOWN_TOOLS.items()
        for arg, kind, _ in args
    ]


# --- success -------------------------------------------------------------------------------------
SUCCESS_RULE_RUN_END = "run_end.last_test"
SUCCESS_RULE_FINAL = "final.test_result"
SUCCESS_RULE_NONE = "none"

# --- options (SFTExtractConfig defaults, docs/sources/traces.md#options) --------------------------
REQUIRE_SUCCESS = True
REQUIRE_VALID_TOOL_OK = True
# tool outputs in a sample's context are cut to this many characters (0: no cut)
MAX_CONTEXT_CHARS = 8000
# the step right after a failed tool call (the retry that recovers from it) is a "recovery" sample:
# dropped as `recovery_step` unless included; included ones are marked and score lower
INCLUDE_RECOVERY = False
# future enhancements, on by default. Dedup: a sample with the same system prompt, goal, tool-call
# history and target as an earlier one (another run of the same task) is dropped as `duplicate`;
# tool outputs are not compared (they differ in timings and paths). Validation: a sample is built
# only if its request has the role grammar below and every call has JSON-object arguments.
DEDUP = True
VALIDATE = True
# `distill sft-extract` reproduces the original extractor exactly
# (docs/sources/traces.md#sft-extract): its SFTExtractConfig drops neither recovery steps nor
# cross-run duplicates (both are "future enhancements"), so every successful tool call of a
# successful run is a sample; `--exclude-recovery` and `--dedup` opt in to the two filters the
# assets apply.
SFT_EXTRACT_INCLUDE_RECOVERY = True
SFT_EXTRACT_DEDUP = False
# train/eval split by task: a split group (task id, else a hash of the goal) goes to eval when
# sha256(group)[:8] (big-endian) % SPLIT_BUCKETS < EVAL_FRACTION * SPLIT_BUCKETS
EVAL_FRACTION = 0.1
SPLIT_BUCKETS = 10_000

# --- formats -------------------------------------------------------------------------------------
# `together`: a tool message becomes a user turn with this prefix; a DRIVER NOTE the agent put
# between an assistant tool call and its tool message is appended to that user turn after the tool
# output, separated by NOTE_SEPARATOR. `tools`: the notes of a tool call become one user message
# (joined by NOTE_SEPARATOR) right after its tool message (a tool message must directly follow its
# assistant tool call, and chat templates reject a system message after the first turn).
TOOL_RESULT_PREFIX = "[tool_result]\n"
NOTE_SEPARATOR = "\n\n"
# role grammars (roles joined by ","). A request the agent sent: system prompt, GOAL, then per tool
# call the assistant message and exactly one tool message, with DRIVER NOTE system messages
# anywhere after the assistant message. The two output formats every written sample must match:
REQUEST_ROLE_ORDER = r"^system,user(,assistant(,system)*,tool(,system)*)*$"
TOGETHER_ROLE_ORDER = r"^system,user(,assistant,user)*,assistant$"
TOOLS_ROLE_ORDER = r"^system,user(,assistant,tool(,user)?)*,assistant$"
# the k-th tool call of a `tools` sample gets id f"{TOOL_CALL_ID_PREFIX}{k}" (provider ids: noise)
TOOL_CALL_ID_PREFIX = "call_"

# --- quality score of a sample -------------------------------------------------------------------
# quality_score = clip(BASE - NOT_SUCCESSFUL·[run not successful] - RECOVERY·[recovery sample]
#                      - TRUNCATED·[a tool output in the context was cut]
#                      - PER_EARLIER_FAILED_CALL·min(failed calls earlier in the run, MAX), 0, 1)
QUALITY_BASE = 1.0
QUALITY_PENALTY_RUN_NOT_SUCCESSFUL = 0.5
QUALITY_PENALTY_RECOVERY = 0.2
QUALITY_PENALTY_TRUNCATED_CONTEXT = 0.1
QUALITY_PENALTY_PER_EARLIER_FAILED_CALL = 0.05
QUALITY_MAX_EARLIER_FAILED_CALLS = 4
