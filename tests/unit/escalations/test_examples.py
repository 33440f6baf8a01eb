"""Pure transform records → distillation_examples: reasoning type, steps, flags, exact scores."""

from __future__ import annotations

import random
import re
from typing import Any

import polars as pl
import pytest

from distill_assets.contracts.escalations import DistillationExample
from distill_assets.defs.escalations import examples, offline_extraction
from distill_assets.rules import escalations as rules
from distill_assets.samples.escalations.scenarios import SCENARIOS
from tests.unit.escalations.frames import example_frame


def build(*records: dict[str, Any]) -> list[dict[str, Any]]:
    return example_frame(*records).to_dicts()


def one(**fields: Any) -> dict[str, Any]:
    return build(fields)[0]


# The seed's "Example: Complete Distillation Record" (interaction fields only).
SEED_RESPONSE = (
    "This error occurs when you try to call .map() on a variable that's undefined. Let me walk "
    "through the debugging steps:\n\n1. **Identify the variable**: Look at the line number in the "
    "error. What variable is being mapped?\n\n2. **Trace the data flow**: Where does this variable "
    "come from? Common sources:\n   - API response that hasn't arrived yet\n   - State that wasn't "
    "initialized\n   - Prop that wasn't passed\n\n3. **Add proper guards**: There are several "
    "patterns:\n   ```jsx\n   // Optional chaining (cleanest)\n   data?.map(item => ...)\n   \n"
    "   // Default value\n   (data || []).map(item => ...)\n   \n   // Early return\n"
    "   if (!data) return <Loading />;\n   return data.map(item => ...);\n   ```\n\n"
    "4. **Fix the root cause**: The guard is a band-aid. Find why data is undefined:\n"
    "   - Initialize state properly: `useState([])`\n   - Check API error handling\n"
    "   - Verify prop types\n\nFor React specifically, this often happens with:\n"
    "- `useState()` without initial value\n- Async data not handled with loading state\n"
    "- Missing null check on optional props"
)
SEED_RECORD = {
    "id": "a7f3b2c1d4e5f6a8",
    "session_id": "sess_20260124_143022",
    "created_at": 1737745822.0,
    "query": "How do I fix this error: TypeError: Cannot read properties of undefined "
    "(reading 'map')",
    "query_context": "User is working on a React component in SAMControlCenter project",
    "sam_attempt": "The error means you're trying to use .map() on undefined. Try adding a check "
    "like: if (data) { data.map(...) }",
    "sam_confidence": 0.4,
    "claude_response": SEED_RESPONSE,
}
QUICKSORT = (
    "Actually, quicksort is O(n log n) on average. The correct worst case is O(n^2), which "
    "happens with a bad pivot choice on sorted input."
)


def test_seed_example_extracts_every_part_of_the_seed_record_offline() -> None:
    row = one(**SEED_RECORD)
    assert row["reasoning_type"] == "chain_of_thought"  # the seed labels it so
    assert [(s["step_num"], s["action"], s["content"]) for s in row["reasoning_steps"]] == [
        (1, "identify", "Identify the variable"),
        (2, "trace", "Trace the data flow"),
        (3, "mitigate", "Add proper guards"),
        (4, "fix", "Fix the root cause"),
    ]  # the seed's own actions
    assert row["reasoning_steps"][3]["reasoning"] == (
        "The guard is a band-aid. Find why data is undefined:"
    )
    assert (row["domain"], row["subdomain"], row["task_type"]) == ("code", "javascript", "debug")
    # the seed's hand label is 5; by the rules (issue 27: number and depth of steps):
    # 1 + 161//150 + (>= 3 and >= 4 steps) + (nested bullets under step 2) + code + context
    assert row["complexity"] == 7
    assert row["token_count"] == 161
    assert row["quality_flags"] == []
    [error] = row["corrections"]["sam_errors"]
    assert error == {
        "error_type": "incomplete",  # the seed's type: the attempt is a quarter of the answer
        "what_sam_said": "Try adding a check like: if (data) { data.map(...) }",  # = the seed's
        "what_was_wrong": rules.SAM_ERROR_DESCRIPTIONS["incomplete"],
        "correct_answer": "This error occurs when you try to call .map() on a variable that's "
        "undefined. Let me walk through the debugging steps:",
    }
    assert row["corrections"]["improvements"] == [
        "Explain why the problem occurs",
        "Work through it step by step",
        "Show multiple solution patterns",
        "Address the root cause, not just the symptom",
        "Include working code",
    ]
    assert row["principles"] == [
        {
            "principle": rules.ROOT_CAUSE_PRINCIPLE,  # the seed's first principle
            "context": SEED_RECORD["query"],
            "importance": 0.9,
        }
    ]
    # 0.5 + 0.1 (4 steps) + 0.15 (SAM error) + 0.1 (principle) + 0.05 (complexity 5)
    assert row["quality_score"] == 0.9
    assert row["quality_score"] == pytest.approx(seed_quality_score(row), abs=1e-9)
    assert row["training_format"] == "correction"  # = the seed's label
    assert (row["human_reviewed"], row["training_ready"], row["export_count"]) == (0, 1, 0)
    DistillationExample.model_validate(row)


def test_correction_needs_sam_attempt_and_two_indicators() -> None:
    assert len(QUICKSORT) >= 100
    corrected = one(
        query="What's the time complexity of quicksort?",
        sam_attempt="Quicksort is O(n) because it only passes through the array once.",
        claude_response=QUICKSORT,
    )
    assert corrected["reasoning_type"] == "correction"
    assert corrected["indicator_hits"]["correction"] == 2
    assert corrected["corrections"] == {
        "sam_errors": [
            {
                "error_type": "factual",
                "what_sam_said": "Quicksort is O(n) because it only passes through the array once.",
                "what_was_wrong": "Actually, quicksort is O(n log n) on average.",
                "correct_answer": QUICKSORT,
            }
        ],
        "improvements": [],
    }
    assert corrected["quality_flags"] == ["no_reasoning", "too_short"]
    assert (corrected["domain"], corrected["subdomain"], corrected["task_type"]) == (
        "code",
        None,
        "explain",
    )
    assert corrected["complexity"] == 1
    assert corrected["quality_score"] == 0.65  # 0.5 + 0.15
    assert corrected["training_format"] == "correction"

    without_attempt = one(
        query="What's the time complexity of quicksort?", claude_response=QUICKSORT
    )
    assert without_attempt["reasoning_type"] == "direct"
    assert without_attempt["corrections"] is None
    assert without_attempt["quality_score"] == 0.4  # 0.5 - 0.1


def test_pre_labels_win_over_heuristics() -> None:
    row = one(
        query="q",
        sam_attempt="8",
        claude_response="The answer is 9.",
        reasoning_type="correction",
        complexity=7,
        domain="analysis",
    )
    assert row["prelabelled"] == ["domain", "complexity", "reasoning_type"]
    assert row["detected_reasoning_type"] == "direct"
    assert (row["reasoning_type"], row["domain"], row["complexity"]) == (
        "correction",
        "analysis",
        7,
    )
    assert row["quality_score"] == 0.5  # 0.5 + 0.15 (correction) + 0.05 (complexity) - 0.2 (short)


def test_score_is_clamped_at_zero() -> None:
    row = one(claude_response="Restart it now. " * 4 + "And")
    assert len(row["claude_response"]) < 100
    assert row["reasoning_type"] == "direct"
    # "Restart it now." is a request to the assistant, not an answer (answer-ness model)
    assert row["quality_flags"] == [
        "repetition",
        "incomplete",
        "no_reasoning",
        "too_short",
        "not_an_answer",
    ]
    assert row["answer_rejection"] == "user_request"
    assert row["quality_score"] == 0.0  # 0.5 - 0.2 - 0.1 - 0.3 - 0.2 = -0.3 → 0


def test_every_positive_factor_derivable_offline() -> None:
    response = (
        "Actually, the retry loop is the problem. The correct order is:\n"
        "1. Close the old connection.\n2. Wait for the backoff delay.\n3. Open a new connection."
    )
    row = one(sam_attempt="Just retry immediately.", claude_response=response, complexity=6)
    assert row["reasoning_type"] == "correction"
    assert len(row["reasoning_steps"]) == 3
    assert row["quality_score"] == 0.8  # 0.5 + 0.1 + 0.15 + 0.05 (principles need an LLM)


def test_multi_step_when_the_query_asks_several_things() -> None:
    response = (
        "1. Create a new key in the console.\n2. Deploy it to every service.\n"
        "3. Revoke the old key once traffic has moved.\n4. Watch the error rate for an hour."
    )
    query = "How do I rotate the keys? And how do I revoke the old ones?"
    row = one(query=query, claude_response=response)
    assert row["reasoning_type"] == "multi_step"
    assert row["indicator_hits"]["chain_of_thought"] == 1  # the numbered-list indicator
    assert row["complexity"] == 3  # 1 + (>= 3 and >= 4 steps)
    assert row["quality_flags"] == ["too_short"]
    assert row["quality_score"] == 0.6  # 0.5 + 0.1 (steps)
    single = one(query="How do I rotate the keys?", claude_response=response)
    assert single["reasoning_type"] == "chain_of_thought"  # >= 3 numbered steps


def test_meta_cognitive_and_uncertain() -> None:
    response = (
        "I'm not sure which version introduced this flag; it might be 3.2 or 3.3, so check the "
        "changelog before relying on it."
    )
    row = one(claude_response=response)
    assert row["reasoning_type"] == "meta_cognitive"
    assert row["quality_flags"] == ["no_reasoning", "too_short", "uncertain"]
    assert row["quality_score"] == 0.5


def test_refusal_code_only_and_tools() -> None:
    refusal, code, tools = build(
        {"claude_response": "I can't help with that request."},
        {"claude_response": "```python\nimport os\nprint(os.getcwd())\n```"},
        {"claude_response": "Run this:\n```bash\ngit status\npip install x\n```"},
    )
    assert refusal["quality_flags"] == ["no_reasoning", "too_short", "refusal"]
    assert refusal["quality_score"] == 0.2  # 0.5 - 0.2 - 0.1
    assert code["reasoning_type"] == "tool_use"
    assert code["quality_flags"] == ["no_reasoning", "too_short", "code_only"]
    assert code["quality_score"] == 0.5  # a code answer is not "too short" (no -0.2)
    assert [t["tool"] for t in code["tool_usage"]] == ["python"]
    assert [t["tool"] for t in tools["tool_usage"]] == ["bash", "git", "pip"]
    assert tools["indicator_hits"]["tool_use"] == 2  # ```bash\n and the CLI tool names


def test_a_short_code_answer_is_not_too_short_but_short_prose_is() -> None:
    rows = build(
        {"claude_response": "```bash\ngit reset --soft HEAD~1\n```"},  # tool_use
        {"claude_response": "```\nlsof -i :8000\n```"},  # no language: direct
        {"claude_response": "Use this:\n\n```python\nitems = [1, 2]\nitems.append(3)\n```"},
        {"claude_response": "```python\n\n  \n```"},  # an empty block is no code
        {"claude_response": "```python\nimport os\nprint(os.getcwd())"},  # never closed
        {"claude_response": "Run `git reset --soft HEAD~1` to undo it."},  # inline: prose
        {"claude_response": "I'm not sure, but I think it is the reloader."},  # short hedge
        {"claude_response": "1. Stop the server.\n2. Start it with `--debug`."},  # 2 steps
    )
    scores = [r["quality_score"] for r in rows]
    # 0.5 / 0.4 (0.5 - 0.1 direct) / 0.4: no -0.2 for a short code answer; 0.2 (0.5 - 0.2 short
    # - 0.1 direct): an empty block; 0.1: unclosed, so short and incomplete (0.5 - 0.2 - 0.2);
    # the short shapes without a code block keep the seed's -0.2 and sit at exactly 0.3 (tool
    # use named in prose, a hedge, two steps typed direct: 0.5 + 0.1 - 0.2 - 0.1), which the
    # exclusive minimum keeps out
    assert scores == [0.5, 0.4, 0.4, 0.2, 0.1, 0.3, 0.3, 0.3]
    assert [r["reasoning_type"] for r in rows] == [
        "tool_use",
        "direct",
        "direct",
        "direct",
        "tool_use",
        "tool_use",
        "meta_cognitive",
        "direct",
    ]


def test_too_long_and_length_complexity() -> None:
    row = one(claude_response="word " * 4001)
    assert row["token_count"] == 4001
    assert row["quality_flags"] == ["no_reasoning", "too_long"]
    assert row["complexity"] == 5  # 1 + min(4001 // 150, 4)
    assert row["quality_score"] == 0.45  # 0.5 - 0.1 (direct) + 0.05 (complexity)


def test_cli_tool_indicator_needs_a_word_boundary() -> None:
    text = "Pick a single digit number, then add it."
    verbatim = r"(?:curl|git|npm|pip|cargo)\s+"
    assert re.search(verbatim, text)  # the seed's pattern would call this tool use
    assert one(claude_response=text)["indicator_hits"]["tool_use"] == 0


def _corpus() -> list[str]:
    rng = random.Random("regex-dialect")
    texts = [scenario(rng)["claude_response"] for scenario in SCENARIOS for _ in range(3)]
    return [*texts, SEED_RESPONSE, QUICKSORT, "So it goes.\nThen 1. a\n2. b", "Since x, Thus y"]


@pytest.mark.parametrize(
    "pattern",
    [
        *rules.COT_INDICATORS,
        *rules.TOOL_INDICATORS,
        *rules.CORRECTION_INDICATORS,
        *rules.UNCERTAINTY_INDICATORS,
        *rules.REFLECTION_INDICATORS,
        *rules.REFUSAL_INDICATORS,
        rules.INCOMPLETE_ENDING,
        rules.SCORE_SHORT_EXEMPT_CODE,
    ],
)
def test_polars_regex_matches_like_python_re(pattern: str) -> None:
    texts = _corpus()
    python = [bool(re.search(pattern.replace(r"\z", r"\Z"), t)) for t in texts]
    polars = pl.Series(texts).str.contains(pattern).to_list()
    assert polars == python


def has_code_answer(text: str) -> bool:
    """Whether `text` holds a closed fenced block with a non-blank line of code (by splitting)."""
    blocks = text.split("```")[1:-1:2]  # the text between an opening and its closing fence
    return any(b.partition("\n")[1] and b.partition("\n")[2].strip() for b in blocks)


def seed_quality_score(example: dict[str, Any]) -> float:
    """The seed's calculate_quality_score, transcribed over a row dict.

    With distill's one departure (marked): a code answer is not too short.
    """
    score = 0.5
    if example["reasoning_steps"] and len(example["reasoning_steps"]) >= 2:
        score += 0.1
    if example["corrections"] and example["corrections"].get("sam_errors"):
        score += 0.15
    if example["principles"] and len(example["principles"]) >= 1:
        score += 0.1
    if example["complexity"] >= 5:
        score += 0.05
    if len(example["claude_response"]) < 100 and not has_code_answer(example["claude_response"]):
        score -= 0.2  # distill: `and not has_code_answer` (rules.SCORE_SHORT_EXEMPT_CODE)
    if example["reasoning_type"] == "direct":
        score -= 0.1
    if "repetition" in (example["quality_flags"] or []):
        score -= 0.3
    if "incomplete" in (example["quality_flags"] or []):
        score -= 0.2
    return max(0.0, min(1.0, score))


def test_score_equals_the_seed_algorithm_on_every_scenario() -> None:
    rng = random.Random("score")
    records = []
    for scenario in SCENARIOS:
        for _ in range(4):
            fields = scenario(rng)
            fields.pop("labels", None)
            records.append(fields)
    rows = build(*records)
    assert len({r["reasoning_type"] for r in rows}) == 6
    for row in rows:
        assert row["quality_score"] == pytest.approx(seed_quality_score(row), abs=1e-9)
        DistillationExample.model_validate(row)


def test_trimmed_unit_pattern_finds_the_stripped_units_of_the_minimum_length() -> None:
    texts = [
        "  exactly 12ch. x abc  def ghi jkl\tmno  ! aaaaaaaaaaa. bbbbbbbbbbbb\u2003cc\u00a0dd ?",
        "\u2003twelve chars\u2003\n" * 3,
        "",
        None,
        " \t \n. . ",
        "x" * 11 + "." + "y" * 12,
        "Über straße ÄÖÜ café. Über straße ÄÖÜ café.",
    ]
    frame = pl.DataFrame({"prose": texts})
    split = (
        pl.col("prose")
        .str.extract_all(rules.REPETITION_UNIT)
        .list.eval(pl.element().str.strip_chars())
        .list.eval(
            pl.element().filter(pl.element().str.len_chars() >= rules.REPETITION_MIN_UNIT_CHARS)
        )
    )
    one_pass = pl.col("prose").str.extract_all(examples.trimmed_unit_pattern())
    assert frame.select(split).equals(frame.select(one_pass))
    assert frame.select(one_pass).get_column("prose").to_list()[0] == [
        "exactly 12ch",
        "x abc  def ghi jkl\tmno",
        "bbbbbbbbbbbb\u2003cc\u00a0dd",
    ]


def test_has_tokens_agrees_with_counting_the_tokens() -> None:
    texts = [
        "one two three",
        " one\u2003two\nthree\t",
        "one two",
        "",
        "   ",
        None,
        "a-b.c,d",
        "x " * 10,
        "x " * 9 + "\u00a0",
    ]
    frame = pl.DataFrame({"text": texts})
    for count in (1, 3, 10):
        counted = pl.col("text").str.count_matches(rules.TOKEN_PATTERN) >= count
        searched = examples.has_tokens(pl.col("text"), count)
        assert frame.select(counted).equals(frame.select(searched)), count
    assert frame.select(examples.has_tokens(pl.col("text"), 3)).to_series().to_list() == [
        True,
        True,
        False,
        False,
        False,
        None,
        False,
        True,
        True,
    ]


def test_reasoning_steps_read_each_step_once() -> None:
    response = (
        "Intro.\n"
        "1. **Check the logs**: they show the crash\n"
        "2) Reproduce it locally\n"
        "Step 3: verify: the fix holds\n"
        "   4. Fixed **it** now\n"
        "5. 42 is the answer\n"
    )
    frame = pl.DataFrame({"claude_response": [response, "no steps", None]})
    steps = frame.select(offline_extraction.reasoning_steps()).to_series().to_list()
    assert steps[0] == [
        {
            "step_num": 1,
            "action": "check",
            "content": "Check the logs",
            "reasoning": "they show the crash",
        },
        {
            "step_num": 2,
            "action": "reproduce",
            "content": "Reproduce it locally",
            "reasoning": None,
        },
        {"step_num": 3, "action": "verify", "content": "verify", "reasoning": "the fix holds"},
        {
            "step_num": 4,
            "action": rules.STEP_DEFAULT_ACTION,
            "content": "Fixed it now",
            "reasoning": None,
        },
        {
            "step_num": 5,
            "action": rules.STEP_DEFAULT_ACTION,
            "content": "42 is the answer",
            "reasoning": None,
        },
    ]
    assert steps[1] == []
    assert steps[2] is None
